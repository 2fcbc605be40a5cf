package dev.sandboxsdk.agent.http;

import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import dev.sandboxsdk.agent.AgentConfig;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.process.ProcessManager;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Routes every request of protocol v1, checks the bearer token, and turns every failure into the
 * protocol's JSON error. Unexpected exceptions become INTERNAL_ERROR without leaking details.
 */
public final class ApiHandler implements HttpHandler {
  private static final Logger log = LoggerFactory.getLogger(ApiHandler.class);
  public static final int PROTOCOL_VERSION = 1;

  private final AgentConfig config;
  private final byte[] tokenDigest;
  private final String version;
  private final ExecEndpoints exec;
  private final ProcessEndpoints process;

  public ApiHandler(ProcessManager processes, String token, String version) {
    this.config = processes.config();
    this.tokenDigest = token == null ? null : sha256(token);
    this.version = version;
    this.exec = new ExecEndpoints(processes);
    this.process = new ProcessEndpoints(processes);
  }

  private final java.util.concurrent.atomic.AtomicInteger inFlight = new java.util.concurrent.atomic.AtomicInteger();

  /** Requests being handled right now (streams included). */
  public int inFlight() {
    return inFlight.get();
  }

  @Override
  public void handle(HttpExchange exchange) throws IOException {
    inFlight.incrementAndGet();
    try {
      route(exchange);
    } catch (AgentException e) {
      respondError(exchange, e);
    } catch (IOException e) {
      log.debug("{} {}: connection problem: {}", exchange.getRequestMethod(), exchange.getRequestURI().getRawPath(), e.toString());
    } catch (RuntimeException | Error e) {
      log.error("{} {} failed", exchange.getRequestMethod(), exchange.getRequestURI().getRawPath(), e);
      respondError(exchange, new AgentException(ErrorCode.INTERNAL_ERROR, "internal error: " + e.getClass().getSimpleName()));
    } finally {
      exchange.close();
      inFlight.decrementAndGet();
    }
  }

  private static void respondError(HttpExchange exchange, AgentException e) {
    if (exchange.getResponseCode() != -1) {
      return; // headers already went out (a stream); the stream itself reports errors
    }
    if (e.code() == ErrorCode.UNAUTHORIZED) {
      exchange.getResponseHeaders().set("WWW-Authenticate", "Bearer realm=\"sandbox-agent\"");
    }
    if (!drainRequestBody(exchange)) {
      // An unread body would be taken for the next request; tell the client not to reuse this connection.
      exchange.getResponseHeaders().set("Connection", "close");
    }
    if (e.code() == ErrorCode.METHOD_NOT_ALLOWED) {
      exchange.getResponseHeaders().set("Allow", String.valueOf(e.context().get("allow")));
    }
    try {
      Responses.error(exchange, e);
    } catch (IOException io) {
      log.debug("could not send error {}: {}", e.code(), io.toString());
    }
  }

  /** Reads what is left of a request body, up to a small limit; true if it reached the end. */
  private static boolean drainRequestBody(HttpExchange exchange) {
    try {
      InputStream in = exchange.getRequestBody();
      long left = 64 * 1024;
      byte[] skip = new byte[8192];
      while (left > 0) {
        int n = in.read(skip, 0, (int) Math.min(skip.length, left));
        if (n < 0) {
          return true;
        }
        left -= n;
      }
      return in.read() < 0;
    } catch (IOException e) {
      return false;
    }
  }

