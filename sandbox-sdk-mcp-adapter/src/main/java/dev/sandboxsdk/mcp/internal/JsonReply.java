package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import java.io.IOException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Answers an exchange with the request's response as a JSON body, or 202 when none comes.
 * Notifications have no channel in this mode and are dropped (only tools/call sends any, and it
 * is answered with SSE).
 */
final class JsonReply implements Outbound {
  /** Logs as {@link HttpTransport}, as before the split: operators filter the log by its name. */
  private static final Logger log = LoggerFactory.getLogger(HttpTransport.class);

  private final HttpExchange ex;
  private final String sessionId;
  private final int errorStatus;
  private boolean done;

  /** {@code errorStatus}: 200 for a request's JSON-RPC error; 400 when a notification was not acceptable. */
  JsonReply(HttpExchange ex, String sessionId, int errorStatus) {
    this.ex = ex;
    this.sessionId = sessionId;
    this.errorStatus = errorStatus;
  }

  @Override
  public synchronized void send(ObjectNode m) {
    if (done || !m.has("id") || !m.has("result") && !m.has("error")) {
      return;
    }
    done = true;
    if (sessionId != null && m.has("result")) {
      ex.getResponseHeaders().set("Mcp-Session-Id", sessionId);
    }
    try {
      HttpExchanges.json(ex, m.has("error") ? errorStatus : 200, m);
    } catch (IOException e) { // send() reported the failure: the handler closes the connection
      log.debug("client went away before its response: {}", e.toString());
    }
  }

  @Override
  public synchronized void finish() {
    if (!done) {
      done = true;
      try {
        HttpExchanges.empty(ex, 202);
      } catch (IOException e) {
        log.debug("client went away: {}", e.toString());
      }
    }
  }
}
