package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * One MCP connection's state: the negotiated protocol version, the log level the client set, and
 * the tool calls still running (so {@code notifications/cancelled} can find them). Thread-safe.
 */
public final class Session {
  static final List<String> LOG_LEVELS =
      List.of("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency");

  private final String id;
  private final Map<JsonNode, CallContext> calls = new ConcurrentHashMap<>();
  private volatile String protocolVersion;
  private volatile int logLevel = Integer.MAX_VALUE; // no log messages until logging/setLevel
  private volatile long lastUsedNanos = System.nanoTime();
  private volatile boolean closed;

  Session(String id) {
    this.id = id;
  }

  /** The HTTP session id ({@code Mcp-Session-Id}); null on stdio. */
  public String id() {
    return id;
  }

  void protocolVersion(String v) {
    protocolVersion = v;
  }

  /** The negotiated protocol version; null before {@code initialize}. */
  String protocolVersion() {
    return protocolVersion;
  }

  public boolean isInitialized() {
    return protocolVersion != null;
  }

  void logLevel(String level) {
    logLevel = LOG_LEVELS.indexOf(level);
  }

  void log(String level, String text, Outbound out) {
    if (LOG_LEVELS.indexOf(level) >= logLevel) {
      out.send(JsonRpc.notification("notifications/message",
          Json.object().put("level", level).put("logger", "sandbox-mcp").put("data", text)));
    }
  }

  void touch() {
    lastUsedNanos = System.nanoTime();
  }

  /** Nanoseconds since the last message, or 0 while a call is running. */
  public long idleNanos() {
    return calls.isEmpty() ? System.nanoTime() - lastUsedNanos : 0;
  }

  /** Registers a running call; false if a call with this request id is already running. */
  boolean begin(JsonNode requestId, CallContext ctx) {
    if (closed || calls.putIfAbsent(requestId, ctx) != null) {
      return false;
    }
    if (closed) { // ended meanwhile: close() may have missed this call
      calls.remove(requestId, ctx);
      return false;
    }
    return true;
  }

  void end(JsonNode requestId, CallContext ctx) {
    calls.remove(requestId, ctx);
    touch();
  }

  /** Cancels the running call with this id, if any (an unknown or finished id is ignored, as MCP says). */
  void cancel(JsonNode requestId) {
    CallContext ctx = calls.get(requestId);
    if (ctx != null) {
      ctx.cancel();
    }
  }

  public boolean isClosed() {
    return closed;
  }

  /** Ends the session: every running call is cancelled. */
  public void close() {
    closed = true;
    calls.values().forEach(CallContext::cancel);
  }
}
