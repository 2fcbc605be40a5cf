package dev.sandboxsdk;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.sun.net.httpserver.HttpServer;
import dev.sandboxsdk.local.Isolation;
import dev.sandboxsdk.local.LocalProvider;
import dev.sandboxsdk.local.LocalSandbox;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A real {@link LocalSandbox} with an egress policy: curl through the proxy reaches an allowed
 * upstream and gets 403 for a denied one, {@code update} flips the two, and {@code events} shows
 * each attempt. Isolated where bubblewrap works (then a direct connection has no route), else
 * without isolation. The upstream is a loopback server reached by test names
 * ({@code --egress-test-hosts}), let through by {@code allow 127.0.0.1/32}, as in the agent's
 * EgressWiringIT.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class LocalEgressIT {
  private static final EgressPolicy POLICY = EgressPolicy.of(EgressPolicy.Mode.ALLOW_LIST,
      List.of("deny denied.test", "allow allowed.test", "allow 127.0.0.1/32"));
  private static HttpServer upstream;
  private static int port;

  @BeforeAll
  static void startUpstream() throws Exception {
    upstream = dev.sandboxsdk.testkit.HelloUpstream.start(50);
    port = upstream.getAddress().getPort();
  }

  @AfterAll
  static void stopUpstream() {
    upstream.stop(0);
  }

  private static String curl(Sandbox sandbox, String host) {
    return sandbox.exec("curl -s -m 10 -w ' %{http_code}' http://" + host + ":" + port + "/").stdout();
  }

  @Test
  void thePolicyDecidesUpdateFlipsItAndEventsShowEveryAttempt() {
    assumeTrue(hasCurl(), "curl is not installed");
    try (LocalSandbox sandbox = LocalSandbox.builder().egressPolicy(POLICY)
        .agentArgument("--egress-test-hosts").agentArgument("allowed.test=127.0.0.1,denied.test=127.0.0.1").start()) {
      assertThat(sandbox.egress().policy()).isEqualTo(POLICY);
      assertThat(curl(sandbox, "allowed.test")).isEqualTo("hello from upstream 200");
      assertThat(curl(sandbox, "denied.test")).contains("deny denied.test").endsWith(" 403");
      long before = sandbox.egress().events(0, 1000).lastSequence();

      EgressPolicy flipped = POLICY.withRules(List.of("deny allowed.test", "allow denied.test", "allow 127.0.0.1/32"));
      assertThat(sandbox.egress().update(flipped)).isEqualTo(flipped);
      assertThat(curl(sandbox, "allowed.test")).endsWith(" 403");
      assertThat(curl(sandbox, "denied.test")).isEqualTo("hello from upstream 200");

      EgressEventPage all = sandbox.egress().events(0, 1000);
      assertThat(all.events()).extracting(e -> e.host() + " " + e.allowed() + " " + e.rule()).containsSubsequence(
          "allowed.test true allow 127.0.0.1/32", "denied.test false deny denied.test",
          "allowed.test false deny allowed.test", "denied.test true allow 127.0.0.1/32");
      EgressEventPage after = sandbox.egress().events(before, 1);
      assertThat(after.events()).singleElement().satisfies(e -> {
        assertThat(e.sequence()).isEqualTo(before + 1);
        assertThat(e.allowed()).isFalse();
        assertThat(e.outcome()).isEqualTo("refused");
      });
      assertThat(after.more()).isTrue();
      assertThat(after.lastSequence()).isEqualTo(before + 1);

      if (sandbox.isolation() == Isolation.ISOLATED) {
        ExecResult direct = sandbox.exec("curl -s -m 5 --noproxy '*' http://127.0.0.1:" + port + "/");
        assertThat(direct.exitCode()).as("isolated: no route but the proxy; %s", direct).isNotZero();
      }
    }
  }

  @Test
  void watchFollowsTheAuditAsCommandsConnectAndEndsWhenTheSandboxCloses() {
    assumeTrue(hasCurl(), "curl is not installed");
    RecordingSubscriber<EgressEvent> watcher = new RecordingSubscriber<>();
    LocalSandbox sandbox = LocalSandbox.builder().egressPolicy(POLICY)
        .agentArgument("--egress-test-hosts").agentArgument("allowed.test=127.0.0.1,denied.test=127.0.0.1").start();
    try {
      assertThat(curl(sandbox, "allowed.test")).isEqualTo("hello from upstream 200");
      sandbox.egress().watch(0).subscribe(watcher);
      watcher.request(2);
      EgressEvent first = watcher.takeNext();
      assertThat(first.host()).as("what was recorded before the watch").isEqualTo("allowed.test");

      assertThat(curl(sandbox, "denied.test")).endsWith(" 403");
      EgressEvent refused = watcher.takeNext();
      assertThat(refused.host() + " " + refused.allowed() + " " + refused.rule()).isEqualTo("denied.test false deny denied.test");
      assertThat(refused.sequence()).isEqualTo(first.sequence() + 1);

      assertThat(curl(sandbox, "allowed.test")).endsWith(" 200");
      watcher.expectNoSignal(java.time.Duration.ofMillis(1500)); // recorded, but not requested
      watcher.request(1);
      assertThat(watcher.takeNext().sequence()).isEqualTo(first.sequence() + 2);
      watcher.request(1);
    } finally {
      sandbox.close();
    }
    assertThat(watcher.takeError(SandboxConnectionException.class)).hasMessageContaining("closed");
    watcher.assertExhausted();
  }

  @Test
  void aSandboxWithoutAPolicyHasNoEgress() {
    try (LocalSandbox sandbox = LocalSandbox.builder().isolation(Isolation.NONE).start()) {
      assertThatThrownBy(() -> sandbox.egress().policy()).isInstanceOf(EgressNotEnabledException.class)
          .hasMessageContaining("egress is not enabled for this sandbox");
      assertThat(sandbox.exec("env").stdout()).doesNotContainIgnoringCase("proxy");
    }
  }

  @Test
  void theLocalProviderKeepsThePolicyInItsRecordAndStartsEachAgentWithIt() throws Exception {
    List<Path> policyFilesBefore = policyFiles(); // other builds on this machine may have theirs
    Path state = Files.createTempDirectory("egress-state-");
    try (LocalProvider provider = LocalProvider.builder().stateDirectory(state).isolation(Isolation.NONE).build();
        ManagedSandbox s = provider.create(SandboxSpec.builder().name("egress-1").egressPolicy(POLICY).build())) {
      assertThat(s.egress().policy()).isEqualTo(POLICY);
      assertThat(s.exec("echo $HTTP_PROXY").stdout()).startsWith("http://127.0.0.1:");
      s.egress().update(EgressPolicy.off());
      s.shutdown();
      s.wake();
      assertThat(s.egress().policy()).as("a new agent starts with the created policy").isEqualTo(POLICY);
      assertThat(Files.readString(state.resolve("sandboxes/egress-1/sandbox.json"))).contains("\"egressPolicy\"");
      s.destroy();
    }
    assertThat(policyFiles()).as("the policy files are deleted once the agents are up")
        .isSubsetOf(policyFilesBefore);
  }

  private static List<Path> policyFiles() throws java.io.IOException {
    try (Stream<Path> files = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
      // The policy files the SDK writes (sandbox-egress-*.json), not an agent's CA directory
      // (sandbox-egress-ca-*), which any agent with secrets on this machine may hold meanwhile.
      return files.filter(p -> p.getFileName().toString().startsWith("sandbox-egress-")
          && p.getFileName().toString().endsWith(".json") && Files.isRegularFile(p)).toList();
    }
  }

  private static boolean hasCurl() {
    return Stream.of(System.getenv("PATH").split(":")).anyMatch(d -> Files.isExecutable(Path.of(d, "curl")));
  }
}
