package dev.sandboxsdk.local;

import dev.sandboxsdk.EgressSecret;
import dev.sandboxsdk.ManagedSandbox;
import dev.sandboxsdk.ProviderCapabilities;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxInfo;
import dev.sandboxsdk.SandboxProvider;
import dev.sandboxsdk.SandboxSpec;
import dev.sandboxsdk.internal.Checks;
import dev.sandboxsdk.internal.LocalState;
import dev.sandboxsdk.spi.SandboxHandle;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Consumer;

/**
 * Local sandboxes as a {@link SandboxProvider}: each one an agent JVM on 127.0.0.1 as
 * {@link LocalSandbox} starts it, with its workspace in a state directory, so that it can be shut
 * down, woken and found again from any JVM of the same OS user.
 *
 * <pre>{@code
 * try (LocalProvider local = LocalProvider.builder().build()) {
 *   ManagedSandbox s = local.create(SandboxSpec.builder().name("review-42").build());
 *   s.files().write("notes.txt", "kept");
 *   s.shutdown();                       // the agent and its processes stop; the files stay
 *   s.wake();                           // a new agent on the same workspace
 *   local.list();                       // review-42 running, with createdAt and lastActivityAt
 *   s.destroy();                        // the workspace and its checkpoints are deleted
 * }
 * }</pre>
 *
 * <p><b>State.</b> A sandbox lives in {@code <state>/sandboxes/<name>/}: {@code workspace/} (the
 * commands' working directory), {@code checkpoints/} (outside the workspace) and
 * {@code sandbox.json}, its record (name, times, settings, and the agent's pid and start time
 * while one runs; mode 0600, the directories 0700). The state directory is
 * {@link Builder#stateDirectory(Path)}, by default {@code $XDG_STATE_HOME/sandbox-sdk} or
 * {@code ~/.local/state/sandbox-sdk}.
 *
 * <p><b>Lifecycle.</b> A sandbox's agent runs as long as the JVM that started (or woke) it, at
 * most: a named sandbox is {@code stopped}, with its files, after {@link ManagedSandbox#shutdown()},
 * after its idle timeout (the agent exits; {@link SandboxSpec.Builder#idleTimeout}), and when that
 * JVM exits. Any JVM {@link #list() lists} it, {@link #get(String) gets} it by name and wakes it.
 * A running sandbox serves only the JVM that woke it (the agent's token never leaves that JVM);
 * another JVM's handle says so, and its {@code shutdown()} stops the agent so that it can wake it
 * itself. An unnamed sandbox is removed when the handle that created it closes, or when its JVM
 * exits.
 *
 * <p>The local provider runs no image and enforces no memory, CPU or process limits: it ignores
 * those settings of the {@link SandboxSpec}. It applies the name, the network, the environment,
 * the labels, the idle timeout, the agent arguments, the start-up timeout, the repository to clone
 * and the egress policy (which each wake starts the agent with again: a policy changed with
 * {@link dev.sandboxsdk.SandboxEgress#update} lasts until the sandbox stops). Egress secrets are
 * the exception to the record: their values live only in this provider's memory (the record names
 * them), so a sandbox created with secrets wakes through this provider only; another provider, or
 * another JVM, refuses to wake it rather than start it without them.
 * Thread-safe.
 */
public final class LocalProvider implements SandboxProvider {
  static final String PROVIDER = "local";
  /** A stopped sandbox keeps its workspace, a directory of the state directory, and wakes again. */
  private static final ProviderCapabilities CAPABILITIES = ProviderCapabilities.builder().resumable(true)
      .hostWorkspace(true).build();

  private final LocalState state;
  private final Path stateDirectory;
  /** The settings of the provider's builder that every sandbox's agent gets, in the order they were given. */
  private final List<Consumer<LocalSandbox.Builder>> agentSettings;
  private final Duration grace;
  private final LocalBackend backend;
  /** The egress secrets of the sandboxes this provider created, by name: never written to disk. */
  private final Map<String, List<EgressSecret>> secrets = new ConcurrentHashMap<>();

  private LocalProvider(Builder b) {
    this.stateDirectory = (b.stateDirectory != null ? b.stateDirectory : LocalState.defaultDirectory())
        .toAbsolutePath().normalize();
    this.state = new LocalState(stateDirectory);
    this.agentSettings = List.copyOf(b.agentSettings);
    this.grace = b.checked.gracePeriodInForce();
    this.backend = new LocalBackend(this);
  }

