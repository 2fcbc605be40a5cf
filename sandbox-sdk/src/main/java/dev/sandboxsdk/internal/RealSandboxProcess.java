package dev.sandboxsdk.internal;

import dev.sandboxsdk.LogEvent;
import dev.sandboxsdk.LogMatch;
import dev.sandboxsdk.LogRange;
import dev.sandboxsdk.PortWaitOptions;
import dev.sandboxsdk.ProcessExitedException;
import dev.sandboxsdk.ProcessInfo;
import dev.sandboxsdk.ProcessLogs;
import dev.sandboxsdk.ProcessNotFoundException;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxProcess;
import dev.sandboxsdk.SandboxTimeoutException;
import dev.sandboxsdk.Signal;
import dev.sandboxsdk.StdStream;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** A handle to a background process; every query goes to the agent. Thread-safe (immutable). */
final class RealSandboxProcess implements SandboxProcess {
  /** Lines longer than this are matched in pieces, so a process without newlines cannot exhaust memory. */
  private static final int MAX_LINE_CHARS = 1 << 20;

  private final RealSandbox sandbox;
  private final String id;
  private final long pid;
  private final String command;

  RealSandboxProcess(RealSandbox sandbox, String id, long pid, String command) {
    this.sandbox = sandbox;
    this.id = id;
    this.pid = pid;
    this.command = command;
  }

  @Override
  public String id() {
    return id;
  }

  @Override
  public long pid() {
    return pid;
  }

  @Override
  public String command() {
    return command;
  }

  @Override
  public ProcessInfo info() {
    return sandbox.processes.processInfo(id);
  }

  @Override
  public void kill(Signal signal) {
    sandbox.killProcess(id, signal);
  }

  @Override
  public ProcessLogs logs() {
    return sandbox.getProcessLogs(id, LogRange.all());
  }

  @Override
  public Flow.Publisher<LogEvent> streamLogs() {
    return sandbox.streamProcessLogs(id);
  }

  @Override
  public ProcessInfo waitForExit() {
    return awaitExit(null, null);
  }

  @Override
  public ProcessInfo waitForExit(Duration timeout) {
    return awaitExit(Checks.positive(timeout, "timeout"), null);
  }

  @Override
  public CompletableFuture<ProcessInfo> onExit() {
    CancellableFuture<ProcessInfo> future = new CancellableFuture<>();
    sandbox.http.ensureOpen();
    sandbox.http.executor().execute(() -> {
      try {
        future.complete(awaitExit(null, future));
      } catch (Throwable t) {
        future.completeExceptionally(t);
      }
    });
    return future;
  }

  /** Follows the event stream from the current end (no replay) until the exit event. */
  private ProcessInfo awaitExit(Duration timeout, CancellableFuture<?> future) {
    Abort abort = new Abort();
    if (future != null) {
      future.onCancel(abort::abort);
    }
    Deadline deadline = Deadline.start(timeout, abort);
    EventCursor<LogEvent> cursor = open(Long.MAX_VALUE, abort, deadline); // 'since' is clamped: live only
    LogEvent.Exit exit = null;
    try (cursor) {
      LogEvent e;
      while ((e = next(cursor, deadline)) != null) {
        if (e instanceof LogEvent.Exit) {
          exit = (LogEvent.Exit) e;
          break;
        }
      }
    } finally {
      deadline.cancel();
    }
    return finalInfo(exit);
  }

  private ProcessInfo finalInfo(LogEvent.Exit exit) {
    try {
      return info();
    } catch (ProcessNotFoundException gone) {
      // autoCleanup may already have dropped the record: build what the exit event told us
      if (exit == null) {
        throw gone;
      }
      return new ProcessInfo(id, pid, command, List.of(), exit.status(), Instant.EPOCH, null, exit.exitCode(),
          exit.signal(), exit.timedOut(), 0, 0);
    }
  }

  @Override
  public LogMatch waitForLog(Pattern pattern) {
    return awaitLog(pattern, null);
  }

  @Override
  public LogMatch waitForLog(Pattern pattern, Duration timeout) {
    return awaitLog(pattern, Checks.positive(timeout, "timeout"));
  }

