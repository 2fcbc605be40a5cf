package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * Where the messages belonging to one client request go: notifications about it (progress, log
 * messages) and then its response. The transport decides how (a stdout line, an SSE event, a JSON
 * body). Implementations are thread-safe.
 */
public interface Outbound {
  /** Sends a notification or the final response. */
  void send(ObjectNode message);

  /** Nothing more will be sent for this request (after the response, or instead of it when cancelled). */
  default void finish() {
  }
}