  /** A builder with every setting at its default. */
  public static Builder builder() {
    return new Builder();
  }

  @Override
  public String name() {
    return PROVIDER;
  }

  @Override
  public ProviderCapabilities capabilities() {
    return CAPABILITIES;
  }

  /** The workspace of the sandbox {@code id}: {@link #workspace(String)}. */
  @Override
  public Optional<Path> hostWorkspace(String id) {
    return Optional.of(workspace(id));
  }

  /** The state directory. */
  public Path stateDirectory() {
    return stateDirectory;
  }

  /** The workspace directory of the sandbox {@code name} (whether or not it exists). */
  public Path workspace(String name) {
    return state.workspace(Checks.sandboxName(name));
  }

  LocalState state() {
    return state;
  }

  /**
   * Creates a sandbox, starts its agent, clones {@link SandboxSpec#gitRepository()} if given,
   * and returns once it answers. A named sandbox persists until {@code destroy()}; an unnamed one
   * gets a generated name ({@code local-} and 12 hex digits) and is removed when its handle closes.
   *
   * @throws SandboxException if a sandbox of that name exists, the agent does not start, or the
   *     clone fails (then nothing is left behind)
   */
  @Override
  public ManagedSandbox create(SandboxSpec spec) {
    Objects.requireNonNull(spec, "spec == null");
    removeOrphans();
    boolean named = spec.name() != null;
    String name = named ? spec.name() : "local-" + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextLong())
        .substring(4);
    state.createDirectories(name);
    LocalState.Entry record = new LocalState.Entry();
    Instant now = Instant.now();
    record.name = name;
    record.createdAt = now;
    record.lastActivityAt = now;
    if (!named) {
      record.removeOnClose = true;
      record.ownedByThisJvm();
    }
    record.network = spec.network();
    record.idleTimeoutMs = spec.idleTimeout() != null ? Math.max(1, spec.idleTimeout().toMillis()) : null;
    record.startupTimeoutMs = spec.startupTimeout().toMillis();
    record.env.putAll(spec.env());
    record.labels.putAll(spec.labels());
    record.agentArguments.addAll(spec.agentArguments());
    record.egressPolicy = spec.egressPolicy();
    spec.egressSecrets().forEach(secret -> record.egressSecrets.add(secret.name()));
    if (!spec.egressSecrets().isEmpty()) {
      secrets.put(name, spec.egressSecrets());
    }
    if (spec.gitRepository() != null) {
      record.gitRepository = spec.gitRepository().replaceFirst("^([A-Za-z][A-Za-z0-9+.-]*://)[^/@]*@", "$1***@");
    }
    LocalProviderSandbox sandbox = new LocalProviderSandbox(backend, name, null, !named);
    return SandboxHandle.prepare(sandbox, spec, () -> {
      state.write(name, record);
      sandbox.wake();
    });
  }

  /** The settings of the agent of sandbox {@code name}, from the provider and the sandbox's record. */
  LocalSandbox.Builder agentFor(String name, LocalState.Entry record) {
    LocalSandbox.Builder b = LocalSandbox.builder();
    agentSettings.forEach(setting -> setting.accept(b));
    b.workspace(state.workspace(name))
        .checkpointDirectory(state.checkpoints(name)) // kept across shutdown and wake
        .keepAlive(true) // the agent's own --idle-timeout-ms stops it, keeping the files
        .network(record.network)
        .egressPolicy(record.egressPolicy)
        .startupTimeout(Duration.ofMillis(Math.max(1, record.startupTimeoutMs)));
    b.env(record.env);
    egressSecrets(name, record).forEach(b::egressSecret);
    record.agentArguments.forEach(b::agentArgument);
    if (record.idleTimeoutMs != null) {
      b.agentArgument("--idle-timeout-ms=" + record.idleTimeoutMs);
    }
    return b;
  }

  /** The secrets the record names, from this provider's memory; refuses if it does not hold them. */
  private List<EgressSecret> egressSecrets(String name, LocalState.Entry record) {
    if (record.egressSecrets.isEmpty()) {
      return List.of();
    }
    List<EgressSecret> held = secrets.get(name);
    if (held == null) {
      throw new SandboxException("the local sandbox '" + name + "' was created with the egress secrets "
          + record.egressSecrets + ", whose values are never written to disk: only the LocalProvider that created it"
          + " (in the JVM that did) can wake it; destroy it and create it again to give it the secrets here", null);
    }
    return held;
  }

  /** The sandbox is gone: its secrets are no longer needed. */
  void forgetSecrets(String name) {
    secrets.remove(name);
  }

  /** How long an agent has to stop its processes before SIGKILL. */
  Duration gracePeriod() {
    return grace;
  }

  /**
   * The sandbox of this name (or generated id), running or stopped, from any JVM. The handle does
   * not start it: {@link ManagedSandbox#wake()} does. Closing the handle leaves the sandbox as it is.
   */
  @Override
  public Optional<ManagedSandbox> get(String id) {
    Objects.requireNonNull(id, "id == null");
    if (!Checks.isSandboxName(id)) {
      return Optional.empty();
    }
    return state.read(id).map(r -> new LocalProviderSandbox(backend, id, backend.view(id), false));
  }

  /** Every sandbox in the state directory, running or stopped, oldest first. */
  @Override
  public List<SandboxInfo> list() {
    removeOrphans();
    List<SandboxInfo> out = new ArrayList<>();
    for (String name : state.names()) {
      state.read(name).ifPresent(r -> out.add(backend.info(name, r)));
    }
    out.sort(Comparator.comparing(SandboxInfo::createdAt));
    return out;
  }

  /** Removes unnamed sandboxes whose JVM died without removing them (killed, crashed). */
  private void removeOrphans() {
    for (String name : state.names()) {
      try {
        state.read(name).filter(r -> r.removeOnClose && !r.ownerAlive())
            .ifPresent(r -> backend.remove(name));
      } catch (SandboxException e) {
        // destroyed meanwhile, or unreadable: leave it to the next look
      }
    }
  }

  /** Nothing to release: sandboxes stay as their own rules say (see the class comment). */
  @Override
  public void close() {
    // The provider holds no connection; handles and agents are independent of it.
  }

  @Override
  public String toString() {
    return "LocalProvider{" + stateDirectory + "}";
  }

  /**
   * Configures a {@link LocalProvider}: its state directory, and the settings its agents share,
   * which mean what they mean on {@link LocalSandbox.Builder}. Not thread-safe.
   */
  public static final class Builder {
    private Path stateDirectory;
    private final List<Consumer<LocalSandbox.Builder>> agentSettings = new ArrayList<>();
    /** Every agent setting applied as it is given: checks it at once, and holds the grace period in force. */
    private final LocalSandbox.Builder checked = LocalSandbox.builder();

    private Builder() {}

    private Builder agent(Consumer<LocalSandbox.Builder> setting) {
      setting.accept(checked);
      agentSettings.add(setting);
      return this;
    }

    /**
     * Where the sandboxes live (default {@code $XDG_STATE_HOME/sandbox-sdk}, else
     * {@code ~/.local/state/sandbox-sdk}); created when the first sandbox is.
     */
    public Builder stateDirectory(Path directory) {
      this.stateDirectory = Objects.requireNonNull(directory, "directory == null");
      return this;
    }

    /** How commands are isolated; see {@link LocalSandbox.Builder#isolation(Isolation)}. */
    public Builder isolation(Isolation isolation) {
      return agent(b -> b.isolation(isolation));
    }

    /** See {@link LocalSandbox.Builder#agentJar(Path)}. */
    public Builder agentJar(Path agentJar) {
      return agent(b -> b.agentJar(agentJar));
    }

    /** See {@link LocalSandbox.Builder#javaExecutable(Path)}. */
    public Builder javaExecutable(Path java) {
      return agent(b -> b.javaExecutable(java));
    }

    /** See {@link LocalSandbox.Builder#jvmArgument(String)}. */
    public Builder jvmArgument(String argument) {
      return agent(b -> b.jvmArgument(argument));
    }

    /** See {@link LocalSandbox.Builder#gracePeriod(Duration)}. */
    public Builder gracePeriod(Duration grace) {
      return agent(b -> b.gracePeriod(grace));
    }

    /** See {@link LocalSandbox.Builder#inheritEnv(String...)}. */
    public Builder inheritEnv(String... names) {
      List<String> copy = List.of(names);
      return agent(b -> b.inheritEnv(copy));
    }

    /** The provider; creates nothing on disk until a sandbox is created. */
    public LocalProvider build() {
      return new LocalProvider(this);
    }
  }
}
