package dev.sandboxsdk.agent.process;

import dev.sandboxsdk.agent.AgentConfig;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Spawns processes, each in its own process group, and keeps the registry of background processes.
 * Enforces the concurrency cap, timeouts and orderly shutdown. Thread-safe.
 */
public final class ProcessManager implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(ProcessManager.class);
  private static final Pattern PROCESS_ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");
  private static final Set<String> RESERVED_IDS = Set.of("list", "start", "kill-all", "cleanup");
  /** Never passed to a command, so a sandboxed command cannot read the agent's secret. */
  public static final String TOKEN_ENV = "SANDBOX_AGENT_TOKEN";
  private static final File DEV_NULL = new File("/dev/null");
  private static final File ROOT_DIR = new File("/");

  private static final Path PASSWD = Path.of("/etc/passwd");

  private final AgentConfig config;
  /*
   * The spawning parts (launcher, nativeSpawner, fifos, watchdog) are made on the agent-start
   * thread while the HTTP server is set up: written once there, read only after
   * awaitStarted() has joined it (the server takes no request before that).
   */
  /** What every command is prefixed with: setsid, plus a signal reset when the agent inherited ignored signals. */
  private List<String> launcher;
  /** The user commands run as ({@code --command-user}), or null to run them as the agent's own. */
  private final CommandUser commandUser;
  /** Wraps every command in bubblewrap ({@code --isolation bwrap}), or null. */
  private final Bubblewrap bubblewrap;
  /** Why {@code --isolation auto} runs commands without isolation, or null. */
  private volatile String isolationUnavailable;
  /** env(1), which changes into a command's directory once it runs as the command user. */
  private final String envBinary;
  /** Starts commands without setsid(1) and reaps them on its event loop; null: the JDK starts them. */
  private NativeSpawner nativeSpawner;
  private final ProcessGroups groups;
  private FifoPool fifos;
  private final ExecutorService io;
  private final ScheduledExecutorService scheduler;
  private final OutputBudget outputBudget;
  private final Map<String, ManagedProcess> background = new ConcurrentHashMap<>();
  private final Set<String> reservedIds = ConcurrentHashMap.newKeySet();
  /**
   * Running execs (execute and execute/stream) by id, for {@code DELETE /api/execute/{id}}. An id
   * is reserved while its process spawns, and dropped once it has finished.
   */
  private final Map<String, ExecSlot> execs = new ConcurrentHashMap<>();

  /** An exec id's process, once spawned, and whether a kill came while it was spawning. */
  private static final class ExecSlot {
    private ManagedProcess process;
    private boolean killRequested;
  }
  private final Set<ManagedProcess> live = ConcurrentHashMap.newKeySet();
  private final AtomicInteger running = new AtomicInteger();
  private final AtomicLong idSequence = new AtomicLong();
  /** Numbers the commands of this run for their {@link CommandEnvironment#RUN_VAR} marker. */
  private final AtomicLong spawnSerial = new AtomicLong();
  private final CommandEnvironment environment;
  /** Stops this run's processes if the agent dies without doing so; null if it could not start. */
  private Watchdog watchdog;
  /** Completes when the spawning parts are ready, exceptionally with why they cannot be. */
  private final CompletableFuture<Void> started = new CompletableFuture<>();
  /**
   * Every process group this agent started whose members may still live, including groups of
   * finished or cleaned-up processes: their leftover children are ours to stop too.
   */
  private final Set<Long> startedGroups = ConcurrentHashMap.newKeySet();
  private volatile boolean shuttingDown;
  /** Spawns hold the read side, shutdown the write side: no process can start unseen by close(). */
  private final java.util.concurrent.locks.ReadWriteLock spawnGate = new java.util.concurrent.locks.ReentrantReadWriteLock();

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
    this.envBinary = ProcessGroups.which("env", path);
    this.commandUser = config.commandUser() == null ? null : commandUser(config, path, envBinary, workspaceCreated);
    this.groups = new ProcessGroups(kill, commandUser, ProcessGroups.which("grep", path));
    this.bubblewrap = bubblewrap(config, path);
    String runId = randomRunId();
    // An isolated command cannot see the agent's HOME: its home is the workspace.
    String home = commandUser != null ? commandUser.home()
        : bubblewrap != null ? config.workspace().toString() : null;
    this.environment = new CommandEnvironment(System.getenv(), config.inheritEnv(), config.workspace(), runId, TOKEN_ENV,
        home);
    this.io = Executors.newCachedThreadPool(daemonThreads("agent-io"));
    ScheduledThreadPoolExecutor timers = new ScheduledThreadPoolExecutor(1, daemonThreads("agent-timer"));
    timers.setRemoveOnCancelPolicy(true);
    this.scheduler = timers;
    // Loading JNA, the event loop's self-test spawn, the first FIFOs and the watchdog's spawn
    // take most of the start-up: they overlap with the HTTP server's set-up (issue 13, start to ready).
    Thread starter = new Thread(() -> {
      try {
        startSpawning(setsid, envBinary, path, runId);
        started.complete(null);
      } catch (Throwable e) {
        started.completeExceptionally(e);
      }
    }, "agent-start");
    starter.setDaemon(true);
    starter.start();
  }

  private void startSpawning(String setsid, String env, String path, String runId) {
    this.nativeSpawner = nativeSpawner(config.spawn());
    if (nativeSpawner != null) {
      groups.useLibc();
    }
    // The native spawn makes the session itself and resets every signal: no launcher at all.
    this.launcher = nativeSpawner != null ? List.of() : launcher(setsid, env);
    String mkfifo = ProcessGroups.which("mkfifo", path);
    if (mkfifo == null) {
      throw new IllegalStateException("the agent needs mkfifo(1) on its PATH (Debian/Ubuntu: coreutils)");
    }
    try {
      this.fifos = new FifoPool(mkfifo, commandUser != null, nativeSpawner != null);
    } catch (IOException e) {
      throw new IllegalStateException("cannot create the agent's pipe directory: " + e.getMessage(), e);
    }
    this.watchdog = Watchdog.start(setsid, runId, path, commandUser, bubblewrap == null ? null : bubblewrap.scratch());
    // A group number is free for reuse once its last member dies; forget dead groups promptly so
    // kill-all and shutdown never signal a stranger that inherited the number.
    scheduler.scheduleWithFixedDelay(this::pruneStartedGroups, 5, 5, TimeUnit.SECONDS);
    scheduler.scheduleWithFixedDelay(this::watchExits, 20, 20, TimeUnit.MILLISECONDS);
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

  /**
   * Resolves {@code --command-user}, checks that the agent can switch to it (the way every
   * command will, including env's change of directory) and that it can use the workspace.
   *
   * @throws IllegalStateException with a one-line reason
   */
  private static CommandUser commandUser(AgentConfig config, String path, String env, boolean workspaceCreated) {
    CommandUser user = CommandUser.resolve(config.commandUser(), PASSWD, ProcessGroups.which("setpriv", path));
    String grep = ProcessGroups.which("grep", path);
    if (env == null || grep == null) {
      throw new IllegalStateException("--command-user needs env(1) and grep(1) on the agent's PATH"
          + " (Debian/Ubuntu: coreutils, grep)");
    }
    user.probe(List.of(env, "--chdir=/"), grep);
    Path ws = config.workspace();
    if (workspaceCreated) {
      user.adopt(ws);
    }
    if (!user.canWrite(ws)) {
      log.warn("--command-user {}: that user cannot write the workspace {}; commands that write there will fail"
          + " (give it to them: chown {}:{} {})", user, ws, user.uid(), user.gid(), ws);
    }
    log.info("commands run as {}, without capabilities", user);
    return user;
  }

  /**
   * The bubblewrap sandbox for {@code --isolation bwrap} (which fails the start if it cannot run)
   * and {@code auto} (which falls back to none with one warning), or null.
   */
  private Bubblewrap bubblewrap(AgentConfig config, String path) {
    switch (config.isolation()) {
      case "bwrap": {
        Bubblewrap b;
        try {
          b = Bubblewrap.probe(path, config.workspace(), config.isolationNetwork());
        } catch (IllegalStateException e) {
          throw new IllegalStateException("--isolation bwrap: " + e.getMessage(), e);
        }
        log.info("commands run isolated by {}", b);
        return b;
      }
      case "auto":
        try {
          Bubblewrap b = Bubblewrap.probe(path, config.workspace(), config.isolationNetwork());
          log.info("commands run isolated by {}", b);
          return b;
        } catch (IllegalStateException e) {
          log.warn("--isolation auto: {}; commands run without isolation", e.getMessage());
          isolationUnavailable = e.getMessage();
          return null;
        }
      default:
        return null;
    }
  }

  /** The native spawner for {@code --spawn auto|native}, or null for the JDK's. */
  private static NativeSpawner nativeSpawner(String mode) {
    if (mode.equals("jdk")) {
      log.info("commands are started by the JDK (--spawn jdk)");
      return null;
    }
    try {
      NativeSpawner s = NativeSpawner.start();
      log.info("commands are started by posix_spawn (native spawn)");
      return s;
    } catch (IllegalStateException | LinkageError e) { // LinkageError: JNA is not on the classpath
      String why = e instanceof LinkageError ? "native spawn is unavailable: " + e : e.getMessage();
      if (mode.equals("native")) {
        throw new IllegalStateException("--spawn native: " + why, e);
      }
      log.warn("{}; commands are started by the JDK", why);
      return null;
    }
  }

  /** How commands are started: {@code native} (posix_spawn) or {@code jdk}. */
  public String spawn() {
    awaitStarted();
    return nativeSpawner != null ? "native" : "jdk";
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

  /** Whether commands may use the network: always without isolation, else as configured. */
  public boolean network() {
    return bubblewrap == null || bubblewrap.network();
  }

  /** The user commands run as, or null when they run as the agent's own user. */
  public CommandUser commandUser() {
    return commandUser;
  }

  /**
   * Children inherit ignored signals (an agent started from a script with {@code &} ignores
   * SIGINT, and so would every command). If any standard signal is ignored, commands are started
   * through {@code env --default-signal}, which restores default handling before the exec.
   */
  private static List<String> launcher(String setsid, String env) {
    long ignored = ProcessGroups.ignoredSignals() & 0x7FFFFFFFL; // signals 1..31 are bits 0..30
    if (ignored == 0) {
      return List.of(setsid);
    }
    if (env != null) {
      try {
        Process probe = new ProcessBuilder(env, "--default-signal", "true")
            .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        if (probe.waitFor(5, TimeUnit.SECONDS) && probe.exitValue() == 0) {
          log.info("the agent was started with ignored signals (mask {}); commands get default signal handling back",
              Long.toHexString(ignored));
          return List.of(setsid, env, "--default-signal");
        }
      } catch (IOException e) {
        // fall through to the warning
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    log.warn("the agent was started with ignored signals (mask {}) and env(1) cannot reset them;"
        + " commands inherit them", Long.toHexString(ignored));
    return List.of(setsid);
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
    return shuttingDown;
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
    String id;
    if (requestedId != null) {
      if (!PROCESS_ID.matcher(requestedId).matches() || requestedId.equals("stream")) {
        throw AgentException.invalid(EXEC_ID_HEADER, "the " + EXEC_ID_HEADER + " header must match "
            + PROCESS_ID.pattern() + " and not be 'stream': '" + abbreviate(requestedId) + "'");
      }
      id = requestedId;
      if (execs.putIfAbsent(id, new ExecSlot()) != null) {
        throw new AgentException(ErrorCode.PROCESS_ALREADY_EXISTS, "an exec with id '" + id
            + "' is already running; send a fresh " + EXEC_ID_HEADER, Map.of("processId", id));
      }
    } else {
      do {
        id = "exec_" + idSequence.incrementAndGet(); // a client may have chosen this one
      } while (execs.putIfAbsent(id, new ExecSlot()) != null);
    }
    ExecSlot slot = execs.get(id);
    ManagedProcess p;
    try {
      p = spawn(id, spec, kind);
    } catch (RuntimeException | Error e) {
      execs.remove(id, slot);
      throw e;
    }
    boolean killNow;
    synchronized (slot) {
      slot.process = p;
      killNow = slot.killRequested;
    }
    if (killNow) { // the client gave up while the process was being spawned
      p.terminate(Signal.SIGTERM, config.graceMs(), ManagedProcess.KillReason.DISCONNECT);
    }
    String key = id;
    p.finished().whenComplete((done, e) -> execs.remove(key, slot));
    return p;
  }

  /** The request header by which a client names its exec, so it can kill it at once. */
  public static final String EXEC_ID_HEADER = "X-Sandbox-Exec-Id";

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
    ExecSlot slot = execs.get(id);
    ManagedProcess p = null;
    if (slot != null) {
      synchronized (slot) {
        p = slot.process;
        if (p == null) {
          slot.killRequested = true; // spawnForeground kills it once spawned
          return;
        }
      }
    }
    if (p == null || p.isFinished()) {
      throw new AgentException(ErrorCode.PROCESS_NOT_FOUND,
          "no running exec with id '" + abbreviate(id) + "' (it never existed or has finished)",
          Map.of("processId", abbreviate(id)));
    }
    p.terminate(Signal.SIGTERM, config.graceMs(), ManagedProcess.KillReason.DISCONNECT);
  }

  /** Starts a background process and registers it under its id. */
  public ManagedProcess startBackground(ExecSpec spec) {
    String id = spec.processId();
    if (id != null) {
      if (!PROCESS_ID.matcher(id).matches() || RESERVED_IDS.contains(id)) {
        throw AgentException.invalid("processId", "processId must match " + PROCESS_ID.pattern()
            + " and not be one of " + new java.util.TreeSet<>(RESERVED_IDS) + ": '" + abbreviate(id) + "'");
      }
    } else {
      id = "proc_" + Long.toHexString(System.currentTimeMillis()) + "_" + idSequence.incrementAndGet();
    }
    if (!reservedIds.add(id)) {
      throw alreadyExists(id);
    }
    try {
      if (background.containsKey(id)) {
        throw alreadyExists(id);
      }
      ManagedProcess p = spawn(id, spec, ManagedProcess.Kind.BACKGROUND);
      background.put(id, p);
      p.startLoggedPumps();
      return p;
    } finally {
      reservedIds.remove(id);
    }
  }

  private static AgentException alreadyExists(String id) {
    return new AgentException(ErrorCode.PROCESS_ALREADY_EXISTS,
        "a process with id '" + id + "' already exists; pick another id or clean it up first",
        Map.of("processId", id));
  }

  private ManagedProcess spawn(String id, ExecSpec spec, ManagedProcess.Kind kind) {
    spawnGate.readLock().lock();
    try {
      if (shuttingDown) {
        throw new AgentException(ErrorCode.SHUTTING_DOWN, "the agent is shutting down");
      }
      String paused = spawnsPaused;
      if (paused != null) {
        throw new AgentException(ErrorCode.CHECKPOINT_BUSY, "no command can start now: " + paused
            + "; try again when it is done");
      }
      return spawnUnderGate(id, spec, kind);
    } finally {
      spawnGate.readLock().unlock();
    }
  }

  private ManagedProcess spawnUnderGate(String id, ExecSpec spec, ManagedProcess.Kind kind) {
    Path cwd = resolveCwd(spec.cwd());
    ProcessBuilder pb = new ProcessBuilder();
    // The native spawn takes the map as it is; the JDK's starts from a copy of the agent's own.
    Map<String, String> env = nativeSpawner != null ? new java.util.HashMap<>() : pb.environment();
    String mark = environment.mark(spawnSerial.incrementAndGet());
    environment.fill(env, spec.env(), mark);
    ExecSpec.Pty ptySpec = spec.pty();
    if (ptySpec != null) {
      if (nativeSpawner == null) {
        // The JDK can only give a child pipes or files; making the slave its controlling terminal
        // needs the native spawn's setsid-then-open. Rejected rather than half-working.
        throw new AgentException(ErrorCode.TERMINAL_UNAVAILABLE, "this agent starts commands through the JDK"
            + " (--spawn jdk, or the native spawn is unavailable here), which cannot run a command on a terminal;"
            + " run the agent with --spawn native (the default on Linux with glibc 2.34+)", Map.of("field", "pty"));
      }
      env.put("TERM", ptySpec.term());
    }
    List<String> cmd = new ArrayList<>();
    if (commandUser != null) {
      // Switch user first, then let env change directory as that user: the root agent itself may
      // not be allowed into the user's directories (it has no CAP_DAC_READ_SEARCH). Both exec in
      // place, like setsid, so pid == pgid still holds.
      if ((spec.stdinPipe() || spec.stdinData() != null) && ptySpec == null) {
        // The JDK's stdin pipe is the root agent's, mode 600: a command that reopens /dev/stdin by
        // name would get "Permission denied". Still root here, a shell opens it to the command's
        // user before anything of the command runs (a chmod by the agent after spawn would race
        // with the command's first open), then execs setpriv in place.
        cmd.addAll(List.of("/bin/sh", "-c", "chmod 606 /proc/self/fd/0 2>/dev/null; exec \"$@\"", "sandbox-stdin"));
      }
      cmd.addAll(commandUser.prefix());
      cmd.add(envBinary);
      cmd.add("--chdir=" + cwd);
      pb.directory(ROOT_DIR);
    } else {
      // Isolated, the host directory may not be the one bubblewrap changes into (--chdir).
      pb.directory(bubblewrap != null ? config.workspace().toFile() : cwd.toFile());
    }
    if (bubblewrap != null) {
      // setsid (or the native spawn's own session), then bwrap: the outer bwrap is the group
      // leader (pid == pgid) and the namespace's processes stay in its group; see Bubblewrap for
      // the signals.
      if (!launcher.isEmpty()) {
        cmd.add(launcher.get(0));
      }
      cmd.addAll(bubblewrap.prefix(cwd));
    } else {
      cmd.addAll(launcher); // new session and process group; setsid execs in place, so pid == pgid
    }
    if (spec.argv() != null) {
      if (commandUser != null) {
        checkExecutableAsUser(spec.argv().get(0), cwd, env.get("PATH"));
      } else {
        checkExecutable(spec.argv().get(0), cwd, env.get("PATH"),
            p -> bubblewrap == null ? Bubblewrap.View.HOST : bubblewrap.view(p));
      }
      cmd.addAll(spec.argv());
    } else {
      cmd.add("/bin/sh");
      cmd.add("-c");
      cmd.add(spec.shellCommand());
    }
    pb.command(cmd);
    boolean wantsStdin = (spec.stdinPipe() || spec.stdinData() != null) && ptySpec == null;
    if (!wantsStdin) {
      pb.redirectInput(ProcessBuilder.Redirect.from(DEV_NULL));
    }
    if (running.incrementAndGet() > config.effectiveMaxProcesses()) {
      running.decrementAndGet();
      throw new AgentException(ErrorCode.TOO_MANY_PROCESSES,
          "the agent already runs " + config.effectiveMaxProcesses()
              + " processes (its --max-processes limit); wait for some to finish or kill them",
          Map.of("limit", config.effectiveMaxProcesses()));
    }
    OutputPump out = null;
    OutputPump err = null;
    Pty pty = null;
    Process process;
    try {
      if (ptySpec != null) {
        Pty terminal = Pty.open(ptySpec.cols(), ptySpec.rows());
        pty = terminal;
        out = OutputPump.terminal(terminal, nativeSpawner.loop(), id + " terminal");
        err = OutputPump.none(id + " stderr");
        Path dir = pb.directory().toPath();
        java.util.concurrent.Callable<Process> start =
            () -> nativeSpawner.spawnOnTerminal(cmd, env, dir, terminal.slavePath());
        process = bubblewrap != null ? bubblewrap.start(start) : call(start);
      } else if (nativeSpawner != null) {
        out = OutputPump.prepare(fifos, io, id + " stdout");
        err = OutputPump.prepare(fifos, io, id + " stderr");
        Path dir = pb.directory().toPath();
        Path outFifo = out.fifo();
        Path errFifo = err.fifo();
        java.util.concurrent.Callable<Process> start =
            () -> nativeSpawner.spawn(cmd, env, dir, wantsStdin, outFifo, errFifo);
        process = bubblewrap != null ? bubblewrap.start(start) : call(start);
      } else {
        out = OutputPump.prepare(fifos, io, id + " stdout");
        err = OutputPump.prepare(fifos, io, id + " stderr");
        pb.redirectOutput(out.fifo().toFile()).redirectError(err.fifo().toFile());
        process = bubblewrap != null ? bubblewrap.start(pb) : pb.start();
      }
    } catch (IOException | RuntimeException e) {
      running.decrementAndGet();
      if (out != null) {
        out.abandon();
      }
      if (err != null) {
        err.abandon();
      }
      if (pty != null) {
        pty.close();
      }
      throw e instanceof IOException ? spawnFailure((IOException) e) : (RuntimeException) e;
    }
    // A background process's output goes to its windows, which never block: the event loop reads
    // it. Execs keep a pooled thread per stream, whose sink may block to pace the process.
    EventLoop loop = nativeSpawner != null && kind == ManagedProcess.Kind.BACKGROUND ? nativeSpawner.loop() : null;
    try {
      if (pty == null) { // a terminal's pump reads the master, which is open already
        out.spawned(loop);
        err.spawned(loop);
      }
    } catch (IOException e) {
      // Cannot happen short of the FIFO vanishing between two opens; the process must not run unread.
      groups.signal(List.of(process.pid()), Signal.SIGKILL);
      out.abandon();
      err.abandon();
      running.decrementAndGet();
      throw new AgentException(ErrorCode.INTERNAL_ERROR, "cannot open the output pipe of the new process: " + e.getMessage());
    }
    java.io.OutputStream stdin = pty != null ? pty.input() : wantsStdin ? process.getOutputStream() : null;
    ManagedProcess p = new ManagedProcess(id, kind, spec, process, spec.stdinPipe() ? stdin : null, out, err, this,
        config.logWindowBytes(), pty);
    p.mark(mark);
    live.add(p);
    startedGroups.add(p.pid());
    if (watchdog != null) {
      watchdog.register(p.pid());
    }
    if (spec.timeoutMs() != null) {
      scheduler.schedule(() -> {
        if (!p.isFinished()) {
          log.debug("process {} timed out after {} ms", id, spec.timeoutMs());
          p.terminate(Signal.SIGTERM, config.graceMs(), ManagedProcess.KillReason.TIMEOUT);
        }
      }, spec.timeoutMs(), TimeUnit.MILLISECONDS);
    }
    if (spec.stdinData() != null) {
      byte[] data = spec.stdinData().getBytes(java.nio.charset.StandardCharsets.UTF_8);
      io.execute(() -> {
        try (stdin) {
          stdin.write(data);
        } catch (IOException e) {
          log.debug("stdin of {} closed early: {}", id, e.toString());
        }
      });
    }
    log.debug("started {} pid {}: {}", id, p.pid(), kind);
    return p;
  }

  /** Runs a native spawn on this thread. */
  private static Process call(java.util.concurrent.Callable<Process> start) throws IOException {
    try {
      return start.call();
    } catch (IOException | RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new IOException(e);
    }
  }

  /** Turns the JDK's "Cannot run program ... error=N, reason" into a message about the request. */
  private static AgentException spawnFailure(IOException e) {
    String msg = String.valueOf(e.getMessage());
    int at = msg.indexOf("error=");
    String reason = at >= 0 ? msg.substring(at) : msg;
    if (msg.contains("error=7,")) { // E2BIG
      return new AgentException(ErrorCode.INVALID_COMMAND,
          "the command, its arguments and environment are too large for the kernel (" + reason
              + "); pass big inputs through stdin or a file instead",
          Map.of("field", "command"));
    }
    if (msg.contains("error=11,") || msg.contains("error=12,")) { // EAGAIN / ENOMEM from fork: a process limit
      return new AgentException(ErrorCode.TOO_MANY_PROCESSES, "the sandbox has no room for another process (" + reason
          + "): its process limit is reached, e.g. by a fork bomb; kill processes (kill-all) and try again");
    }
    log.warn("cannot start a process: {}", msg);
    return new AgentException(ErrorCode.INTERNAL_ERROR, "cannot start the process (" + reason + ")");
  }

  void onFinished(ManagedProcess p) {
    live.remove(p);
    running.decrementAndGet();
    if (p.kind() == ManagedProcess.Kind.BACKGROUND && p.spec().autoCleanup()) {
      scheduler.schedule(() -> {
        if (background.remove(p.id(), p)) {
          p.releaseOutput();
        }
      }, config.autoCleanupDelayMs(), TimeUnit.MILLISECONDS);
    }
  }

  private Path resolveCwd(String cwd) {
    Path dir;
    try {
      dir = cwd == null ? config.workspace() : config.workspace().resolve(cwd);
    } catch (InvalidPathException e) {
      throw AgentException.invalid("cwd", "cwd is not a valid path: " + e.getMessage());
    }
    Seen seen;
    if (bubblewrap != null && bubblewrap.view(dir) != Bubblewrap.View.HOST) {
      // The sandbox's view outside the workspace is not the host's: bubblewrap changes into it
      // there (and says so if it cannot), so no answer here tells what the host holds.
      seen = Seen.UNKNOWN;
    } else {
      seen = commandUser != null ? lookAsUser(dir) : Files.isDirectory(dir) ? Seen.DIRECTORY : Seen.MISSING;
    }
    if (seen != Seen.DIRECTORY && seen != Seen.UNKNOWN) {
      throw new AgentException(ErrorCode.VALIDATION_FAILED,
          "cwd '" + abbreviate(cwd) + "' is not an existing directory in the sandbox",
          Map.of("field", "cwd", "cwd", dir.toString()));
    }
    return dir;
  }

  /**
   * Refuses a program that is not there or not executable, looking only where {@code view} says
   * the command sees what the host holds: where the sandbox has nothing, there is no program;
   * where it has its own files, the command finds out itself.
   */
  private static void checkExecutable(String program, Path cwd, String path, Function<Path, Bubblewrap.View> view) {
    Path found = null;
    if (program.contains("/")) {
      Path p = cwd.resolve(program);
      Bubblewrap.View seen = view.apply(p);
      if (seen == Bubblewrap.View.OWN) {
        return;
      }
      found = seen == Bubblewrap.View.HOST && Files.exists(p) ? p : null;
    } else {
      for (String dir : (path == null ? ProcessGroups.DEFAULT_PATH : path).split(":")) {
        Path p = cwd.resolve(dir.isEmpty() ? "." : dir).resolve(program);
        Bubblewrap.View seen = view.apply(p);
        if (seen == Bubblewrap.View.OWN) {
          return; // the sandbox's own directory: the command's lookup decides
        } else if (seen == Bubblewrap.View.ABSENT) {
          continue; // the sandbox has no such directory
        }
        if (Files.isRegularFile(p) && Files.isExecutable(p)) {
          return;
        }
        if (found == null && Files.exists(p)) {
          found = p;
        }
      }
    }
    if (found == null) {
      throw new AgentException(ErrorCode.COMMAND_NOT_FOUND,
          "command not found: '" + abbreviate(program) + "' (searched " + (program.contains("/") ? "the path as given" : "PATH") + ")",
          Map.of("command", abbreviate(program)));
    }
    if (!Files.isRegularFile(found) || !Files.isExecutable(found)) {
      throw new AgentException(ErrorCode.INVALID_COMMAND,
          "'" + abbreviate(program) + "' is not an executable file (" + found + ")",
          Map.of("command", abbreviate(program)));
    }
  }

  /** What the agent can tell about a path on behalf of the command user. */
  private enum Seen { MISSING, DIRECTORY, EXECUTABLE, NOT_EXECUTABLE, UNKNOWN }

  /**
   * Looks at {@code p} for the command user. The agent has no CAP_DAC_READ_SEARCH, so a
   * directory of the user's it may not search is UNKNOWN (the command itself will find out), and
   * a file counts as executable if any execute bit could apply to the user (the owner's if the
   * user owns it, else the group's or others').
   */
  private Seen lookAsUser(Path p) {
    try {
      var a = Files.readAttributes(p, java.nio.file.attribute.PosixFileAttributes.class);
      if (a.isDirectory()) {
        return Seen.DIRECTORY;
      }
      if (!a.isRegularFile()) {
        return Seen.NOT_EXECUTABLE;
      }
      var perms = a.permissions();
      boolean owned = Integer.toUnsignedLong((Integer) Files.getAttribute(p, "unix:uid")) == commandUser.uid();
      boolean x = owned ? perms.contains(java.nio.file.attribute.PosixFilePermission.OWNER_EXECUTE)
          : perms.contains(java.nio.file.attribute.PosixFilePermission.GROUP_EXECUTE)
              || perms.contains(java.nio.file.attribute.PosixFilePermission.OTHERS_EXECUTE);
      return x ? Seen.EXECUTABLE : Seen.NOT_EXECUTABLE;
    } catch (java.nio.file.NoSuchFileException | java.nio.file.NotDirectoryException e) {
      return Seen.MISSING;
    } catch (IOException | RuntimeException e) {
      return Seen.UNKNOWN;
    }
  }

  /** {@link #checkExecutable} as the command user would see it (see {@link #lookAsUser}). */
  private void checkExecutableAsUser(String program, Path cwd, String path) {
    Path found = null;
    Seen seen = Seen.MISSING;
    if (program.contains("/")) {
      found = cwd.resolve(program);
      seen = lookAsUser(found);
    } else {
      for (String dir : (path == null ? ProcessGroups.DEFAULT_PATH : path).split(":")) {
        Path p = cwd.resolve(dir.isEmpty() ? "." : dir).resolve(program);
        Seen s = lookAsUser(p);
        if (s == Seen.EXECUTABLE || s == Seen.UNKNOWN) {
          return;
        }
        if (seen == Seen.MISSING && s != Seen.MISSING) {
          found = p;
          seen = s;
        }
      }
    }
    if (seen == Seen.MISSING) {
      throw new AgentException(ErrorCode.COMMAND_NOT_FOUND,
          "command not found: '" + abbreviate(program) + "' (searched " + (program.contains("/") ? "the path as given" : "PATH") + ")",
          Map.of("command", abbreviate(program)));
    }
    if (seen == Seen.DIRECTORY || seen == Seen.NOT_EXECUTABLE) {
      throw new AgentException(ErrorCode.INVALID_COMMAND,
          "'" + abbreviate(program) + "' is not an executable file (" + found + ")",
          Map.of("command", abbreviate(program)));
    }
  }

  static String abbreviate(String s) {
    return s.length() <= 200 ? s : s.substring(0, 200) + "...";
  }

  public ManagedProcess require(String id) {
    ManagedProcess p = background.get(id);
    if (p == null) {
      throw new AgentException(ErrorCode.PROCESS_NOT_FOUND,
          "no process with id '" + abbreviate(id) + "' (it never existed or was cleaned up)",
          Map.of("processId", abbreviate(id)));
    }
    return p;
  }

  /** Snapshots of the background processes, oldest first, optionally only those in one state. */
  public List<ManagedProcess.Snapshot> list(ManagedProcess.Status filter) {
    List<ManagedProcess.Snapshot> result = new ArrayList<>();
    for (ManagedProcess p : background.values()) {
      ManagedProcess.Snapshot s = p.snapshot(); // one consistent view each, taken once
      if (filter == null || s.status() == filter) {
        result.add(s);
      }
    }
    result.sort(Comparator.comparing(ManagedProcess.Snapshot::startTime).thenComparing(ManagedProcess.Snapshot::id));
    return result;
  }

  /** Signals a background process's group; escalates to SIGKILL after the grace period. */
  public void kill(ManagedProcess p, Signal signal, long graceMs) {
    p.terminate(signal, graceMs, ManagedProcess.KillReason.REQUEST);
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
    List<ManagedProcess> targets = new ArrayList<>();
    for (ManagedProcess p : background.values()) {
      if (!p.isFinished()) {
        targets.add(p);
      }
    }
    Set<String> spared = new HashSet<>();
    for (ManagedProcess p : live) {
      if (p.kind() != ManagedProcess.Kind.BACKGROUND) {
        spared.add(p.mark());
      }
    }
    terminateAll(targets, finishedGroups(), mark -> !spared.contains(mark), ManagedProcess.KillReason.REQUEST);
    return targets.size();
  }

  /**
   * Signals a process's group and the processes it started that left the group (found by its
   * {@link CommandEnvironment#RUN_VAR} marker); returns whether anything was signalled.
   */
  boolean signalTree(ManagedProcess p, Signal signal, boolean groupAlive) {
    if (groupAlive) {
      groups.signal(List.of(p.pid()), signal);
    }
    List<Long> escaped = new ArrayList<>();
    for (ProcessGroups.Marked m : groups.find(CommandEnvironment.RUN_VAR, p.mark())) {
      if (m.mark().equals(p.mark()) && m.pgid() != p.pid()) {
        escaped.add(m.pid());
      }
    }
    if (!escaped.isEmpty()) {
      log.debug("process {}: {} process(es) that left its group get {}", p.id(), escaped.size(), signal);
      groups.signalProcesses(escaped, signal);
    }
    return groupAlive || !escaped.isEmpty();
  }

  /**
   * This run's marked processes outside {@code pgids} whose marker {@code include} accepts; with
   * {@code include} null, every process of the command user outside them (shutdown: that finds
   * even a process that cleared its marker or made itself unreadable).
   */
  private List<Long> escapees(Collection<Long> pgids, Predicate<String> include) {
    Set<Long> inGroups = new HashSet<>(pgids);
    List<Long> pids = new ArrayList<>();
    if (include == null) {
      for (ProcessGroups.Marked m : ProcessGroups.ofUser(commandUser.uid())) {
        if (!inGroups.contains(m.pgid())) {
          pids.add(m.pid());
        }
      }
      return pids;
    }
    for (ProcessGroups.Marked m : groups.find(CommandEnvironment.RUN_VAR, environment.runId() + ".")) {
      if (!inGroups.contains(m.pgid()) && include.test(m.mark())) {
        pids.add(m.pid());
      }
    }
    return pids;
  }

  /** Groups whose leader finished (whatever its kind, listed or not): children may linger. */
  private List<Long> finishedGroups() {
    Set<Long> running = livePids();
    List<Long> pgids = new ArrayList<>();
    for (Long pgid : startedGroups) {
      if (!running.contains(pgid)) {
        pgids.add(pgid);
      }
    }
    return pgids;
  }

  /** Pids (= group ids) of the processes that have not finished. */
  private Set<Long> livePids() {
    Set<Long> pids = new HashSet<>();
    for (ManagedProcess p : live) {
      pids.add(p.pid());
    }
    return pids;
  }

  /** Notices exits of processes whose pipes a leftover child keeps open (no EOF to wake a pump). */
  private void watchExits() {
    for (ManagedProcess p : live) {
      if (!p.pipesClosed()) {
        p.checkExit();
      }
    }
  }

  /** Forgets groups that have no live member left, so the set stays as small as reality. */
  private void pruneStartedGroups() {
    List<Long> finished = finishedGroups(); // groups of live leaders always stay
    if (finished.isEmpty()) {
      return; // no /proc scan while only live processes are tracked
    }
    Set<Long> alive = new HashSet<>(ProcessGroups.existing(finished));
    for (Long pgid : finished) {
      if (!alive.contains(pgid) && startedGroups.remove(pgid) && watchdog != null) {
        watchdog.forget(pgid);
      }
    }
  }

  private void terminateAll(List<ManagedProcess> targets, List<Long> lingering, Predicate<String> escapeesToo,
      ManagedProcess.KillReason reason) {
    List<Long> pgids = new ArrayList<>();
    for (ManagedProcess p : targets) {
      p.noteSignalled(Signal.SIGTERM, reason);
      pgids.add(p.pid());
    }
    pgids.addAll(ProcessGroups.existing(lingering));
    // The groups first: a group signal reaches every member at once, even one forking right then
    // (a fork bomb), and it needs nothing the bomb may hold; the scan for escapees comes after.
    groups.signal(pgids, Signal.SIGTERM);
    List<Long> escaped = escapees(pgids, escapeesToo);
    if (pgids.isEmpty() && escaped.isEmpty()) {
      return;
    }
    if (!escaped.isEmpty()) {
      log.info("{} process(es) that left their process group: SIGTERM", escaped.size());
      groups.signalProcesses(escaped, Signal.SIGTERM);
    }
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(config.graceMs());
    KillWaits.awaitFinished(targets, deadline);
    // Anything left after the grace period, including children of leaders that already exited.
    List<Long> leftovers = KillWaits.awaitGroupsGone(pgids, deadline);
    // Escapees still there, and any started meanwhile by a process that had not yet been signalled.
    List<Long> escapedLeft = awaitEscapeesGone(pgids, escapeesToo, escaped.isEmpty() ? System.nanoTime() : deadline);
    if (!escapedLeft.isEmpty()) {
      log.info("{} process(es) outside their group outlived the grace period: SIGKILL", escapedLeft.size());
      groups.signalProcesses(escapedLeft, Signal.SIGKILL);
    }
    if (!leftovers.isEmpty()) {
      for (ManagedProcess p : targets) {
        if (!p.isFinished()) {
          p.noteSignalled(Signal.SIGKILL, reason);
        }
      }
      log.info("{} process group(s) outlived the {} ms grace period: SIGKILL", leftovers.size(), config.graceMs());
      groups.signal(leftovers, Signal.SIGKILL);
      KillWaits.awaitFinished(targets, System.nanoTime() + TimeUnit.SECONDS.toNanos(5));
      KillWaits.awaitGroupsGone(leftovers, System.nanoTime() + TimeUnit.SECONDS.toNanos(2));
    }
    KillWaits.awaitGroupsGone(pgids, System.nanoTime() + TimeUnit.SECONDS.toNanos(2)); // reaped, so a command has room
    pruneStartedGroups();
  }

  /** Polls until no escapee is left or the deadline passes; returns those still there. */
  private List<Long> awaitEscapeesGone(List<Long> pgids, Predicate<String> include, long deadlineNanos) {
    return KillWaits.pollUntilEmpty(() -> escapees(pgids, include), deadlineNanos);
  }

  /** Drops the records of finished background processes; returns how many were dropped. */
  public int cleanupCompleted() {
    int n = 0;
    for (ManagedProcess p : background.values()) {
      if (p.isFinished() && background.remove(p.id(), p)) {
        p.releaseOutput();
        n++;
      }
    }
    return n;
  }

  /** Why no command may start now (a restore replaces the workspace), or null. */
  private volatile String spawnsPaused;

  /**
   * Refuses every new command with CHECKPOINT_BUSY, saying {@code why}, until {@link
   * #resumeSpawns()}. When this returns, no spawn is half-way: every process started before is in
   * {@link #runningCount()}.
   */
  public void pauseSpawns(String why) {
    spawnGate.writeLock().lock();
    try {
      spawnsPaused = why;
    } finally {
      spawnGate.writeLock().unlock();
    }
  }

  public void resumeSpawns() {
    spawnsPaused = null;
  }

  /** Processes the agent started that still run: execs, background processes and its own (git). */
  public int runningCount() {
    int n = 0;
    for (ManagedProcess p : live) {
      if (!p.isFinished()) {
        n++;
      }
    }
    return n;
  }

  /**
   * Kills every process the agent started, running execs included (whose calls then end as
   * killed), and what they left behind in their groups or outside them (SIGTERM, SIGKILL after
   * the grace period); waits until they are gone. Returns how many were running.
   */
  public int killEverything() {
    List<ManagedProcess> targets = new ArrayList<>();
    for (ManagedProcess p : live) {
      if (!p.isFinished()) {
        targets.add(p);
      }
    }
    terminateAll(targets, finishedGroups(), mark -> true, ManagedProcess.KillReason.REQUEST);
    return targets.size();
  }

  /** Refuses new work, terminates every process group the agent started and waits for them. */
  @Override
  public void close() {
    started.handle((v, e) -> null).join(); // a start-up still under way finishes first
    spawnGate.writeLock().lock();
    try {
      if (shuttingDown) {
        return;
      }
      shuttingDown = true;
    } finally {
      spawnGate.writeLock().unlock();
    }
    List<ManagedProcess> targets = new ArrayList<>(live);
    if (!targets.isEmpty()) {
      log.info("stopping {} process(es)", targets.size());
    }
    // Shutdown stops everything of the command user: it is there for the agent's commands only.
    terminateAll(targets, finishedGroups(), commandUser != null ? null : mark -> true, ManagedProcess.KillReason.SHUTDOWN);
    if (watchdog != null) {
      watchdog.close(); // everything is stopped: it can go without a sweep
    }
    scheduler.shutdownNow();
    io.shutdownNow();
    if (nativeSpawner != null) {
      nativeSpawner.loop().close();
    }
    if (fifos != null) {
      fifos.close();
    }
    if (bubblewrap != null) {
      bubblewrap.close();
    }
  }
}
