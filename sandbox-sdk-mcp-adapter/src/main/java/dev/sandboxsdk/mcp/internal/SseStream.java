package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;

/**
 * One open {@code text/event-stream} response: JSON-RPC messages as {@code message} events and
 * keep-alive comments. A write that fails (the client went away) closes it; later writes are
 * dropped. Thread-safe.
 */
final class SseStream {
  private final HttpExchange exchange;
  private final OutputStream body;
  private boolean closed;

  SseStream(HttpExchange exchange) throws IOException {
    this.exchange = exchange;
    exchange.getResponseHeaders().set("Content-Type", "text/event-stream; charset=utf-8");
    exchange.getResponseHeaders().set("Cache-Control", "no-cache, no-transform");
    exchange.getResponseHeaders().set("X-Accel-Buffering", "no");
    exchange.sendResponseHeaders(200, 0);
    this.body = exchange.getResponseBody();
  }

  /** Writes one message event; false if the stream is closed. */
  boolean send(ObjectNode message) {
    return write("event: message\ndata: " + Json.write(message) + "\n\n");
  }

  /** A comment line that keeps proxies and clients from timing the stream out. */
  boolean keepAlive() {
    return write(": keep-alive\n\n");
  }

  synchronized boolean isClosed() {
    return closed;
  }

  private synchronized boolean write(String text) {
    if (closed) {
      return false;
    }
    try {
      body.write(text.getBytes(StandardCharsets.UTF_8));
      body.flush();
      return true;
    } catch (IOException e) {
      close();
      return false;
    }
  }

  synchronized void close() {
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
