package dev.sandboxsdk.agent.process;

import dev.sandboxsdk.agent.AgentConfig;
import dev.sandboxsdk.agent.AgentException;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Spawns processes, each in its own process group, and keeps the registry of background processes.
 * Enforces the concurrency cap, timeouts and orderly shutdown. Thread-safe.
 *
 * <p>The one entry point of the HTTP routes: it starts the agent's parts and hands each call to the
 * part that owns it: {@link ProcessRegistry} (the processes and their ids), {@link CommandSpawner}
 * (building and starting a command) and {@link ProcessTreeKiller} (signalling trees, batch kills).
 */
public final class ProcessManager implements AutoCloseable {
  /** Never passed to a command, so a sandboxed command cannot read the agent's secret. */
  public static final String TOKEN_ENV = "SANDBOX_AGENT_TOKEN";
  /** The request header by which a client names its exec, so it can kill it at once. */
  public static final String EXEC_ID_HEADER = "X-Sandbox-Exec-Id";

  private final AgentConfig config;
  /** The user commands run as ({@code --command-user}), or null to run them as the agent's own. */
  private final CommandUser commandUser;
  /** Wraps every command in bubblewrap ({@code --isolation bwrap}), or null. */
  private final Bubblewrap bubblewrap;
  /** The egress proxy commands go out through, or null without {@code --egress-policy}. */
  private final dev.sandboxsdk.agent.egress.Egress egress;
  /** Why {@code --isolation auto} runs commands without isolation, or null. */
  private volatile String isolationUnavailable;
  private final ProcessGroups groups;
  private final ExecutorService io;
  private final ScheduledExecutorService scheduler;
  private final OutputBudget outputBudget;
  private final ProcessRegistry registry;
  private final CommandSpawner spawner;
  private final ProcessTreeKiller killer;
  /** Completes when the spawning parts are ready, exceptionally with why they cannot be. */
  private final CompletableFuture<Void> started = new CompletableFuture<>();

  public ProcessManager(AgentConfig config) {
    this(config, config.freshWorkspace());
  }

  /**
   * @param workspaceCreated whether the agent made the workspace directory itself, so that it
   *     may give it to the command user
   */
  public ProcessManager(AgentConfig config, boolean workspaceCreated) {
    this.config = config;
    this.outputBudget = new OutputBudget(config.outputBudget());
    String path = System.getenv("PATH");
    String setsid = ProcessGroups.which("setsid", path);
    String kill = ProcessGroups.which("kill", path);
    if (setsid == null || kill == null) {
      throw new IllegalStateException("the agent needs setsid(1) and kill(1) on its PATH"
          + " (Debian/Ubuntu: util-linux and procps); missing: "
          + (setsid == null ? "setsid " : "") + (kill == null ? "kill" : ""));
    }
    String envBinary = ProcessGroups.which("env", path);
    this.commandUser = config.commandUser() == null ? null
        : SpawnSetup.commandUser(config, path, envBinary, workspaceCreated);
    this.groups = new ProcessGroups(kill, commandUser, ProcessGroups.which("grep", path));
    this.bubblewrap = SpawnSetup.bubblewrap(config, path, why -> isolationUnavailable = why);
    String runId = randomRunId();
    // An isolated command cannot see the agent's HOME: its home is the workspace.
    String home = commandUser != null ? commandUser.home()
        : bubblewrap != null ? config.workspace().toString() : null;
    try {
      this.egress = EgressSetup.start(config, bubblewrap);
    } catch (RuntimeException e) {
      if (bubblewrap != null) {
        bubblewrap.close();
      }
      throw e;
    }
    CommandEnvironment environment = new CommandEnvironment(System.getenv(), config.inheritEnv(), config.workspace(),
        runId, TOKEN_ENV, home, egress == null ? java.util.Map.of() : egress.environment());
    this.io = Executors.newCachedThreadPool(daemonThreads("agent-io"));
    ScheduledThreadPoolExecutor timers = new ScheduledThreadPoolExecutor(1, daemonThreads("agent-timer"));
    timers.setRemoveOnCancelPolicy(true);
    this.scheduler = timers;
    this.registry = new ProcessRegistry(config, scheduler);
    this.spawner = new CommandSpawner(this, config, registry, groups, io, scheduler, environment, commandUser,
        bubblewrap, envBinary);
    this.killer = new ProcessTreeKiller(groups, registry, environment, commandUser, config.graceMs());
    // Loading JNA, the event loop's self-test spawn, the first FIFOs and the watchdog's spawn
    // take most of the start-up: they overlap with the HTTP server's set-up (issue 13, start to ready).
    Thread starter = new Thread(() -> {
      try {
        startSpawning(setsid, path, runId);
        started.complete(null);
      } catch (Throwable e) {
        started.completeExceptionally(e);
      }
    }, "agent-start");
    starter.setDaemon(true);
    starter.start();
  }

