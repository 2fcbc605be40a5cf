package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One open {@code text/event-stream} response: JSON-RPC messages as {@code message} events and
 * keep-alive comments. A write that fails (the client went away) closes it; later writes are
 * dropped. Thread-safe.
 */
final class SseStream {
  private final HttpExchange exchange;
  private final OutputStream body;
  private final ReentrantLock lock = new ReentrantLock();
  private volatile boolean closed;

  SseStream(HttpExchange exchange) throws IOException {
    this.exchange = exchange;
    exchange.getResponseHeaders().set("Content-Type", "text/event-stream; charset=utf-8");
    exchange.getResponseHeaders().set("Cache-Control", "no-cache, no-transform");
    exchange.getResponseHeaders().set("X-Accel-Buffering", "no");
    exchange.sendResponseHeaders(200, 0);
    this.body = exchange.getResponseBody();
  }

  /** Writes one message event; false if the stream is closed. Blocks while the client does not read. */
  boolean send(ObjectNode message) {
    lock.lock();
    try {
      return write("event: message\ndata: " + Json.write(message) + "\n\n");
    } finally {
      lock.unlock();
    }
  }

  /**
   * A comment line that keeps proxies and clients from timing the stream out. Skipped while a
   * write is under way (then data is flowing, or that client is stalled and must not hold up the
   * keep-alives of every other stream); false once the stream is closed.
   */
  boolean keepAlive() {
    if (!lock.tryLock()) {
      return true;
    }
    try {
      return write(": keep-alive\n\n");
    } finally {
      lock.unlock();
    }
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
      closeLocked();
      return false;
    }
  }

  void close() {
    lock.lock();
    try {
      closeLocked();
    } finally {
      lock.unlock();
    }
  }

  private void closeLocked() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      body.close();
    } catch (IOException ignored) {
      // the client is gone already
    }
    exchange.close();
  }
}
