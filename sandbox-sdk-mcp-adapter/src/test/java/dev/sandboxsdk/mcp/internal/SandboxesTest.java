package dev.sandboxsdk.mcp.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandboxsdk.ForwardingSandbox;
import dev.sandboxsdk.ManagedSandbox;
import dev.sandboxsdk.ProviderCapabilities;
import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.SandboxConnectionException;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxInfo;
import dev.sandboxsdk.SandboxProvider;
import dev.sandboxsdk.SandboxSpec;
import dev.sandboxsdk.SandboxState;
import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The sandbox registry on a provider, with a fake provider: what it asks the provider to create,
 * when it asks whether sandboxes still run, and that it removes what it created. The real
 * container provider is driven end to end by {@code ContainerProviderIT}.
 */
class SandboxesTest {
  private final FakeProvider provider = new FakeProvider();

  private static AdapterConfig containers(String... more) {
    List<String> args = new ArrayList<>(List.of("--provider", "container", "--image", "my-agent", "--memory", "256m",
        "--cpus", "0.5", "--pids-limit", "128", "--pass-env", "API_KEY"));
    args.addAll(List.of(more));
    return AdapterConfig.parse(args.toArray(new String[0]), Map.of("API_KEY", "sk-very-secret"));
  }

  @Test
  void aSandboxIsCreatedFromTheConfiguredSpecWithTheSecretsAndItsOwnIdleTimeout() {
    try (Sandboxes sandboxes = new Sandboxes(containers(), provider)) {
      Sandboxes.Got got = sandboxes.getOrCreate("web", null, 30);

      assertThat(got.created()).isTrue();
      SandboxSpec spec = provider.specs.get(0);
      assertThat(spec.image()).isEqualTo("my-agent");
      assertThat(spec.memoryBytes()).isEqualTo(256L << 20);
      assertThat(spec.cpus()).isEqualTo(0.5);
      assertThat(spec.pidsLimit()).isEqualTo(128);
      assertThat(spec.network()).isFalse();
      assertThat(spec.env()).containsExactly(Map.entry("API_KEY", "sk-very-secret"));
      assertThat(spec.idleTimeout()).isEqualTo(Duration.ofSeconds(30));
      assertThat(spec.labels()).containsEntry(Sandboxes.ID_LABEL, "web")
          .containsEntry(Sandboxes.SERVER_LABEL, Long.toString(ProcessHandle.current().pid()));
      Sandboxes.Entry e = got.entry();
      assertThat(e.mode()).isEqualTo(SandboxMode.CONTAINER);
      assertThat(e.providerId()).isEqualTo("c1");
      assertThat(e.workspace()).isEqualTo("/workspace");
      assertThat(e.keepAlive()).isFalse();
      assertThat(e.idleTimeout()).isEqualTo(Duration.ofSeconds(30));

      sandboxes.getOrCreate("kept", true, null);
      assertThat(provider.specs.get(1).idleTimeout()).as("keepAlive: no idle timeout").isNull();
      sandboxes.getOrCreate("plain", null, null);
      assertThat(provider.specs.get(2).idleTimeout()).isEqualTo(Sandboxes.DEFAULT_IDLE);
    }
  }

  @Test
  void aProviderFailureIsAnErrorResultAndLeavesNoEntry() {
    provider.failCreate = new SandboxException("image 'my-agent' not found on the container engine", null);
    try (Sandboxes sandboxes = new Sandboxes(containers(), provider)) {
      assertThatThrownBy(() -> sandboxes.getOrCreate("x", null, null))
          .isInstanceOf(ToolException.class)
          .hasMessage("Could not start sandbox 'x': image 'my-agent' not found on the container engine");
      assertThat(sandboxes.list()).isEmpty();
    }
  }

  @Test
  void aSandboxTheProviderNoLongerRunsIsForgottenAndRemoved() {
    try (Sandboxes sandboxes = new Sandboxes(containers(), provider)) {
      sandboxes.getOrCreate("a", null, null);
      sandboxes.getOrCreate("b", null, null);
      assertThat(sandboxes.list()).hasSize(2);

      provider.state.put("c1", SandboxState.EXITED); // its agent stopped after the idle timeout
      List<Sandboxes.Entry> left = sandboxes.list();

      assertThat(left).extracting(Sandboxes.Entry::id).containsExactly("b");
      assertThat(provider.sandboxes.get(0).destroyed).as("the stopped container is removed").isTrue();
      assertThat(provider.sandboxes.get(1).destroyed).isFalse();
      assertThat(sandboxes.getOrCreate("a", null, null).created()).as("and can be created again").isTrue();
    }
  }