  private void startSpawning(String setsid, String path, String runId) {
    spawner.start(setsid, path);
    registry.useWatchdog(Watchdog.start(setsid, runId, path, commandUser,
        bubblewrap == null ? null : bubblewrap.scratch()));
    // A group number is free for reuse once its last member dies; forget dead groups promptly so
    // kill-all and shutdown never signal a stranger that inherited the number.
    scheduler.scheduleWithFixedDelay(registry::pruneStartedGroups, 5, 5, TimeUnit.SECONDS);
    scheduler.scheduleWithFixedDelay(registry::watchExits, 20, 20, TimeUnit.MILLISECONDS);
  }

  /**
   * Waits until commands can be started; the server calls it before it takes requests.
   *
   * @throws IllegalStateException with the reason the agent cannot start commands
   */
  public void awaitStarted() {
    try {
      started.join();
    } catch (CompletionException e) {
      if (e.getCause() instanceof RuntimeException r) {
        throw r;
      }
      if (e.getCause() instanceof Error err) {
        throw err;
      }
      throw new IllegalStateException(e.getCause());
    }
  }

  /** How commands are started: {@code native} (posix_spawn) or {@code jdk}. */
  public String spawn() {
    awaitStarted();
    return spawner.isNative() ? "native" : "jdk";
  }

  /** The isolation in force: {@code bwrap} or {@code none}. */
  public String isolation() {
    return bubblewrap != null ? "bwrap" : "none";
  }

  /** Why {@code --isolation auto} fell back to none, or null. */
  public String isolationUnavailable() {
    return isolationUnavailable;
  }

  /**
   * The way to servers in the sandbox's own network namespace, or null when the sandbox's servers
   * listen in the agent's network (no isolation, or isolation with the network on).
   */
  public NetnsRelay relay() {
    return bubblewrap == null ? null : bubblewrap.relay();
  }

  /** The egress proxy and its URL, or null when the agent was started without a policy. */
  public dev.sandboxsdk.agent.egress.Egress egress() {
    return egress;
  }

  /** Whether commands may use the network: always without isolation, else as configured. */
  public boolean network() {
    return bubblewrap == null || bubblewrap.network();
  }

  /** The user commands run as, or null when they run as the agent's own user. */
  /**
   * The commands' temporary directory as the agent sees it: the sandbox's own {@code /tmp} under
   * bubblewrap, else {@code java.io.tmpdir}.
   */
  public java.nio.file.Path commandTmpOnHost() {
    return bubblewrap != null ? bubblewrap.scratch().resolve("tmp")
        : java.nio.file.Path.of(System.getProperty("java.io.tmpdir"));
  }

  /** {@link #commandTmpOnHost()} as commands see it. */
  public String commandTmp() {
    return bubblewrap != null ? "/tmp" : commandTmpOnHost().toAbsolutePath().toString();
  }

  public CommandUser commandUser() {
    return commandUser;
  }

  private static String randomRunId() {
    byte[] b = new byte[8];
    new java.security.SecureRandom().nextBytes(b);
    return java.util.HexFormat.of().formatHex(b);
  }

