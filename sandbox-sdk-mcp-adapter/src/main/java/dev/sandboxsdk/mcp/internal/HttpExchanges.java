package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One HTTP exchange at a time: reading its request (body, Accept, MCP-Protocol-Version), writing
 * its response (JSON, plain text, empty), and holding the handler thread until the response,
 * also an SSE stream written from other threads, has ended ({@link #handle}).
 */
final class HttpExchanges {
  /** Logs as {@link HttpTransport}, as before the split: operators filter the log by its name. */
  private static final Logger log = LoggerFactory.getLogger(HttpTransport.class);
  /**
   * Each exchange being handled and how its response ended (see {@link #handle}). Not an exchange
   * attribute: in JDK 17 those belong to the context, shared by every exchange.
   */
  private static final Map<HttpExchange, CompletableFuture<Boolean>> OUTCOMES = new ConcurrentHashMap<>();

  /** What serves an exchange once it is tracked: the transport's routing. */
  @FunctionalInterface
  interface Route {
    void serve(HttpExchange ex) throws IOException;
  }

  private HttpExchanges() {
  }

  /**
   * Handles one exchange and returns only when its response is complete; throws if the response
   * failed or was cut short. That is what makes the JDK server close the connection: it does so
   * only when a handler throws. A handler that returned after a failed write (the client hung up)
   * would leave the socket open for good, one descriptor per response. So every response, also an
   * SSE stream written from other threads, reports its outcome here, and the handler thread waits
   * for it; the pool has a thread per connection for this.
   */
  static void handle(HttpExchange ex, Route route) throws IOException {
    CompletableFuture<Boolean> outcome = new CompletableFuture<>();
    OUTCOMES.put(ex, outcome);
    boolean complete;
    try {
      try {
        route.serve(ex);
      } catch (RuntimeException e) {
        log.error("HTTP {} {} failed", ex.getRequestMethod(), ex.getRequestURI(), e);
        plain(ex, 500, "internal error");
      }
      complete = outcome.get();
    } catch (InterruptedException e) { // shutdown
      Thread.currentThread().interrupt();
      complete = false;
    } catch (ExecutionException e) {
      complete = false;
    } finally {
      OUTCOMES.remove(ex);
    }
    if (!complete) {
      throw new IOException("the response to " + ex.getRequestMethod() + " " + ex.getRequestURI().getPath()
          + " did not complete (the client went away): closing the connection");
    }
  }

  /** Records how an exchange's response ended; the first report counts. */
  static void finished(HttpExchange ex, boolean complete) {
    CompletableFuture<Boolean> outcome = OUTCOMES.get(ex);
    if (outcome != null) {
      outcome.complete(complete);
    }
  }

  /** Whether the MCP-Protocol-Version header is absent or one we speak; else answers 400 and says false. */
  static boolean versionAccepted(HttpExchange ex) throws IOException {
    String v = ex.getRequestHeaders().getFirst("MCP-Protocol-Version");
    if (v != null && !McpServer.PROTOCOL_VERSIONS.contains(v.strip())) {
      rpcError(ex, 400, "unsupported MCP-Protocol-Version '" + v + "'; this server speaks " + McpServer.PROTOCOL_VERSIONS);
      return false;
    }
    return true;
  }

  static boolean accepts(HttpExchange ex, String type) {
    String major = type.substring(0, type.indexOf('/'));
    for (String accept : ex.getRequestHeaders().getOrDefault("Accept", List.of())) {
      for (String part : accept.split(",")) {
        String[] params = part.split(";");
        String t = params[0].strip().toLowerCase(Locale.ROOT);
        boolean refused = false; // q=0 means "not acceptable"
        for (int i = 1; i < params.length; i++) {
          refused |= params[i].strip().matches("(?i)q\\s*=\\s*0(\\.0{0,3})?");
        }
        if (!refused && (t.equals(type) || t.equals("*/*") || t.equals(major + "/*"))) {
          return true;
        }
      }
    }
    return false;
  }

  static void json(HttpExchange ex, int status, ObjectNode body) throws IOException {
    send(ex, status, "application/json", Json.write(body).getBytes(StandardCharsets.UTF_8));
  }

  static void rpcError(HttpExchange ex, int status, String message) throws IOException {
    json(ex, status, JsonRpc.error(null, JsonRpc.INVALID_REQUEST, message));
  }

  static void plain(HttpExchange ex, int status, String text) throws IOException {
    send(ex, status, "text/plain; charset=utf-8", (text + "\n").getBytes(StandardCharsets.UTF_8));
  }

  static void empty(HttpExchange ex, int status) throws IOException {
    boolean complete = false;
    try {
      ex.sendResponseHeaders(status, -1);
      complete = true;
    } finally {
      ex.close();
      finished(ex, complete);
    }
  }

  static void send(HttpExchange ex, int status, String type, byte[] bytes) throws IOException {
    boolean complete = false;
    try {
      ex.getResponseHeaders().set("Content-Type", type);
      ex.sendResponseHeaders(status, bytes.length);
      try (OutputStream os = ex.getResponseBody()) {
        os.write(bytes);
      }
      complete = true; // the stream's close flushed it: a hung-up client fails there
    } finally {
      ex.close();
      finished(ex, complete);
    }
  }

  static byte[] readBody(HttpExchange ex) throws IOException {
    try (InputStream in = ex.getRequestBody()) {
      byte[] bytes = in.readNBytes(HttpTransport.MAX_BODY + 1);
      return bytes.length > HttpTransport.MAX_BODY ? null : bytes;
    }
  }
}