  private LogMatch awaitLog(Pattern pattern, Duration timeout) {
    Objects.requireNonNull(pattern, "pattern == null");
    Abort abort = new Abort();
    Deadline deadline = Deadline.start(timeout, abort);
    EventCursor<LogEvent> cursor = open(0, abort, deadline);
    StringBuilder[] partial = {new StringBuilder(), new StringBuilder()};
    try (cursor) {
      LogEvent e;
      while ((e = next(cursor, deadline)) != null) {
        if (e instanceof LogEvent.Output) {
          LogEvent.Output out = (LogEvent.Output) e;
          LogMatch m = scan(pattern, out.stream(), partial[out.stream().ordinal()], out.text());
          if (m != null) {
            return m;
          }
        } else if (e instanceof LogEvent.Truncated) {
          partial[((LogEvent.Truncated) e).stream().ordinal()].setLength(0); // the line's start is lost
        } else if (e instanceof LogEvent.Exit) {
          for (StdStream s : StdStream.values()) {
            LogMatch m = match(pattern, s, partial[s.ordinal()].toString());
            if (m != null) {
              return m; // the last line had no newline
            }
          }
          LogEvent.Exit exit = (LogEvent.Exit) e;
          ProcessInfo info;
          try {
            info = info();
          } catch (SandboxException ignored) {
            info = null;
          }
          throw new ProcessExitedException("process " + id + " ended (" + exit.status().wireName() + ", exit code "
              + exit.exitCode() + ") without printing a line that matches /" + pattern.pattern() + "/", info);
        }
      }
    } finally {
      deadline.cancel();
    }
    throw new SandboxException("the log stream of process " + id + " ended without an exit event", null);
  }

  /** Appends text to the stream's pending line and matches every completed line. */
  private static LogMatch scan(Pattern pattern, StdStream stream, StringBuilder pending, String text) {
    int start = 0;
    for (int nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', start)) {
      pending.append(text, start, nl);
      start = nl + 1;
      String line = pending.toString();
      pending.setLength(0);
      LogMatch m = match(pattern, stream, stripCr(line));
      if (m != null) {
        return m;
      }
    }
    pending.append(text, start, text.length());
    if (pending.length() > MAX_LINE_CHARS) {
      String line = pending.toString();
      pending.setLength(0);
      return match(pattern, stream, line);
    }
    return null;
  }

  private static String stripCr(String line) {
    return line.endsWith("\r") ? line.substring(0, line.length() - 1) : line;
  }

  private static LogMatch match(Pattern pattern, StdStream stream, String line) {
    if (line.isEmpty() && !pattern.matcher("").find()) {
      return null;
    }
    Matcher m = pattern.matcher(line);
    if (!m.find()) {
      return null;
    }
    List<String> groups = new ArrayList<>();
    for (int g = 0; g <= m.groupCount(); g++) {
      groups.add(m.group(g));
    }
    return new LogMatch(stream, line, groups);
  }

  private EventCursor<LogEvent> open(long since, Abort abort, Deadline deadline) {
    try {
      return sandbox.processes.openLogStream(id, since, abort);
    } catch (RuntimeException e) {
      deadline.cancel();
      if (deadline.expired()) {
        throw timedOut(deadline);
      }
      throw e;
    }
  }

  private SandboxTimeoutException timedOut(Deadline deadline) {
    return new SandboxTimeoutException("process " + id + ": gave up waiting after " + deadline.timeout.toMillis()
        + " ms (the process keeps running)", null);
  }

  private LogEvent next(EventCursor<LogEvent> cursor, Deadline deadline) {
    try {
      return cursor.next();
    } catch (Exception e) {
      if (deadline.expired()) {
        throw timedOut(deadline);
      }
      if (e instanceof RuntimeException) {
        throw (RuntimeException) e;
      }
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
        throw new SandboxException("process " + id + ": interrupted while waiting", e);
      }
      throw new SandboxException("process " + id + ": " + e, e);
    }
  }

  @Override
  public void waitForPort(int port, PortWaitOptions options) {
    sandbox.waitForPort(port, options, id);
  }

  @Override
  public void writeStdin(String text) {
    Objects.requireNonNull(text, "text == null");
    sandbox.processes.writeStdin(id, text, false);
  }

  @Override
  public void closeStdin() {
    sandbox.processes.writeStdin(id, "", true);
  }

  @Override
  public String toString() {
    return "SandboxProcess{id=" + id + ", pid=" + pid + ", command=" + command + "}";
  }

  /** Aborts the stream of a wait that runs out of time; the blocked open or read then fails. */
  private static final class Deadline {
    final Duration timeout;
    private final ScheduledFuture<?> task;
    private volatile boolean expired;

    private Deadline(Duration timeout, Abort abort) {
      this.timeout = timeout;
      this.task = timeout == null ? null : SdkTimer.get().schedule(() -> {
        expired = true;
        abort.abort();
      }, timeout.toNanos(), TimeUnit.NANOSECONDS);
    }

    static Deadline start(Duration timeout, Abort abort) {
      return new Deadline(timeout, abort);
    }

    boolean expired() {
      return expired;
    }

    void cancel() {
      if (task != null) {
        task.cancel(false);
      }
    }
  }
}