  private void route(HttpExchange exchange) throws IOException {
    String method = exchange.getRequestMethod();
    String path = exchange.getRequestURI().getRawPath();
    if (path.length() > 1 && path.endsWith("/")) {
      path = path.substring(0, path.length() - 1);
    }
    if (path.equals("/api/ping")) {
      allow(method, "GET");
      Query.none(exchange);
      ObjectNode body = Json.object();
      body.put("status", "healthy");
      Responses.ok(exchange, body);
      return;
    }
    if (!path.startsWith("/api/")) {
      throw notFound(path);
    }
    authenticate(exchange);
    switch (path) {
      case "/api/version": {
        allow(method, "GET");
        Query.none(exchange);
        ObjectNode body = Json.object();
        body.put("version", version);
        body.put("protocol", PROTOCOL_VERSION);
        // Limits a client calibrates against, e.g. how long a stream may stay silent before it
        // is dead (two keep-alive intervals), or how far back a reader can resume.
        ObjectNode limits = body.putObject("limits");
        limits.put("keepAliveMs", config.keepAliveMs());
        limits.put("graceMs", config.graceMs());
        limits.put("maxProcesses", config.maxProcesses());
        limits.put("maxBodyBytes", config.maxBodyBytes());
        limits.put("logWindowBytes", config.logWindowBytes());
        exec.describeOutput(body, limits);
        Responses.ok(exchange, body);
        return;
      }
      case "/api/execute":
        allow(method, "POST");
        Query.none(exchange);
        exec.execute(exchange);
        return;
      case "/api/execute/stream":
        allow(method, "POST");
        Query.none(exchange);
        exec.executeStream(exchange);
        return;
      case "/api/process/start":
        allow(method, "POST");
        process.start(exchange);
        return;
      case "/api/process/list":
        allow(method, "GET");
        process.list(exchange);
        return;
      case "/api/process/kill-all":
        allow(method, "DELETE");
        process.killAll(exchange);
        return;
      case "/api/process/cleanup":
        allow(method, "POST");
        process.cleanup(exchange);
        return;
      default:
        break;
    }
    if (path.startsWith("/api/process/")) {
      String[] parts = path.substring("/api/process/".length()).split("/", -1);
      String id = decode(parts[0]);
      if (parts.length == 1 && !id.isEmpty()) {
        if (method.equals("GET")) {
          process.get(exchange, id);
        } else {
          allow(method, "DELETE", "GET");
          process.kill(exchange, id);
        }
        return;
      }
      if (parts.length == 2 && !id.isEmpty()) {
        switch (parts[1]) {
          case "logs":
            allow(method, "GET");
            process.logs(exchange, id);
            return;
          case "stream":
            allow(method, "GET");
            process.stream(exchange, id);
            return;
          case "stdin":
            allow(method, "POST");
            Query.none(exchange);
            process.stdin(exchange, id);
            return;
          default:
            break;
        }
      }
    }
    throw notFound(path);
  }

  private static String decode(String segment) {
    try {
      return java.net.URLDecoder.decode(segment.replace("+", "%2B"), StandardCharsets.UTF_8);
    } catch (IllegalArgumentException e) {
      throw AgentException.invalid("processId", "malformed process id in path");
    }
  }

  private static AgentException notFound(String path) {
    String shown = path.length() > 200 ? path.substring(0, 200) + "..." : path;
    return new AgentException(ErrorCode.NOT_FOUND, "no such endpoint: " + shown, Map.of("path", shown));
  }

  /** Throws 405 unless {@code method} is the first allowed one (further ones are only listed). */
  private static void allow(String method, String expected, String... alsoAllowed) {
    if (method.equals(expected)) {
      return;
    }
    StringBuilder allowed = new StringBuilder(expected);
    for (String m : alsoAllowed) {
      allowed.append(", ").append(m);
    }
    throw new AgentException(ErrorCode.METHOD_NOT_ALLOWED,
        "method " + method + " is not allowed here; use " + allowed, Map.of("allow", allowed.toString()));
  }

  private void authenticate(HttpExchange exchange) {
    if (tokenDigest == null) {
      return;
    }
    String header = exchange.getRequestHeaders().getFirst("Authorization");
    String presented = null;
    if (header != null && header.regionMatches(true, 0, "Bearer ", 0, 7)) {
      presented = header.substring(7).trim();
    }
    // Compare fixed-length digests in constant time, so neither content nor length leaks.
    if (presented == null || !MessageDigest.isEqual(tokenDigest, sha256(presented))) {
      throw new AgentException(ErrorCode.UNAUTHORIZED, presented == null
          ? "missing bearer token: send 'Authorization: Bearer <token>'"
          : "invalid bearer token");
    }
  }

  private static byte[] sha256(String s) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required by every JDK", e);
    }
  }
}
