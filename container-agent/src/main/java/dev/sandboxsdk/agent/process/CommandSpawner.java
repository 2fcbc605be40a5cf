package dev.sandboxsdk.agent.process;

import dev.sandboxsdk.agent.AgentConfig;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import java.io.File;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Builds and spawns one command: its command line (command user, isolation prefix, launcher),
 * its environment, the checks of its directory and program, its output FIFOs or terminal and
 * their pumps, its timeout and its stdin data. Owns the spawn gate that pauses spawns and closes
 * them for shutdown, and the spawning parts (native spawner, FIFO pool). Thread-safe.
 */
final class CommandSpawner {
  /** Logs as ProcessManager did before the split, so filters and the documented log lines hold. */
  private static final Logger log = LoggerFactory.getLogger(ProcessManager.class);
  private static final File DEV_NULL = new File("/dev/null");
  private static final File ROOT_DIR = new File("/");

  /** Handed to every process, which reports its exit and asks for signals through it. */
  private final ProcessManager manager;
  private final AgentConfig config;
  private final ProcessRegistry registry;
  private final ProcessGroups groups;
  private final ExecutorService io;
  private final ScheduledExecutorService scheduler;
  private final CommandEnvironment environment;
  private final CommandChecks checks;
  /** The user commands run as ({@code --command-user}), or null to run them as the agent's own. */
  private final CommandUser commandUser;
  /** Wraps every command in bubblewrap ({@code --isolation bwrap}), or null. */
  private final Bubblewrap bubblewrap;
  /** env(1), which changes into a command's directory once it runs as the command user. */
  private final String envBinary;
  /** Numbers the commands of this run for their {@link CommandEnvironment#RUN_VAR} marker. */
  private final AtomicLong spawnSerial = new AtomicLong();
  /*
   * The spawning parts (launcher, nativeSpawner, fifos, and the registry's watchdog) are made on
   * the agent-start thread while the HTTP server is set up: written once there, read only after
   * awaitStarted() has joined it (the server takes no request before that).
   */
  /** What every command is prefixed with: setsid, plus a signal reset when the agent inherited ignored signals. */
  private List<String> launcher;
  /** Starts commands without setsid(1) and reaps them on its event loop; null: the JDK starts them. */
  private NativeSpawner nativeSpawner;
  private FifoPool fifos;

  private volatile boolean shuttingDown;
  /** Why no command may start now (a restore replaces the workspace), or null. */
  private volatile String spawnsPaused;
  /** Spawns hold the read side, shutdown the write side: no process can start unseen by close(). */
  private final java.util.concurrent.locks.ReadWriteLock spawnGate = new java.util.concurrent.locks.ReentrantReadWriteLock();

  /** The process a spawn started, with its output pumps or terminal. */
  private record Started(Process process, OutputPump out, OutputPump err, Pty pty) {}

  CommandSpawner(ProcessManager manager, AgentConfig config, ProcessRegistry registry, ProcessGroups groups,
      ExecutorService io, ScheduledExecutorService scheduler, CommandEnvironment environment, CommandUser commandUser,
      Bubblewrap bubblewrap, String envBinary) {
    this.manager = manager;
    this.config = config;
    this.registry = registry;
    this.groups = groups;
    this.io = io;
    this.scheduler = scheduler;
    this.environment = environment;
    this.commandUser = commandUser;
    this.bubblewrap = bubblewrap;
    this.envBinary = envBinary;
    this.checks = new CommandChecks(config.workspace(), commandUser, bubblewrap);
  }

  /** Makes the spawning parts; runs on the agent-start thread. */
  void start(String setsid, String path) {
    this.nativeSpawner = SpawnSetup.nativeSpawner(config.spawn());
    if (nativeSpawner != null) {
      groups.useLibc();
    }
    // The native spawn makes the session itself and resets every signal: no launcher at all.
    this.launcher = nativeSpawner != null ? List.of() : SpawnSetup.launcher(setsid, envBinary);
    String mkfifo = ProcessGroups.which("mkfifo", path);
    if (mkfifo == null) {
      throw new IllegalStateException("the agent needs mkfifo(1) on its PATH (Debian/Ubuntu: coreutils)");
    }
    try {
      this.fifos = new FifoPool(mkfifo, commandUser != null, nativeSpawner != null);
    } catch (IOException e) {
      throw new IllegalStateException("cannot create the agent's pipe directory: " + e.getMessage(), e);
    }
  }

  /** Whether commands are started by posix_spawn rather than the JDK. */
  boolean isNative() {
    return nativeSpawner != null;
  }

  /** See {@link ProcessManager#pauseSpawns(String)}. */
  void pauseSpawns(String why) {
    spawnGate.writeLock().lock();
    try {
      spawnsPaused = why;
    } finally {
      spawnGate.writeLock().unlock();
    }
  }

  void resumeSpawns() {
    spawnsPaused = null;
  }

