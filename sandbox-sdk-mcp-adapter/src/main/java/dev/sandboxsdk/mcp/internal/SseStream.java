package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One open {@code text/event-stream} response: JSON-RPC messages as {@code message} events (with
 * the ids {@link ResumableStream} gives them), the priming event, and keep-alive comments. A write
 * that fails (the client went away) closes it; later writes are dropped. Thread-safe.
 *
 * <p>A client that stops reading makes a write block until its connection dies. Only that
 * stream's writer waits: closing, cancelling and keep-alives never wait for it (they hand the
 * blocking part to a background thread), so one stalled client cannot hold up a cancel, a
 * DELETE, shutdown, or the keep-alives of every other stream.
 */
final class SseStream {
  /** Runs the writes and closes that may block on a stalled client; daemon threads, grown on demand. */
  private static final ExecutorService BACKGROUND = new ThreadPoolExecutor(0, Integer.MAX_VALUE, 5, TimeUnit.SECONDS,
      new SynchronousQueue<>(), r -> {
        Thread t = new Thread(r, "mcp-sse-background");
        t.setDaemon(true);
        return t;
      });

  private final HttpExchange exchange;
  private final OutputStream body;
  private final ReentrantLock lock = new ReentrantLock();
  private final AtomicBoolean keepAlivePending = new AtomicBoolean();
  private volatile boolean closed;

  SseStream(HttpExchange exchange) throws IOException {
    this.exchange = exchange;
    exchange.getResponseHeaders().set("Content-Type", "text/event-stream; charset=utf-8");
    exchange.getResponseHeaders().set("Cache-Control", "no-cache, no-transform");
    exchange.getResponseHeaders().set("X-Accel-Buffering", "no");
    exchange.sendResponseHeaders(200, 0);
    this.body = exchange.getResponseBody();
  }

  /** Writes one message event without an id; false if the stream is closed. Blocks while the client does not read. */
  boolean send(ObjectNode message) {
    return sendEvent(event(null, message));
  }

  /** The text of a {@code message} event, with an {@code id} line unless {@code id} is null. */
  static String event(String id, ObjectNode message) {
    return (id == null ? "" : "id: " + id + "\n") + "event: message\ndata: " + Json.write(message) + "\n\n";
  }

  /**
   * The priming event of a resumable stream (MCP 2025-11-25): an id with empty data, which the
   * client remembers as its Last-Event-ID, and the {@code retry} field, the milliseconds to wait
   * before reconnecting when the server closes the stream.
   */
  static String priming(String id, long retryMillis) {
    return "id: " + id + "\nretry: " + retryMillis + "\ndata: \n\n";
  }

  /** Writes one complete event (its text ends with a blank line); false if the stream is closed. Blocks like {@link #send}. */
  boolean sendEvent(String text) {
    if (closed) {
      return false;
    }
    lock.lock();
    try {
      return write(text);
    } finally {
      lock.unlock();
    }
  }

  /**
   * Holds every later write back until {@link #releaseWrites}: a resumed stream is made the live
   * connection first and then written the events the client missed, and events sent meanwhile
   * must come after those. Call only on a new stream, which no one writes yet: it never blocks.
   */
  void holdWrites() {
    lock.lock();
  }

  /** Writes {@code backlog} (complete events), then lets the held writes through. Only by the thread that held them. */
  void releaseWrites(List<String> backlog) {
    try {
      for (String text : backlog) {
        if (!write(text)) {
          break;
        }
      }
    } finally {
      lock.unlock();
    }
  }

  /**
   * Writes a comment that keeps proxies and clients from timing the stream out, in the
   * background; at most one is pending per stream, so a stalled stream ties up one thread at
   * most. False once the stream is closed.
   */
  boolean keepAlive() {
    if (closed) {
      return false;
    }
    if (keepAlivePending.compareAndSet(false, true)) {
      BACKGROUND.execute(() -> {
        try {
          if (lock.tryLock()) { // else a write is under way: data is flowing, or the client stalled
            try {
              write(": keep-alive\n\n");
            } finally {
              lock.unlock();
            }
          }
        } finally {
          keepAlivePending.set(false);
        }
      });
    }
    return true;
  }

  boolean isClosed() {
    return closed;
  }

  /** Callers hold {@link #lock}. */
  private boolean write(String text) {
    if (closed) {
      return false;
    }
    try {
      body.write(text.getBytes(StandardCharsets.UTF_8));
      body.flush();
      return true;
    } catch (IOException e) {
      closed = true;
      exchange.close();
      HttpExchanges.finished(exchange, false); // the handler throws, so the JDK closes the connection
      return false;
    }
  }

  /**
   * Ends the stream without waiting: later sends are dropped at once, and the final chunk is
   * written when the writer in progress (if any) lets go.
   */
  void close() {
    if (closed) {
      return;
    }
    closed = true;
    // Even with the lock free, writing the final chunk can block on a client that stopped reading.
    BACKGROUND.execute(() -> {
      lock.lock();
      try {
        closeBody();
      } finally {
        lock.unlock();
      }
    });
  }

  private void closeBody() {
    boolean complete = false;
    try {
      body.close(); // the final chunk
      complete = true;
    } catch (IOException ignored) {
      // the client is gone already
    }
    exchange.close();
    HttpExchanges.finished(exchange, complete);
  }
}