  @Test
  void callsAskTheProviderOnlyAboutSandboxesNotSeenLatelyOrThatFailed() {
    try (Sandboxes sandboxes = new Sandboxes(containers(), provider)) {
      sandboxes.getOrCreate("a", null, null);
      int listed = provider.lists.get();
      sandboxes.begin("a");
      sandboxes.end("a");
      assertThat(provider.lists.get()).as("just created: no engine call per tool call").isEqualTo(listed);

      sandboxes.failed("a", new SandboxConnectionException("connection refused", null));
      provider.state.put("c1", SandboxState.EXITED);
      sandboxes.begin(null);
      sandboxes.end(null);

      assertThat(provider.lists.get()).isEqualTo(listed + 1);
      assertThat(sandboxes.list()).isEmpty();
      assertThat(provider.sandboxes.get(0).destroyed).isTrue();
    }
  }

  @Test
  void anUnreachableProviderKeepsTheSandboxes() {
    try (Sandboxes sandboxes = new Sandboxes(containers(), provider)) {
      sandboxes.getOrCreate("a", null, null);
      provider.failList = new SandboxConnectionException("no container engine reachable", null);
      sandboxes.failed("a", new SandboxConnectionException("connection refused", null));
      sandboxes.begin("a"); // must not throw: the call itself reports what is wrong
      sandboxes.end("a");
      assertThat(sandboxes.list()).hasSize(1);
      provider.failList = null;
    }
  }

  @Test
  void closingRemovesEverySandboxThenReleasesTheProvider() {
    Sandboxes sandboxes = new Sandboxes(containers(), provider);
    sandboxes.getOrCreate("a", true, null);
    sandboxes.getOrCreate("b", null, null);

    sandboxes.close();

    assertThat(provider.sandboxes).allMatch(s -> s.destroyed);
    assertThat(provider.closed).isTrue();
    assertThatThrownBy(() -> sandboxes.getOrCreate("c", null, null)).hasMessage("the server is shutting down");
  }

  @Test
  void aPersistentSandboxIsNamedStopsInsteadOfGoingAwayAndIsShutDownWhenTheServerCloses() {
    Sandboxes sandboxes = new Sandboxes(containers(), provider);
    Sandboxes.Entry e = sandboxes.getOrCreate("proj", new Sandboxes.Settings(null, 60, true)).entry();
    sandboxes.getOrCreate("plain", null, null);

    SandboxSpec spec = provider.specs.get(0);
    assertThat(spec.name()).isEqualTo("proj");
    assertThat(spec.labels()).containsEntry(Sandboxes.ID_LABEL, "proj").containsEntry(Sandboxes.PERSISTENT_LABEL, "true");
    assertThat(spec.idleTimeout()).isEqualTo(Duration.ofSeconds(60));
    assertThat(e.persistent()).isTrue();
    assertThat(provider.specs.get(1).name()).isNull();

    provider.state.put("c1", SandboxState.STOPPED); // idle: its agent stopped, the container stays
    sandboxes.failed("proj", new SandboxException("stopped", null));
    assertThat(sandboxes.list()).extracting(Sandboxes.Entry::id).as("not forgotten").contains("proj");
    assertThat(provider.sandboxes.get(0).destroyed).isFalse();
    assertThatThrownBy(() -> sandboxes.require("proj")).isInstanceOf(ToolException.class)
        .hasMessageStartingWith("sandbox 'proj' is stopped: call wakeSandbox {\"sandboxId\":\"proj\"}");
    assertThat(sandboxes.listAll()).extracting(l -> l.id() + " " + (l.info() == null ? "-" : l.info().state().wireName()))
        .containsExactly("proj stopped", "plain -");

    sandboxes.close();
    assertThat(provider.sandboxes.get(0).destroyed).as("a persistent sandbox is kept").isFalse();
    assertThat(provider.state).containsEntry("c1", SandboxState.STOPPED);
    assertThat(provider.sandboxes.get(1).destroyed).isTrue();
  }

