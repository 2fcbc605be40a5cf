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

  /**
   * Closes the connection this request's messages travel on before the response, if the transport
   * lets the client resume it (Streamable HTTP: the client reconnects with GET and
   * {@code Last-Event-ID} and gets the rest there). Later messages are still sent. Does nothing
   * on other transports.
   */
  default void closeConnection() {
  }
}
