package dev.sandboxsdk.agent.process;

import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import java.io.IOException;
import java.io.OutputStream;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One process the agent spawned, in its own process group (it is the group leader, so its pid is
 * also its pgid). Tracks output, exit and the signals the agent sent it.
 *
 * <p>Thread-safe. Output pumps run on pooled threads; state changes happen under {@link #lock} and
 * wake waiters on {@link #changed}.
 */
public final class ManagedProcess {
  private static final Logger log = LoggerFactory.getLogger(ManagedProcess.class);
  private static final int EXIT_CODE_TIMEOUT = 124;

  /** Where a process came from; only BACKGROUND processes are listed and addressable by id. */
  public enum Kind { EXEC, STREAM, BACKGROUND }

  /** Lifecycle states as they appear on the wire (lower case). */
  public enum Status {
    STARTING, RUNNING, COMPLETED, FAILED, KILLED, ERROR;

    public String wireName() {
      return name().toLowerCase(Locale.ROOT);
    }

    public boolean isTerminal() {
      return this != STARTING && this != RUNNING;
    }
  }

  /** Why the agent signalled a process. */
  enum KillReason { REQUEST, TIMEOUT, DISCONNECT, SHUTDOWN }

  /** Receives output bytes; may block (that is how execute/stream paces a process). */
  public interface OutputSink {
    void write(byte[] bytes, int off, int len) throws IOException;
  }

  /** A consistent view of the mutable state. */
  public record Snapshot(
      String id, long pid, String command, List<String> argv, Status status, Instant startTime,
      Instant endTime, Integer exitCode, Signal signal, boolean timedOut, long stdoutBytes,
      long stderrBytes, long durationMs, Integer ptyCols, Integer ptyRows) {}

  private final ReentrantLock lock = new ReentrantLock();
  private final Condition changed = lock.newCondition();

  private final String id;
  private final Kind kind;
  private final ExecSpec spec;
  private final Process process;
  private final long pid;
  private final Instant startTime = Instant.now();
  private final long startNanos = System.nanoTime();
  private final ProcessManager manager;
  private final OutputStream stdin;
  private final OutputLog stdoutLog;
  private final OutputLog stderrLog;
  private final OutputPump stdoutPump;
  private final OutputPump stderrPump;
  private final CompletableFuture<ManagedProcess> finished = new CompletableFuture<>();
  /** The terminal the process runs on, or null (pipes). */
  private final Pty pty;

  // Guarded by lock.
  private Status status = Status.RUNNING;
  private Instant endTime;
  private Integer exitCode;
  private Signal exitSignal;
  private long durationNanos = -1;
  private boolean stdinClosed; // guarded by the stdin stream's monitor
  private final LingeringPipes lingering; // guarded by this
  // Written before signals are sent, read when the process ends.
  private volatile boolean killRequested;
  private volatile boolean timedOut;
  private volatile Signal lastSignalSent;
  /** This command's {@link CommandEnvironment#RUN_VAR} value, shared by everything it starts. */
  private volatile String mark;

  /** @param stdin the pipe to the process's stdin for the stdin endpoint, or null */
  ManagedProcess(String id, Kind kind, ExecSpec spec, Process process, OutputStream stdin, OutputPump stdoutPump,
      OutputPump stderrPump, ProcessManager manager, int logWindow, Pty pty) {
    this.id = id;
    this.pty = pty;
    this.kind = kind;
    this.spec = spec;
    this.process = process;
    this.pid = process.pid();
    this.manager = manager;
    this.stdin = stdin;
    boolean logged = kind == Kind.BACKGROUND;
    this.stdoutLog = logged ? new OutputLog(logWindow, manager.outputBudget()) : null;
    this.stderrLog = logged ? new OutputLog(logWindow, manager.outputBudget()) : null;
    this.stdoutPump = stdoutPump;
    this.stderrPump = stderrPump;
    this.lingering = new LingeringPipes(pid, stdoutPump, stderrPump);
  }

  public String id() {
    return id;
  }

  public long pid() {
    return pid;
  }

  /** This command's {@link CommandEnvironment#RUN_VAR} value. */
  String mark() {
    return mark;
  }

  void mark(String value) {
    this.mark = value;
  }

  public Kind kind() {
    return kind;
  }

  public ExecSpec spec() {
    return spec;
  }

  public String command() {
    return spec.displayCommand();
  }

  /** Completes once the process has exited and its output has been drained. */
  public CompletableFuture<ManagedProcess> finished() {
    return finished;
  }

  public boolean isFinished() {
    return finished.isDone();
  }

  /** Starts copying stdout and stderr to the sinks (null discards). Call once. */
  public void startPumps(OutputSink stdoutSink, OutputSink stderrSink) {
    // Exit is noticed by the pump that sees the second EOF (it then reaps with waitFor, or for a
    // native process waits for the event loop's reaping), or, if a leftover child keeps a pipe
    // open, by the manager's exit watcher. The JDK's Process.onExit() is avoided: on small
    // machines it starts a new thread for every process.
    try {
      stdoutPump.start(stdoutSink, this::onPumpDone);
    } catch (OutputPump.NoThread e) {
      stderrPump.abandonUnstarted();
      throw unreadable();
    }
    try {
      stderrPump.start(stderrSink, this::onPumpDone);
    } catch (OutputPump.NoThread e) {
      throw unreadable(); // stdout's pump reads on until the killed command's end of file
    }
  }

  /**
   * A stream could not be read for want of a thread: the command must not run unread (and
   * unowned, since its caller gets the error), so its tree is killed now, which needs no thread;
   * its exit is noticed once the pumps that did start see end of file.
   */
  private AgentException unreadable() {
    terminate(Signal.SIGKILL, 0, KillReason.DISCONNECT);
    onPumpDone();
    return new AgentException(ErrorCode.TOO_MANY_PROCESSES, "the sandbox has no room for another thread to read"
        + " the command's output (its process limit is reached, e.g. by a fork bomb), so the command was killed:"
        + " kill processes (kill-all) and try again");
  }

  private void onPumpDone() {
    if (pipesClosed()) {
      if (process instanceof NativeProcess) {
        // Reaped by the event loop, which may be this very thread: never wait for it here.
        process.onExit().thenRun(this::maybeFinish);
        return;
      }
      awaitExit();
      maybeFinish();
    }
  }

  /** Sinks that append to this background process's retained windows and wake its readers. */
  void startLoggedPumps() {
    startPumps(logSink(stdoutLog), logSink(stderrLog));
  }

  private OutputSink logSink(OutputLog target) {
    return (bytes, off, len) -> {
      lock.lock();
      try {
        target.append(bytes, off, len);
        changed.signalAll();
      } finally {
        lock.unlock();
      }
    };
  }

  /** How the output budget evicts this process's windows once it has finished (identity matters). */
  private final OutputBudget.Evictable evictable = this::tryEvictWindows;

  /**
   * Drops the retained windows under memory pressure, unless a reader or writer holds the lock
   * right now (the budget then tries another process; it must never wait for a lock).
   */
  private long tryEvictWindows() {
    // Held by this very thread: it is appending to one of these windows (a lingering child of a
    // finished process writes) and must not have the buffer taken from under it.
    if (lock.isHeldByCurrentThread() || !lock.tryLock()) {
      return -1;
    }
    try {
      return evictWindowsLocked();
    } finally {
      lock.unlock();
    }
  }

  private long evictWindowsLocked() {
    long freed = stdoutLog.evict() + stderrLog.evict();
    changed.signalAll();
    return freed;
  }

  /** The record was dropped (cleanup, autoCleanup): give the windows' memory back at once. */
  void releaseOutput() {
    if (stdoutLog == null) {
      return;
    }
    manager.outputBudget().removeEvictable(evictable);
    lock.lock();
    try {
      evictWindowsLocked();
    } finally {
      lock.unlock();
    }
  }

  /**
   * Signals the process group, then SIGKILLs whatever is left of it after {@code graceMs}. Safe to
   * call again; a finished process only has leftover group members (its background children)
   * signalled.
   */
  void terminate(Signal signal, long graceMs, KillReason reason) {
    noteSignalled(signal, reason);
    if (signal != Signal.SIGKILL) { // first: the SIGKILL must come even if signalling below fails
      manager.scheduler().schedule(this::escalate, graceMs, TimeUnit.MILLISECONDS);
    }
    manager.signalTree(this, signal, true);
  }

  private void escalate() {
    boolean groupAlive = !finished.isDone() || !ProcessGroups.existing(List.of(pid)).isEmpty();
    if (!finished.isDone()) {
      lastSignalSent = Signal.SIGKILL;
    }
    if (manager.signalTree(this, Signal.SIGKILL, groupAlive)) {
      log.debug("process {} (pgid {}) or what it started outlived the grace period: SIGKILL", id, pid);
    }
  }

  /** Records that the agent is signalling the process (batch kills send the signal themselves). */
  void noteSignalled(Signal signal, KillReason reason) {
    if (!finished.isDone()) {
      killRequested = true;
      if (reason == KillReason.TIMEOUT) {
        timedOut = true;
      }
      lastSignalSent = signal;
    }
  }

  /** Whether the process runs on a pseudo-terminal. */
  public boolean isTerminal() {
    return pty != null;
  }

  /**
   * Resizes the terminal the process runs on; its foreground process group gets SIGWINCH.
   *
   * @throws IllegalStateException if the process has no terminal, or it has closed
   */
  public void resize(int cols, int rows) throws IOException {
    if (pty == null) {
      throw new IllegalStateException("process " + id + " does not run on a terminal");
    }
    pty.resize(cols, rows);
  }

  /** Writes to the stdin pipe of a background process started with {@code stdin: "pipe"}. */
  public int writeStdin(byte[] data, boolean eof) throws IOException {
    if (stdin == null) {
      throw new IllegalStateException("process " + id + " was not started with stdin: \"pipe\"");
    }
    synchronized (stdin) {
      if (stdinClosed) {
        throw new IllegalStateException("stdin of process " + id + " is already closed");
      }
      if (data.length > 0) {
        stdin.write(data);
        stdin.flush();
      }
      if (eof) {
        stdinClosed = true;
        stdin.close();
      }
    }
    return data.length;
  }

  /** The two output streams of a process. */
  public enum StreamName { STDOUT, STDERR }

  /**
   * Bytes read from a retained window.
   *
   * @param start offset of {@code data[0]}; above the requested offset when the window moved on
   * @param end the stream's total length when read
   * @param finished whether the process had finished before the read (so {@code end} is final
   *     unless a leftover child still writes)
   * @param eof whether the pipe had reached end of file (no process holds it any more) before
   *     the read, so {@code end} is final
   */
  public record LogChunk(long requested, long start, byte[] data, long end, boolean finished, boolean eof) {
    public long droppedBytes() {
      return Math.max(0, start - requested);
    }
  }

  /** Reads up to {@code max} retained bytes of a background process's stream from {@code from}. */
  public LogChunk readLog(StreamName stream, long from, int max) {
    lock.lock();
    try {
      boolean done = status.isTerminal(); // set only after the pipes were drained
      boolean eofSeen = (stream == StreamName.STDOUT ? stdoutPump : stderrPump).isDone();
      OutputLog logOf = logOf(stream);
      long start = Math.max(from, logOf.oldest());
      int n = (int) Math.max(0, Math.min(max, logOf.end() - start));
      byte[] data = new byte[n];
      if (n > 0) {
        logOf.read(start, data, 0, n);
      }
      return new LogChunk(from, Math.min(start, logOf.end()), data, logOf.end(), done, done && eofSeen);
    } finally {
      lock.unlock();
    }
  }

  private OutputLog logOf(StreamName stream) {
    return stream == StreamName.STDOUT ? stdoutLog : stderrLog;
  }

  /** Current length of a background process's stream. */
  public long logEnd(StreamName stream) {
    lock.lock();
    try {
      return logOf(stream).end();
    } finally {
      lock.unlock();
    }
  }

  /**
   * Waits until either stream grows past the given offsets or the process finishes.
   *
   * @return false if the wait timed out with nothing new
   */
  public boolean awaitOutput(long stdoutFrom, long stderrFrom, long timeoutNanos) throws InterruptedException {
    lock.lock();
    try {
      long left = timeoutNanos;
      while (stdoutLog.end() <= stdoutFrom && stderrLog.end() <= stderrFrom && status == Status.RUNNING) {
        if (left <= 0) {
          return false;
        }
        left = changed.awaitNanos(left);
      }
      return true;
    } finally {
      lock.unlock();
    }
  }

  public Snapshot snapshot() {
    lock.lock();
    try {
      long duration = durationNanos >= 0 ? durationNanos : System.nanoTime() - startNanos;
      return new Snapshot(id, pid, command(), spec.argv(), status, startTime, endTime, exitCode,
          exitSignal, timedOut && status.isTerminal(),
          stdoutLog != null ? stdoutLog.end() : stdoutPump.bytes(),
          stderrLog != null ? stderrLog.end() : stderrPump.bytes(),
          TimeUnit.NANOSECONDS.toMillis(duration), pty != null ? pty.cols() : null, pty != null ? pty.rows() : null);
    } finally {
      lock.unlock();
    }
  }

  /** True once both pipes reached end of file. */
  boolean pipesClosed() {
    return stdoutPump.isDone() && stderrPump.isDone();
  }

  /** Polled by the manager's exit watcher for processes whose pipes are still open. */
  void checkExit() {
    if (!finished.isDone() && !process.isAlive()) {
      maybeFinish();
    }
  }

  private synchronized void maybeFinish() {
    if (finished.isDone() || process.isAlive()) {
      return;
    }
    if (!pipesClosed()) {
      // Normally EOF follows the exit at once. If it does not, something else holds the pipe: a
      // background child in the group (give up waiting soon) or one that escaped it (wait longer).
      if (!lingering.drained(System.nanoTime())) {
        return; // the exit watcher calls again
      }
      log.debug("process {} exited but its pipes stay open (held by another process); finishing", id);
    }
    int raw = process.exitValue();
    lock.lock();
    try {
      durationNanos = System.nanoTime() - startNanos;
      endTime = Instant.now();
      // The JDK reports death by signal N as 128+N; we only call it a signal when we sent one.
      Signal sent = lastSignalSent;
      if (killRequested && sent != null && raw > 128) {
        exitSignal = Signal.ofNumber(raw - 128).orElse(null);
      }
      exitCode = timedOut ? EXIT_CODE_TIMEOUT : raw;
      status = killRequested ? Status.KILLED : raw == 0 ? Status.COMPLETED : Status.FAILED;
      changed.signalAll();
    } finally {
      lock.unlock();
    }
    if (stdin != null) {
      // A client's write may hold the stream, blocked on a pipe that a leftover child keeps open
      // and never reads; this thread (for a native process, the event loop that reaps every
      // process) must not wait for it.
      manager.runOnIoPool(() -> closeQuietly(stdin));
    }
    if (stdoutLog != null) {
      manager.outputBudget().addEvictable(evictable);
    }
    manager.onFinished(this);
    finished.complete(this);
  }

  private static void closeQuietly(OutputStream out) {
    if (out == null) {
      return;
    }
    try {
      synchronized (out) {
        out.close();
      }
    } catch (IOException ignored) {
      // the process is gone; nothing to flush
    }
  }

  /** Waits for the process to be reaped (both pipes are closed, so it has exited or soon will). */
  private void awaitExit() {
    boolean interrupted = false;
    while (true) {
      try {
        process.waitFor();
        break;
      } catch (InterruptedException e) {
        interrupted = true; // pool shutdown: still record the exit
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }
}