  @Test
  void aPersistentSandboxAnEarlierServerLeftIsListedAndTakenUpByItsId() {
    FakeProvider shared = provider;
    try (Sandboxes first = new Sandboxes(containers(), shared)) {
      first.getOrCreate("proj", new Sandboxes.Settings(true, null, true));
    }
    shared.closed = false;
    try (Sandboxes second = new Sandboxes(containers(), shared)) {
      List<Sandboxes.Listed> all = second.listAll();
      assertThat(all).hasSize(1);
      assertThat(all.get(0).id()).isEqualTo("proj");
      assertThat(all.get(0).entry()).as("listed, not yet used").isNull();
      assertThat(all.get(0).info().isStopped()).isTrue();

      Sandboxes.Entry e = second.find("proj");
      assertThat(e.persistent()).isTrue();
      assertThat(e.keepAlive()).as("not known to this server").isNull();
      assertThat(e.providerId()).isEqualTo("c1");
      e.managed().wake();
      second.stateChanged(e, true);
      assertThat(second.require("proj")).isSameAs(e);
      Sandboxes.Got again = second.getOrCreate("proj", new Sandboxes.Settings(null, null, true));
      assertThat(again.created()).isFalse();
      assertThat(shared.specs).hasSize(1);
    }
  }

  @Test
  void onKubernetesSecretsStayOutOfThePodSpecAndAPersistentPodIsLeftRunningWhenTheServerCloses() {
    AdapterConfig pods = AdapterConfig.parse(new String[] {"--provider", "kubernetes", "--image", "my-agent",
        "--memory", "256m", "--pass-env", "API_KEY"}, Map.of("API_KEY", "sk-very-secret"));
    provider.capabilities = FakeProvider.PODS;
    Sandboxes sandboxes = new Sandboxes(pods, provider);
    Sandboxes.Entry web = sandboxes.getOrCreate("web", null, 30).entry();
    Sandboxes.Entry proj = sandboxes.getOrCreate("proj", new Sandboxes.Settings(null, null, true)).entry();

    SandboxSpec spec = provider.specs.get(0);
    assertThat(spec.image()).isEqualTo("my-agent");
    assertThat(spec.memoryBytes()).isEqualTo(256L << 20);
    assertThat(spec.env()).as("a Pod's environment is readable by everyone who may read pods").isEmpty();
    assertThat(spec.labels()).containsEntry(Sandboxes.ID_LABEL, "web");
    assertThat(web.mode()).isEqualTo(SandboxMode.KUBERNETES);
    assertThat(web.providerId()).isEqualTo("c1");
    assertThat(web.workspace()).isEqualTo("/workspace");
    assertThat(provider.specs.get(1).name()).isEqualTo("proj");
    assertThat(provider.specs.get(1).env()).isEmpty();
    assertThat(proj.persistent()).isTrue();
    assertThat(proj.providerId()).isEqualTo("c2");

    provider.state.put("c2", SandboxState.EXITED); // its idle timeout ended the agent: a pod does not start again
    sandboxes.failed("proj", new SandboxException("gone", null));
    assertThatThrownBy(() -> sandboxes.require("proj")).isInstanceOf(ToolException.class)
        .hasMessageStartingWith("sandbox 'proj' has ended (its idle timeout, or its pod was stopped) and cannot be"
            + " woken")
        .hasMessageContaining("destroy {\"sandboxId\":\"proj\"}");
    provider.state.put("c2", SandboxState.RUNNING);

    sandboxes.close();
    assertThat(provider.sandboxes.get(0).destroyed).as("an unnamed pod is deleted").isTrue();
    assertThat(provider.sandboxes.get(1).destroyed).as("a persistent pod stays for the next server").isFalse();
    assertThat(provider.state).as("and is not shut down, which a pod cannot").containsEntry("c2", SandboxState.RUNNING);
    assertThat(provider.sandboxes.get(1).closed).as("its handle is released").isTrue();
    assertThat(provider.closed).isTrue();
  }

