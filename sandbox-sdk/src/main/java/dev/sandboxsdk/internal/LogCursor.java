package dev.sandboxsdk.internal;

import dev.sandboxsdk.LogEvent;
import dev.sandboxsdk.SandboxConnectionException;
import dev.sandboxsdk.SandboxTimeoutException;
import dev.sandboxsdk.StdStream;
import java.io.IOException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A process's event stream that survives dropped connections: it remembers where each stream
 * stopped ({@code offset + bytes} of its last event) and reconnects from there with
 * {@code stdoutSince}/{@code stderrSince}, so every byte is delivered once. The
 * {@link LogEvent.Info} of a reconnect is not repeated. Gives up after {@code maxRetries}
 * failed attempts in a row.
 */
final class LogCursor implements EventCursor<LogEvent> {
  private static final Logger log = LoggerFactory.getLogger(LogCursor.class);

  /** Opens the stream of one process from the given offsets. */
  interface Opener {
    /** {@code stdoutSince}/{@code stderrSince} of -1 mean "use the clamped shared {@code since}". */
    SseCursor<LogEvent> open(long since, long stdoutSince, long stderrSince) throws IOException;
  }

  private final Opener opener;
  private final int maxRetries;
  private final long backoffMillis;
  private volatile SseCursor<LogEvent> current;
  private volatile boolean closed;
  private final long since;
  private long stdoutNext = -1; // -1 until an event of that stream told us its offset
  private long stderrNext = -1;
  private boolean infoSent;
  private boolean finished;
  private boolean connected;
  private int failures;

  private final Runnable onClose;

  /** Where to start: a shared, clamped {@code since}, or exact offsets per stream (-1 = use {@code since}). */
  record Start(long since, long stdout, long stderr) {}

  LogCursor(Opener opener, Start start, int maxRetries, long backoffMillis, Runnable onClose) {
    this.opener = opener;
    this.onClose = onClose;
    this.since = start.since();
    this.stdoutNext = start.stdout();
    this.stderrNext = start.stderr();
    this.maxRetries = maxRetries;
    this.backoffMillis = backoffMillis;
  }

  @Override
  public LogEvent next() throws Exception {
    if (finished) {
      return null;
    }
    for (;;) {
      SseCursor<LogEvent> c = current;
      if (c == null) {
        try {
          c = opener.open(since, stdoutNext, stderrNext);
        } catch (IOException | SandboxConnectionException | SandboxTimeoutException e) {
          // The first connection fails at once; a reconnect counts against the retries.
          if (!connected || closed) {
            throw e;
          }
          retryOrThrow(e);
          continue;
        }
        connected = true;
        current = c;
        if (closed) {
          c.close();
          throw new IOException("the log stream was closed");
        }
      }
      LogEvent event;
      try {
        event = c.next();
      } catch (IOException | SandboxConnectionException | SandboxTimeoutException e) {
        if (closed || c.isClosed()) {
          throw e;
        }
        c.close();
        current = null;
        retryOrThrow(e);
        continue;
      }
      failures = 0;
      if (event instanceof LogEvent.Info) {
        if (infoSent) {
          continue;
        }
        infoSent = true;
        return event;
      }
      if (event instanceof LogEvent.Output) {
        LogEvent.Output out = (LogEvent.Output) event;
        long expected = out.stream() == StdStream.STDOUT ? stdoutNext : stderrNext;
        if (expected >= 0 && out.offset() + out.bytes() <= expected && out.bytes() > 0) {
          continue; // already delivered before the reconnect
        }
        advance(out.stream(), out.nextOffset());
      } else if (event instanceof LogEvent.Truncated) {
        LogEvent.Truncated t = (LogEvent.Truncated) event;
        advance(t.stream(), t.offset());
      } else if (event instanceof LogEvent.Exit) {
        finished = true;
      }
      return event;
    }
  }

  private void retryOrThrow(Exception e) throws InterruptedException, IOException {
    if (++failures > maxRetries) {
      throw new SandboxConnectionException("the process log stream broke and " + maxRetries
          + " reconnects failed; resume from stdout offset " + Math.max(stdoutNext, since) + ", stderr offset "
          + Math.max(stderrNext, since), e);
    }
    log.debug("process log stream broke ({}); reconnecting from stdout {} / stderr {} (attempt {})",
        e.toString(), stdoutNext, stderrNext, failures);
    sleepBackoff();
  }

  private void advance(StdStream stream, long next) {
    if (stream == StdStream.STDOUT) {
      stdoutNext = next;
    } else {
      stderrNext = next;
    }
  }

  private void sleepBackoff() throws InterruptedException, IOException {
    long delay = backoffMillis << Math.min(failures - 1, 5);
    Thread.sleep(delay);
    if (closed) {
      throw new IOException("the log stream was closed");
    }
  }

  @Override
  public boolean isFinished() {
    return finished;
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    SseCursor<LogEvent> c = current;
    if (c != null) {
      c.close();
    }
    onClose.run();
  }
}
