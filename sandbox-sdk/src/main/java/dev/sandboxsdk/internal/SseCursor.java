package dev.sandboxsdk.internal;

import dev.sandboxsdk.SandboxConnectionException;
import dev.sandboxsdk.SandboxTimeoutException;
import java.io.IOException;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Predicate;
import okhttp3.Call;
import okhttp3.Response;

/**
 * One open event stream of the agent: maps each event's JSON bytes with {@code mapper} (null =
 * unknown type, skipped) and knows which event is the final one. A stream that ends before its final event is
 * an error, never a quiet end.
 */
final class SseCursor<T> implements EventCursor<T> {

  /** Maps one event, given as its JSON text in {@code bytes[from, to)}, valid only during the call. */
  @FunctionalInterface
  interface Mapper<T> {
    T map(byte[] bytes, int from, int to);
  }

  private final Call call;
  private final Response response;
  private final SseReader reader;
  private final Mapper<T> mapper;
  private final Predicate<T> isFinal;
  private final String what;
  private final Duration idleTimeout;
  private final Runnable onClose;
  private final IdleWatch watch;
  private final AtomicBoolean closed = new AtomicBoolean();
  private volatile boolean finished;

  SseCursor(Call call, Response response, long maxLineBytes, Mapper<T> mapper, Predicate<T> isFinal,
      String what, Duration idleTimeout, IdleWatch watch, Runnable onClose) {
    this.call = call;
    this.response = response;
    this.watch = watch;
    this.reader = new SseReader(response.body().source(), maxLineBytes, watch);
    this.mapper = mapper;
    this.isFinal = isFinal;
    this.what = what;
    this.idleTimeout = idleTimeout;
    this.onClose = onClose;
  }

  @Override
  public T next() throws IOException {
    if (finished) {
      return null;
    }
    for (;;) {
      if (closed.get()) {
        throw new IOException(what + ": the stream was closed"); // okio would say IllegalStateException("closed")
      }
      boolean event;
      try {
        event = reader.next();
      } catch (IllegalStateException e) {
        if (closed.get()) {
          throw new IOException(what + ": the stream was closed", e);
        }
        throw e;
      } catch (SocketTimeoutException e) {
        throw silent(e);
      } catch (IOException e) {
        if (watch.expired() && !closed.get()) {
          throw silent(e); // the watch cancelled the call
        }
        throw e;
      }
      if (!event) {
        throw new SandboxConnectionException(what + ": the stream ended before its final event"
            + " (the connection broke or the agent stopped); the outcome is unknown", null);
      }
      T mapped = mapper.map(reader.bytes(), reader.from(), reader.to());
      if (mapped == null) {
        continue; // an event type this SDK does not know: newer agent
      }
      if (isFinal.test(mapped)) {
        finished = true;
      }
      return mapped;
    }
  }

  private SandboxTimeoutException silent(IOException cause) {
    return new SandboxTimeoutException(what + ": the stream was silent for more than " + idleTimeout.toMillis()
        + " ms (no event and no keep-alive), so the connection is taken for dead", cause);
  }

  @Override
  public boolean isFinished() {
    return finished;
  }

  boolean isClosed() {
    return closed.get();
  }

  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      watch.close();
      call.cancel(); // unblocks a read in progress on another thread
      try {
        response.close();
      } catch (RuntimeException ignored) {
        // closing a cancelled exchange may complain; the connection is gone either way
      }
      onClose.run();
    }
  }
}