  @Test
  void theDefaultSandboxCannotBePersistent() {
    try (Sandboxes sandboxes = new Sandboxes(containers(), provider)) {
      assertThatThrownBy(() -> sandboxes.getOrCreate(Sandboxes.DEFAULT_ID, new Sandboxes.Settings(null, null, true)))
          .isInstanceOf(ToolException.class).hasMessageStartingWith("The default sandbox cannot be persistent")
          .hasMessageContaining("\"sandboxId\": \"proj\"");
      assertThat(provider.specs).isEmpty();
    }
  }

  @Test
  void aProviderIsNeededExactlyForContainers() {
    assertThatThrownBy(() -> new Sandboxes(AdapterConfig.defaults(), provider))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new Sandboxes(containers(), null)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new Sandboxes(AdapterConfig.parse(new String[] {"--provider", "kubernetes"}, Map.of()),
        null)).isInstanceOf(IllegalArgumentException.class);
  }

  /** Creates {@link FakeSandbox}es, lists them with the state the test sets, and records what it was asked. */
  private static final class FakeProvider implements SandboxProvider {
    final List<SandboxSpec> specs = new CopyOnWriteArrayList<>();
    final List<FakeSandbox> sandboxes = new CopyOnWriteArrayList<>();
    final Map<String, SandboxState> state = new java.util.concurrent.ConcurrentHashMap<>();
    final Map<String, Map<String, String>> labels = new java.util.concurrent.ConcurrentHashMap<>();
    final AtomicInteger lists = new AtomicInteger();
    volatile RuntimeException failCreate;
    volatile RuntimeException failList;
    volatile boolean closed;
    /** What the container provider can do; {@link #PODS} for the Kubernetes provider's. */
    volatile ProviderCapabilities capabilities = ProviderCapabilities.builder().resumable(true).fromImage(true)
        .workspace("/workspace").isolation("container").build();
    static final ProviderCapabilities PODS = ProviderCapabilities.builder().resumable(false).fromImage(true)
        .workspace("/workspace").isolation("pod").build();

    @Override
    public String name() {
      return "container";
    }

    @Override
    public ProviderCapabilities capabilities() {
      return capabilities;
    }

    @Override
    public ManagedSandbox create(SandboxSpec spec) {
      if (failCreate != null) {
        throw failCreate;
      }
      specs.add(spec);
      FakeSandbox s = new FakeSandbox("c" + (sandboxes.size() + 1), this);
      sandboxes.add(s);
      state.put(s.id(), SandboxState.RUNNING);
      labels.put(s.id(), spec.labels());
      return s;
    }

    @Override
    public Optional<ManagedSandbox> get(String id) { // running or stopped, as the SDK's providers do
      return sandboxes.stream().filter(s -> s.id().equals(id) && state.containsKey(id))
          .map(s -> (ManagedSandbox) s).findFirst();
    }

    @Override
    public List<SandboxInfo> list() {
      lists.incrementAndGet();
      if (failList != null) {
        throw failList;
      }
      List<SandboxInfo> out = new ArrayList<>();
      state.forEach((id, st) -> out.add(new SandboxInfo(id, name(), "sandbox-" + id, "my-agent", st, Instant.EPOCH,
          URI.create("http://127.0.0.1:1"), labels.getOrDefault(id, Map.of()), Instant.EPOCH.plusSeconds(60))));
      return out;
    }

    @Override
    public void close() {
      closed = true;
    }
  }

  /** A managed sandbox that only records destroy; no call reaches an agent in these tests. */
  private static final class FakeSandbox extends ForwardingSandbox implements ManagedSandbox {
    private final String id;
    private final FakeProvider provider;
    volatile boolean destroyed;
    final AtomicBoolean closed = new AtomicBoolean();

    FakeSandbox(String id, FakeProvider provider) {
      this.id = id;
      this.provider = provider;
    }

    @Override
    protected Sandbox delegate() {
      throw new UnsupportedOperationException("no agent in this test");
    }

    @Override
    public String id() {
      return id;
    }

    @Override
    public SandboxInfo info() {
      return provider.list().stream().filter(i -> i.id().equals(id)).findFirst().orElseThrow();
    }

    @Override
    public void destroy() {
      destroyed = true;
      provider.state.remove(id);
    }

    @Override
    public void shutdown() {
      provider.state.put(id, SandboxState.STOPPED);
    }

    @Override
    public void wake() {
      provider.state.put(id, SandboxState.RUNNING);
    }

    @Override
    public void close() {
      closed.set(true);
    }
  }
}