  /**
   * Refuses every spawn from now on; when this returns, no spawn is half-way. Returns false if
   * an earlier call did so already.
   */
  boolean closeGate() {
    spawnGate.writeLock().lock();
    try {
      if (shuttingDown) {
        return false;
      }
      shuttingDown = true;
      return true;
    } finally {
      spawnGate.writeLock().unlock();
    }
  }

  boolean isShuttingDown() {
    return shuttingDown;
  }

  /** Releases the spawning parts once every process has been stopped. */
  void close() {
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

  /** Spawns a command under {@code id}, unless the agent is shutting down or spawns are paused. */
  ManagedProcess spawn(String id, ExecSpec spec, ManagedProcess.Kind kind) {
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
    Path cwd = checks.resolveCwd(spec.cwd());
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
    boolean wantsStdin = (spec.stdinPipe() || spec.stdinData() != null) && ptySpec == null;
    List<String> cmd = commandLine(spec, cwd, env, pb, wantsStdin);
    pb.command(cmd);
    if (!wantsStdin) {
      pb.redirectInput(ProcessBuilder.Redirect.from(DEV_NULL));
    }
    registry.admit();
    Started started = start(id, pb, cmd, env, ptySpec, wantsStdin);
    openOutput(id, kind, started);
    Process process = started.process();
    Pty pty = started.pty();
    java.io.OutputStream stdin = pty != null ? pty.input() : wantsStdin ? process.getOutputStream() : null;
    ManagedProcess p = new ManagedProcess(id, kind, spec, process, spec.stdinPipe() ? stdin : null, started.out(),
        started.err(), manager, config.logWindowBytes(), pty);
    p.mark(mark);
    registry.register(p);
    if (spec.timeoutMs() != null) {
      scheduleTimeout(p, spec.timeoutMs());
    }
    if (spec.stdinData() != null) {
      feedStdin(id, stdin, spec.stdinData().getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }
    log.debug("started {} pid {}: {}", id, p.pid(), kind);
    return p;
  }

  /**
   * The command line that runs {@code spec} in {@code cwd}: user switch, isolation and launcher
   * prefixes, then the program (checked first) or {@code /bin/sh -c}. Sets {@code pb}'s directory.
   */
  private List<String> commandLine(ExecSpec spec, Path cwd, Map<String, String> env, ProcessBuilder pb,
      boolean wantsStdin) {
    List<String> cmd = new ArrayList<>();
    if (commandUser != null) {
      // Switch user first, then let env change directory as that user: the root agent itself may
      // not be allowed into the user's directories (it has no CAP_DAC_READ_SEARCH). Both exec in
      // place, like setsid, so pid == pgid still holds.
      if (wantsStdin) {
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
      checks.checkProgram(spec.argv().get(0), cwd, env.get("PATH"));
      cmd.addAll(spec.argv());
    } else {
      cmd.add("/bin/sh");
      cmd.add("-c");
      cmd.add(spec.shellCommand());
    }
    return cmd;
  }

  /**
   * Starts the process on a terminal, or with its output on FIFOs (native spawn or the JDK's).
   * On failure gives back its admission and what it had opened.
   */
  private Started start(String id, ProcessBuilder pb, List<String> cmd, Map<String, String> env,
      ExecSpec.Pty ptySpec, boolean wantsStdin) {
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
      registry.releaseAdmission();
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
    return new Started(process, out, err, pty);
  }

  /** Opens the agent's ends of the output FIFOs of a process that has just started. */
  private void openOutput(String id, ManagedProcess.Kind kind, Started started) {
    // A background process's output goes to its windows, which never block: the event loop reads
    // it. Execs keep a pooled thread per stream, whose sink may block to pace the process.
    EventLoop loop = nativeSpawner != null && kind == ManagedProcess.Kind.BACKGROUND ? nativeSpawner.loop() : null;
    try {
      if (started.pty() == null) { // a terminal's pump reads the master, which is open already
        started.out().spawned(loop);
        started.err().spawned(loop);
      }
    } catch (IOException e) {
      // Cannot happen short of the FIFO vanishing between two opens; the process must not run unread.
      groups.signal(List.of(started.process().pid()), Signal.SIGKILL);
      started.out().abandon();
      started.err().abandon();
      registry.releaseAdmission();
      throw new AgentException(ErrorCode.INTERNAL_ERROR, "cannot open the output pipe of the new process: " + e.getMessage());
    }
  }

  private void scheduleTimeout(ManagedProcess p, long timeoutMs) {
    scheduler.schedule(() -> {
      if (!p.isFinished()) {
        log.debug("process {} timed out after {} ms", p.id(), timeoutMs);
        p.terminate(Signal.SIGTERM, config.graceMs(), ManagedProcess.KillReason.TIMEOUT);
      }
    }, timeoutMs, TimeUnit.MILLISECONDS);
  }

  /** Writes a request's stdin data to the process on a pooled thread, then closes its stdin. */
  private void feedStdin(String id, java.io.OutputStream stdin, byte[] data) {
    io.execute(() -> {
      try (stdin) {
        stdin.write(data);
      } catch (IOException e) {
        log.debug("stdin of {} closed early: {}", id, e.toString());
      }
    });
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
}
