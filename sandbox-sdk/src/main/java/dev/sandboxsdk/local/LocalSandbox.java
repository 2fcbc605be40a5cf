package dev.sandboxsdk.local;

import dev.sandboxsdk.EgressPolicy;
import dev.sandboxsdk.EgressSecret;
import dev.sandboxsdk.ForwardingSandbox;
import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxSpec;
import dev.sandboxsdk.internal.Activity;
import dev.sandboxsdk.internal.AgentLauncher;
import dev.sandboxsdk.internal.Checks;
import dev.sandboxsdk.internal.AgentEgressFiles;
import dev.sandboxsdk.internal.RealSandbox;
import dev.sandboxsdk.internal.Workspaces;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The embedded default sandbox: the container agent started as a child JVM on 127.0.0.1, with a
 * random port and token and its own workspace directory. Needs no Docker, only a JDK/JRE 17+ and
 * the agent jar (found automatically when the {@code dev.sandboxsdk:container-agent} artifact is
 * on the classpath or its jar lies next to the SDK's; otherwise {@link Builder#agentJar}).
 *
 * <pre>{@code
 * try (LocalSandbox sandbox = LocalSandbox.start()) {
 *   System.out.print(sandbox.exec("uname -a").stdout());
 * }
 * }</pre>
 *
 * <p><b>Isolation.</b> Commands run as the same OS user as your JVM, in their own process
 * groups, with the workspace as their working directory. Where bubblewrap ({@code bwrap}) is
 * installed and can create namespaces, each command also runs in its own bubblewrap sandbox
 * (see {@link Isolation}): system directories read-only, only the workspace and the sandbox's
 * own {@code /tmp} writable, the rest of the host's files invisible, its own PID namespace and
 * {@code /proc}, and only the sandbox's loopback unless {@link Builder#network(boolean)}. Elsewhere the sandbox runs
 * without it and logs one warning ({@link Builder#isolation(Isolation)} makes it required or
 * turns it off); {@link #isolation()} tells which is in force. Either way this is isolation for
 * development and tests, not a hardened security boundary (same OS user, same kernel): use the
 * container image for untrusted code. Commands do not inherit this JVM's environment: they get {@code PATH}, {@code HOME},
 * {@code LANG}, {@code TERM}, {@code TMPDIR} (and {@code LC_ALL}, {@code LC_CTYPE} if set),
 * {@code SANDBOX_WORKSPACE}, {@code SANDBOX_AGENT_RUN}, the variables named with
 * {@link Builder#inheritEnv(String...)} and what each call passes; the agent's JVM itself is
 * started with only those.
 *
 * <p><b>Lifecycle.</b> {@link #close()} stops the agent and every process it started (SIGTERM,
 * then SIGKILL after the grace period) and deletes the workspace if the SDK created it; it also
 * runs when the JVM exits normally. If the JVM is killed, the agent notices its closed standard
 * input and stops by itself; the temporary workspace it leaves is deleted by the next
 * {@link #start()} (in any JVM of the same OS user) or by {@link #cleanupStaleWorkspaces()}.
 * {@link #destroy()} does the same and always deletes the workspace.
 * Unless {@link Builder#keepAlive(boolean) kept alive}, a sandbox that has had no call or open
 * stream for its {@link Builder#idleTimeout idle timeout} (default 10 minutes) is destroyed; later
 * calls then throw {@link IllegalStateException} saying so. Running background processes do not
 * count as activity.
 *
 * <p>Thread-safe, like every {@link Sandbox}.
 */
public final class LocalSandbox extends ForwardingSandbox {
  private static final Logger log = LoggerFactory.getLogger(LocalSandbox.class);

  /** Whether the fallback from {@link Isolation#ISOLATED} to none was logged yet (once per JVM). */
  private static final AtomicBoolean FALLBACK_LOGGED = new AtomicBoolean();

  private final AgentLauncher.Agent agent;
  private final Isolation isolation;
  private final RealSandbox client;
  private final Path workspace;
  private final boolean ownsWorkspace;
  private final Duration stopWait;
  private final Thread shutdownHook;
  private final java.util.concurrent.ScheduledFuture<?> idleCheck;
  private final Object lifecycle = new Object();
  private final Activity activity;
  private boolean stopped;

  private LocalSandbox(Builder b) {
    Checks.egressSecretsUsable(b.egressSecrets, b.egressPolicy != null, b.env.keySet());
    Path ws = b.workspace;
    boolean owns = ws == null;
    try {
      if (ws == null) {
        ws = Workspaces.createOwned();
      } else {
        Files.createDirectories(ws);
      }
    } catch (IOException e) {
      throw new SandboxException("cannot create the workspace " + (ws != null ? ws : "in the temp directory") + ": "
          + e.getMessage(), e);
    }
    this.workspace = ws.toAbsolutePath();
    this.ownsWorkspace = owns;
    List<String> agentArgs = agentArguments(b);
    this.stopWait = b.gracePeriodInForce().plusSeconds(5);
    try (AgentEgressFiles egress = AgentEgressFiles.write(b.egressPolicy, b.egressSecrets)) { // deleted once up
      agentArgs.addAll(0, egress.arguments()); // first: an --egress-policy among the caller's arguments wins
      this.agent = AgentLauncher.start(b.javaExecutable, b.agentJar, workspace, b.jvmArguments, agentArgs, b.env,
          b.startupTimeout);
    } catch (RuntimeException e) {
      if (owns) {
        Workspaces.deleteOwned(workspace);
      }
      if (b.isolation == Isolation.REQUIRED && e.getMessage() != null && e.getMessage().contains("--isolation bwrap:")) {
        throw new SandboxException("the local sandbox cannot run commands isolated, which Isolation.REQUIRED demands"
            + " (install bubblewrap, e.g. apt-get install bubblewrap, where unprivileged user namespaces are allowed;"
            + " or use Isolation.ISOLATED to fall back to none): " + e.getMessage(), e);
      }
      throw e;
    }
    this.isolation = agent.isolation().equals("bwrap") ? Isolation.ISOLATED : Isolation.NONE;
    if (b.isolation == Isolation.ISOLATED && isolation == Isolation.NONE) {
      warnNotIsolated();
    }
    if (owns) {
      Workspaces.recordAgent(workspace, agent.handle());
    }
    Workspaces.cleanupStaleInBackground();
    Activity activity = new Activity();
    this.activity = activity;
    this.client = new RealSandbox(agent.url(), agent.token(), Duration.ofSeconds(5), Duration.ofSeconds(30),
        b.execTimeout, b.streamIdleTimeout, null, activity);
    try {
      // Learn the liveness window now (one GET /api/version), so that exec and execAsync notice a
      // stopped agent within it instead of within the protocol's 31 s maximum.
      client.streamIdleTimeout();
    } catch (SandboxException e) {
      log.debug("could not read the agent's keep-alive interval at start: {}", e.toString());
    }
    this.shutdownHook = new Thread(this::stopQuietly, "sandbox-local-shutdown");
    Runtime.getRuntime().addShutdownHook(shutdownHook);
    Duration idle = b.idleTimeout;
    this.idleCheck = b.keepAlive ? null : activity.whenIdleFor(idle, () -> {
      log.info("local sandbox {} was idle for {}; destroying it (use keepAlive(true) to prevent this)", agent.url(), idle);
      stop("the local sandbox was destroyed after being idle for " + idle
          + " (LocalSandbox.builder().idleTimeout(...) or keepAlive(true) change this)", true);
    });
  }

  /** The agent's arguments for {@code b}: its isolation first, so one among the caller's own comes later and wins. */
  private static List<String> agentArguments(Builder b) {
    List<String> agentArgs = new ArrayList<>();
    agentArgs.addAll(List.of("--isolation", switch (b.isolation) {
      case NONE -> "none";
      case ISOLATED -> "auto";
      case REQUIRED -> "bwrap";
    }));
    if (b.isolation != Isolation.NONE) {
      agentArgs.addAll(List.of("--isolation-network", b.network ? "on" : "off"));
    }
    if (b.checkpointDirectory != null) {
      agentArgs.addAll(List.of("--checkpoint-dir", b.checkpointDirectory.toAbsolutePath().normalize().toString()));
    }
    agentArgs.addAll(b.agentArguments);
    if (!b.inheritEnv.isEmpty()) {
      agentArgs.addAll(List.of("--inherit-env", String.join(",", b.inheritEnv)));
    }
    if (b.grace != null) {
      agentArgs.addAll(List.of("--grace-ms", Long.toString(Math.max(1, b.grace.toMillis()))));
    }
    return agentArgs;
  }

  /** Isolation was asked for and is not available here: said once per JVM as a warning, then at debug. */
  private void warnNotIsolated() {
    String why = agent.isolationUnavailable() != null ? agent.isolationUnavailable() : "bwrap cannot be used";
    if (FALLBACK_LOGGED.compareAndSet(false, true)) {
      log.warn("local sandboxes run commands without isolation: {} (Isolation.REQUIRED makes this an error,"
          + " Isolation.NONE silences it)", why);
    } else {
      log.debug("local sandbox {} runs commands without isolation: {}", workspace, why);
    }
  }

  /**
   * Starts a local sandbox with default settings.
   *
   * @throws SandboxException if the agent jar or {@code java} cannot be found or the agent fails to start
   */
  public static LocalSandbox start() {
    return builder().start();
  }

  /** A builder with every setting at its default. */
  public static Builder builder() {
    return new Builder();
  }

  /** The agent's address on 127.0.0.1. */
  public URI baseUrl() {
    return agent.url();
  }

  /** The workspace: the default working directory of commands. */
  public Path workspace() {
    return workspace;
  }

  /**
   * The isolation in force: {@link Isolation#ISOLATED} when commands run in bubblewrap,
   * {@link Isolation#NONE} when they do not (asked for, or {@link Isolation#ISOLATED} fell back).
   * Never {@link Isolation#REQUIRED}.
   */
  public Isolation isolation() {
    return isolation;
  }

  /** The pid of the agent's JVM. */
  public long agentPid() {
    return agent.pid();
  }

  @Override
  protected Sandbox delegate() {
    return client;
  }

  /** Whether the agent's process still runs (it stops on its own after its {@code --idle-timeout-ms}). */
  boolean agentAlive() {
    return agent.handle().isAlive();
  }

  /** The agent's process. */
  ProcessHandle agentHandle() {
    return agent.handle();
  }

  /** When (System.nanoTime) this JVM's last call or stream on the sandbox ended; now while one is in flight. */
  long lastActiveNanos() {
    return activity.lastActiveNanos();
  }

  @Override
  public String toString() {
    return "LocalSandbox{" + agent.url() + ", workspace=" + workspace + ", isolation=" + isolation + (client.isClosed() ? ", closed" : "") + "}";
  }

  /**
   * Deletes the workspaces that local sandboxes of this OS user left behind in {@code java.io.tmpdir}
   * when their JVM was killed ({@code kill -9}, a crash, the OOM killer): the temporary
   * {@code sandbox-workspace-*} directories the SDK created whose owning JVM and agent are both
   * gone. Never touches a workspace you supplied with {@link Builder#workspace(Path)}, nor one whose
   * JVM or agent still runs, whoever started it. Every {@link #start()} also does this, in the
   * background; call it yourself to clean up at a time of your choosing.
   *
   * @return the workspaces deleted
   */
  public static List<Path> cleanupStaleWorkspaces() {
    return Workspaces.cleanupStale();
  }

  /** Stops the agent and all its processes and deletes the workspace, even one you supplied. Idempotent. */
  @Override
  public void destroy() {
    stop("the local sandbox was destroyed", true);
  }

  /**
   * Stops the agent and every process it started; deletes the workspace if the SDK created it.
   * Idempotent. Blocks until the agent has exited (at most the grace period plus a few seconds).
   */
  @Override
  public void close() {
    stop("the local sandbox was closed", ownsWorkspace);
  }

  private void stop(String reason, boolean deleteWorkspace) {
    synchronized (lifecycle) {
      if (stopped) {
        return;
      }
      stopped = true;
    }
    if (idleCheck != null) {
      idleCheck.cancel(false);
    }
    client.closeWith(reason);
    agent.stop(stopWait); // SIGTERM: the agent stops every process group it started
    if (deleteWorkspace && ownsWorkspace) {
      Workspaces.deleteOwned(workspace);
    } else if (deleteWorkspace) {
      Workspaces.deleteTree(workspace);
    }
    try {
      Runtime.getRuntime().removeShutdownHook(shutdownHook);
    } catch (IllegalStateException shuttingDown) {
      // called from the hook itself
    }
  }

  private void stopQuietly() {
    try {
      stop("the JVM is shutting down", ownsWorkspace);
    } catch (RuntimeException e) {
      log.warn("could not stop the local sandbox cleanly", e);
    }
  }

  /** Configures a {@link LocalSandbox}. Not thread-safe. */
  public static final class Builder {
    private Path agentJar;
    private Path javaExecutable;
    private Path workspace;
    private Path checkpointDirectory;
    private Duration idleTimeout = Duration.ofMinutes(10);
    private boolean keepAlive;
    private Duration startupTimeout = Duration.ofSeconds(30);
    private Duration execTimeout;
    private Duration streamIdleTimeout;
    private Duration grace;
    private final List<String> jvmArguments = new ArrayList<>();
    private final List<String> agentArguments = new ArrayList<>();
    private final java.util.Set<String> inheritEnv = new java.util.LinkedHashSet<>();
    private final java.util.Map<String, String> env = new java.util.LinkedHashMap<>();
    private Isolation isolation = Isolation.ISOLATED;
    private boolean network;
    private EgressPolicy egressPolicy;
    private final List<EgressSecret> egressSecrets = new ArrayList<>();

    private Builder() {}

    /** The grace period the agent uses: the one set, else its default of 5 s. */
    Duration gracePeriodInForce() {
      return grace != null ? grace : Duration.ofSeconds(5);
    }

    /**
     * How commands are isolated from the host (default {@link Isolation#ISOLATED}: in bubblewrap
     * where it works, else without isolation and one warning in the log). See {@link Isolation}.
     */
    public Builder isolation(Isolation isolation) {
      this.isolation = Objects.requireNonNull(isolation, "isolation == null");
      return this;
    }

    /**
     * Whether isolated commands may use the network (default false: they have only a loopback
     * interface of their own, and reach neither the internet nor the host's listeners, not even
     * on 127.0.0.1). Without isolation commands always have the host's network.
     */
    public Builder network(boolean network) {
      this.network = network;
      return this;
    }

    /**
     * Runs an egress proxy with this policy (see {@link dev.sandboxsdk.SandboxEgress}); default null: no proxy.
     * Isolated without {@link #network(boolean) network} it is the commands' only way out, else advisory.
     */
    public Builder egressPolicy(EgressPolicy policy) {
      this.egressPolicy = policy;
      return this;
    }

    /**
     * A secret commands use through the egress proxy without seeing it ({@link SandboxSpec.Builder#egressSecret});
     * repeatable. It reaches the agent in a 0600 file deleted once it is up; start() refuses it without a policy.
     */
    public Builder egressSecret(EgressSecret secret) {
      Checks.addEgressSecret(egressSecrets, secret);
      return this;
    }

    /**
     * Names of this JVM's environment variables that commands also get. By default commands see
     * none of this JVM's environment except {@code PATH}, {@code HOME}, {@code LANG}, {@code TERM}
     * and {@code TMPDIR} (and {@code LC_ALL}, {@code LC_CTYPE} if set), plus
     * {@code SANDBOX_WORKSPACE}, {@code SANDBOX_AGENT_RUN} and what each call passes with
     * {@code env(...)}: database passwords and cloud credentials of your application are not in
     * a command's environment unless you name them here. (An unisolated local command runs as
     * your OS user, so it can still read this JVM's {@code /proc/<pid>/environ}; an isolated one
     * cannot see this JVM's process, see {@link Isolation}.) A name this JVM has no value for is ignored.
     * Repeatable; the names add up.
     *
     * @throws IllegalArgumentException if a name is not a variable name ({@code [A-Za-z_][A-Za-z0-9_]*})
     *     or is {@code SANDBOX_AGENT_TOKEN}, which holds the agent's token and is never passed on
     */
    public Builder inheritEnv(String... names) {
      return inheritEnv(List.of(names));
    }

    /** As {@link #inheritEnv(String...)}. */
    public Builder inheritEnv(java.util.Collection<String> names) {
      for (String name : names) {
        Checks.inheritableEnvName(name);
      }
      inheritEnv.addAll(names);
      return this;
    }

    /** Variables every command gets, with their values (for {@link LocalProvider}'s {@link SandboxSpec#env()}). */
    Builder env(java.util.Map<String, String> variables) {
      variables.forEach((k, v) -> {
        Checks.inheritableEnvName(k);
        env.put(k, v);
      });
      return this;
    }

    /** The agent jar ({@code container-agent.jar}), when it cannot be found automatically. */
    public Builder agentJar(Path agentJar) {
      this.agentJar = Objects.requireNonNull(agentJar, "agentJar == null");
      return this;
    }

    /** The {@code java} executable that runs the agent (default: the one running this JVM). */
    public Builder javaExecutable(Path java) {
      this.javaExecutable = Objects.requireNonNull(java, "java == null");
      return this;
    }

    /**
     * The workspace directory (created if missing). Default: a new temporary directory that
     * {@code close()} deletes. A directory you supply is deleted only by {@link LocalSandbox#destroy()}.
     */
    public Builder workspace(Path workspace) {
      this.workspace = Objects.requireNonNull(workspace, "workspace == null");
      return this;
    }

    /**
     * Where the agent keeps this sandbox's checkpoints (created 0700; must be outside the
     * workspace). They outlive the agent there, so a later sandbox on the same workspace and
     * directory lists and restores them. Default: a temporary directory the agent deletes when it
     * stops, so checkpoints last as long as the sandbox.
     */
    public Builder checkpointDirectory(Path directory) {
      this.checkpointDirectory = Objects.requireNonNull(directory, "directory == null");
      return this;
    }

    /** Destroy the sandbox after this long without any call or open stream (default 10 minutes). */
    public Builder idleTimeout(Duration idleTimeout) {
      this.idleTimeout = Checks.positive(idleTimeout, "idleTimeout");
      return this;
    }

    /** Keep the sandbox until {@code close()}, however long it is idle (default false). */
    public Builder keepAlive(boolean keepAlive) {
      this.keepAlive = keepAlive;
      return this;
    }

    /** How long to wait for the agent to start (default 30 s). */
    public Builder startupTimeout(Duration startupTimeout) {
      this.startupTimeout = Checks.positive(startupTimeout, "startupTimeout");
      return this;
    }

    /** Default timeout of {@code exec} commands (default none); see {@link Sandbox.Builder#execTimeout}. */
    public Builder execTimeout(Duration execTimeout) {
      this.execTimeout = Checks.positive(execTimeout, "execTimeout");
      return this;
    }

    /** See {@link Sandbox.Builder#streamIdleTimeout}. */
    public Builder streamIdleTimeout(Duration timeout) {
      this.streamIdleTimeout = Checks.positive(timeout, "streamIdleTimeout");
      return this;
    }

    /** Time between SIGTERM and SIGKILL when processes are killed (the agent's {@code --grace-ms}, default 5 s). */
    public Builder gracePeriod(Duration grace) {
      this.grace = Checks.positive(grace, "gracePeriod");
      return this;
    }

    /**
     * Extra JVM options for the agent, e.g. {@code -Xmx2g}. They follow the SDK's own
     * ({@code -XX:+UseSerialGC -Xss512k -Xms8m -Xmx512m -XX:-UsePerfData}), so an option given here wins.
     */
    public Builder jvmArgument(String argument) {
      jvmArguments.add(Objects.requireNonNull(argument, "argument == null"));
      return this;
    }

    /** Extra agent options, e.g. {@code --max-processes 64} (see {@code java -jar container-agent.jar --help}). */
    public Builder agentArgument(String argument) {
      agentArguments.add(Objects.requireNonNull(argument, "argument == null"));
      return this;
    }

    /**
     * Starts the agent and waits until it is ready (typically well under a second).
     *
     * @throws SandboxException if the agent jar or {@code java} cannot be found or the agent fails to start
     */
    public LocalSandbox start() {
      return new LocalSandbox(this);
    }
  }
}