  static ThreadFactory daemonThreads(String prefix) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      // Small stacks: a thousand processes mean a few thousand mostly-blocked threads.
      Thread t = new Thread(null, r, prefix + "-" + n.incrementAndGet(), 256 * 1024);
      t.setDaemon(true);
      return t;
    };
  }

  static String abbreviate(String s) {
    return s.length() <= 200 ? s : s.substring(0, 200) + "...";
  }

  ScheduledExecutorService scheduler() {
    return scheduler;
  }

  /** Runs {@code task} on a pooled thread, or on this one once the pool is shut down. */
  void runOnIoPool(Runnable task) {
    try {
      io.execute(task);
    } catch (RejectedExecutionException e) {
      task.run();
    }
  }

  ProcessGroups groups() {
    return groups;
  }

  /** Whether {@link #close()} has begun: streams that would run forever end now. */
  public boolean isShuttingDown() {
    return spawner.isShuttingDown();
  }

  public AgentConfig config() {
    return config;
  }

  /** The budget every output buffer (exec results, background windows) is charged to. */
  public OutputBudget outputBudget() {
    return outputBudget;
  }

  /**
   * Spawns a process for {@code exec} or {@code execute/stream}. The caller starts its pumps
   * ({@link ManagedProcess#startPumps}) once it is ready to receive output.
   */
  public ManagedProcess spawnForeground(ExecSpec spec, ManagedProcess.Kind kind) {
    return spawnForeground(spec, kind, null);
  }

  /**
   * Spawns an exec under the id its client chose ({@code requestedId}, from the
   * {@code X-Sandbox-Exec-Id} header) or, if null, a generated {@code exec_<n>}, and registers it
   * for {@link #killExec} until it has finished. A chosen id must match the process id pattern
   * and not be {@code stream}, the path of execute/stream (400), and must not be the id of a
   * running exec (409 PROCESS_ALREADY_EXISTS).
   */
  public ManagedProcess spawnForeground(ExecSpec spec, ManagedProcess.Kind kind, String requestedId) {
    return registry.startExec(requestedId, id -> spawner.spawn(id, spec, kind));
  }

  /**
   * Terminates a running exec on its client's request (SIGTERM, SIGKILL after the grace period),
   * as a hang-up does, but without waiting for a write to the client to fail. Asking again while
   * the exec is still dying signals it again.
   *
   * <p>An exec whose request has arrived but whose process is still being spawned is killed as soon
   * as it has started.
   *
   * @throws AgentException PROCESS_NOT_FOUND if no exec with that id is running (it never
   *     existed, or has finished)
   */
  public void killExec(String id) {
    registry.killExec(id);
  }

  /** Starts a background process and registers it under its id. */
  public ManagedProcess startBackground(ExecSpec spec) {
    return registry.startBackground(spec.processId(), id -> spawner.spawn(id, spec, ManagedProcess.Kind.BACKGROUND));
  }

  void onFinished(ManagedProcess p) {
    registry.onFinished(p);
  }

  public ManagedProcess require(String id) {
    return registry.require(id);
  }

  /** Snapshots of the background processes, oldest first, optionally only those in one state. */
  public List<ManagedProcess.Snapshot> list(ManagedProcess.Status filter) {
    return registry.list(filter);
  }

  /** Signals a background process's group; escalates to SIGKILL after the grace period. */
  public void kill(ManagedProcess p, Signal signal, long graceMs) {
    p.terminate(signal, graceMs, ManagedProcess.KillReason.REQUEST);
  }

  /**
   * Sends {@code signal} to a running process's group (and what left it) without escalating to
   * SIGKILL: how a code context's interpreter is interrupted with SIGINT.
   */
  public void signal(ManagedProcess p, Signal signal) {
    if (!p.isFinished()) {
      killer.signalTree(p, signal, true);
    }
  }

  /** Terminates a foreground process whose client went away. */
  public void killForDisconnect(ManagedProcess p) {
    if (!p.isFinished()) {
      p.terminate(Signal.SIGTERM, config.graceMs(), ManagedProcess.KillReason.DISCONNECT);
    }
  }

  /**
   * Kills every running background process and whatever finished processes of any kind left
   * behind, in their groups or escaped from them (SIGTERM, then SIGKILL after the grace period),
   * and waits until they are gone. Running execs belong to their HTTP calls and are left alone,
   * with whatever they started. Returns how many background processes were running.
   */
  public int killAll() {
    return killer.killAll();
  }

  /**
   * Signals a process's group and the processes it started that left the group (found by its
   * {@link CommandEnvironment#RUN_VAR} marker); returns whether anything was signalled.
   */
  boolean signalTree(ManagedProcess p, Signal signal, boolean groupAlive) {
    return killer.signalTree(p, signal, groupAlive);
  }

  /** Drops the records of finished background processes; returns how many were dropped. */
  public int cleanupCompleted() {
    return registry.cleanupCompleted();
  }

  /**
   * Refuses every new command with CHECKPOINT_BUSY, saying {@code why}, until {@link
   * #resumeSpawns()}. When this returns, no spawn is half-way: every process started before is in
   * {@link #runningCount()}.
   */
  public void pauseSpawns(String why) {
    spawner.pauseSpawns(why);
  }

  public void resumeSpawns() {
    spawner.resumeSpawns();
  }

  /** Processes the agent started that still run: execs, background processes and its own (git). */
  public int runningCount() {
    return registry.runningCount();
  }

  /**
   * Kills every process the agent started, running execs included (whose calls then end as
   * killed), and what they left behind in their groups or outside them (SIGTERM, SIGKILL after
   * the grace period); waits until they are gone. Returns how many were running.
   */
  public int killEverything() {
    return killer.killEverything();
  }

  /** Refuses new work, terminates every process group the agent started and waits for them. */
  @Override
  public void close() {
    started.handle((v, e) -> null).join(); // a start-up still under way finishes first
    if (!spawner.closeGate()) {
      return;
    }
    killer.killForShutdown();
    registry.closeWatchdog();
    scheduler.shutdownNow();
    io.shutdownNow();
    spawner.close();
    if (egress != null) {
      egress.close(); // after the commands: none is left to use it
    }
  }
}
