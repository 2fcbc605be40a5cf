package dev.sandboxsdk.agent.ports;

import com.sun.net.httpserver.HttpExchange;
import dev.sandboxsdk.agent.AgentConfig;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.fs.PathErrors;
import dev.sandboxsdk.agent.http.Json;
import dev.sandboxsdk.agent.http.Query;
import dev.sandboxsdk.agent.http.Responses;
import dev.sandboxsdk.agent.http.Routes;
import dev.sandboxsdk.agent.process.ProcessManager;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The exposed-port routes ({@code POST /api/expose-port}, {@code GET /api/exposed-ports},
 * {@code DELETE /api/exposed-ports/{port}}, Cloudflare's shapes) and the reverse proxy
 * {@code /proxy/{port}/{rest}}, which forwards any request to {@code http://127.0.0.1:{port}/{rest}}
 * where the sandbox's servers listen, and streams the answer back as it arrives.
 *
 * <p>Auth: the agent's bearer token, or for a browser, which cannot send one, the exposure's
 * preview token. The preview URL carries it as the query parameter {@value #TOKEN_PARAM}; the
 * first request with it gets an HttpOnly, SameSite=Strict cookie scoped to {@code /proxy/{port}/}
 * and a redirect to the same URL without the token, so the token leaves the address bar and the
 * server never sees it. Unexposing revokes both.
 *
 * <p>The JDK's HTTP server owns the client connection's framing and never hands over its socket,
 * so the proxy speaks HTTP/1.1 to the server itself (one connection per request, {@code
 * Connection: close}) and re-frames the body: a fixed length stays fixed, anything else is sent
 * chunked, flushed after every read so that server-sent events arrive as they are written.
 * WebSocket needs the raw socket after the 101 answer and is refused (docs/decisions.md). The
 * forwarding is {@link ProxyForwarder}'s, the exposures and their tokens {@link ExposedPorts}';
 * this class checks the request and its auth, and answers.
 */
public final class ProxyRoutes {
  private static final Logger log = LoggerFactory.getLogger(ProxyRoutes.class);
  /** The preview URL's query parameter that carries the exposure's token. */
  static final String TOKEN_PARAM = "sandbox-preview-token";
  /** The path prefix of every proxied request: {@code /proxy/{port}/{rest}}. */
  public static final String PREFIX = ProxyForwarder.PREFIX;
  private static final Pattern METHOD = Pattern.compile("[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}");
  /** What a request target may hold: printable ASCII, no space (the JDK split the request line on them). */
  private static final Pattern TARGET = Pattern.compile("[\\x21-\\x7e]*");
  private static final Set<String> EXPOSE_FIELDS = Set.of("port", "name", "sessionId");

  /** Says whether the request carries the agent's valid bearer token. */
  public interface BearerCheck {
    /** True if {@code exchange} shows the agent's bearer token. */
    boolean valid(HttpExchange exchange);
  }

  private final ProcessManager processes;
  private final AgentConfig config;
  private final ExposedPorts exposed = new ExposedPorts();
  private final boolean authRequired;
  private final BearerCheck bearer;
  /** This agent's preview cookie: agents on one host share the browser's cookies for 127.0.0.1. */
  private final String cookieName;
  private final int agentPort;
  private final ProxyForwarder forwarder;

  /**
   * The proxy of this agent: {@code authRequired} unless the agent runs without a token, {@code
   * bearer} checks it, {@code agentId} names this agent's preview cookie, and {@code agentPort}
   * (the agent's own) is never proxied to.
   */
  public ProxyRoutes(ProcessManager processes, boolean authRequired, BearerCheck bearer, String agentId, int agentPort) {
    this.processes = processes;
    this.config = processes.config();
    this.authRequired = authRequired;
    this.bearer = bearer;
    this.cookieName = ProxyForwarder.COOKIE_PREFIX + agentId;
    this.agentPort = agentPort;
    this.forwarder = new ProxyForwarder(config,
        processes.relay() == null ? Upstreams.direct() : Upstreams.relay(processes.relay()));
  }

  /** Stops the timeout thread and cuts every server connection still open (the agent is stopping). */
  public void close() {
    forwarder.close();
  }

  // ---- exposure routes

  /** Registers exposing, listing and unexposing ports (the proxied requests have their own auth). */
  public void register(Routes routes) {
    routes.on("POST", "/api/expose-port", this::expose)
        .on("GET", "/api/exposed-ports", this::list)
        .on("DELETE", "/api/exposed-ports/", "", port -> port, this::unexpose);
  }

  void expose(HttpExchange exchange) throws IOException {
    Query.none(exchange);
    Json body = Json.read(exchange, config.maxBodyBytes(), processes.outputBudget()).allowOnly(EXPOSE_FIELDS);
    Long port = body.integer("port", Long.MIN_VALUE, Long.MAX_VALUE);
    if (port == null) {
      throw AgentException.invalid("port", "'port' is required (1 to 65535)");
    }
    int p = validPort(port);
    String name = body.string("name");
    if (name != null && (name.isEmpty() || name.length() > ExposedPorts.MAX_NAME_LENGTH
        || name.chars().anyMatch(Character::isISOControl))) {
      throw AgentException.invalid("name", "'name' must be 1 to " + ExposedPorts.MAX_NAME_LENGTH
          + " characters without control characters");
    }
    body.string("sessionId"); // accepted for Cloudflare's clients; there are no sessions here
    ExposedPorts.Exposure e = exposed.expose(p, name);
    log.info("exposed port {}{}", p, name == null ? "" : " (" + name + ")");
    Responses.ok(exchange, describe(e, exchange));
  }

  void list(HttpExchange exchange) throws IOException {
    Query.none(exchange);
    List<PortMessages.Exposure> ports = new ArrayList<>();
    for (ExposedPorts.Exposure e : exposed.list()) {
      ports.add(describe(e, exchange));
    }
    Responses.ok(exchange, new PortMessages.ExposureList(ports));
  }

  void unexpose(HttpExchange exchange, String portText) throws IOException {
    Query.none(exchange);
    int port = validPort(parsePort(portText));
    exposed.unexpose(port);
    log.info("unexposed port {}", port);
    Responses.ok(exchange, new PortMessages.Unexposed(port));
  }

  private PortMessages.Exposure describe(ExposedPorts.Exposure e, HttpExchange exchange) {
    return new PortMessages.Exposure(e.port(), previewUrl(exchange, e), "active", e.name(), e.exposedAt().toString());
  }

  /** The URL a browser opens: the address the client used to reach the agent, the port's path, the token. */
  private String previewUrl(HttpExchange exchange, ExposedPorts.Exposure e) {
    String host = exchange.getRequestHeaders().getFirst("Host");
    if (host == null || !ProxyForwarder.HOST.matcher(host).matches()) {
      host = "127.0.0.1:" + agentPort;
    }
    String url = "http://" + host + PREFIX + e.port() + "/";
    return authRequired ? url + "?" + TOKEN_PARAM + "=" + e.token() : url;
  }

  private static long parsePort(String text) {
    if (!text.matches("[0-9]{1,9}")) {
      throw invalidPort(text);
    }
    return Long.parseLong(text);
  }

  private int validPort(long port) {
    if (port < 1 || port > 65535) {
      throw invalidPort(Long.toString(port));
    }
    if (port == agentPort) {
      throw new AgentException(ErrorCode.INVALID_PORT_NUMBER, "port " + port + " is the agent's own port",
          Map.of("port", port, "reason", "the agent's own port"));
    }
    return (int) port;
  }

  private static AgentException invalidPort(String text) {
    String shown = PathErrors.shorten(text);
    return new AgentException(ErrorCode.INVALID_PORT_NUMBER, "invalid port number '" + shown + "': a port is 1 to 65535",
        Map.of("port", shown, "reason", "not 1 to 65535"));
  }

  // ---- the proxy

  /**
   * Checks the route and auth of a {@code /proxy/...} request. Returns the target to forward to,
   * or null if this already answered (a redirect).
   *
   * @throws AgentException NOT_FOUND, INVALID_PORT_NUMBER, PORT_NOT_EXPOSED or UNAUTHORIZED
   */
  public ProxyTarget authorize(HttpExchange exchange, String rawPath) throws IOException {
    String afterPrefix = rawPath.substring(PREFIX.length());
    int slash = afterPrefix.indexOf('/');
    String portText = slash < 0 ? afterPrefix : afterPrefix.substring(0, slash);
    if (portText.isEmpty()) {
      throw new AgentException(ErrorCode.NOT_FOUND, "no such endpoint: " + PathErrors.shorten(rawPath)
          + " (the proxy's paths are /proxy/{port}/...)", Map.of("path", PathErrors.shorten(rawPath)));
    }
    int port = validPort(parsePort(portText));
    String method = exchange.getRequestMethod();
    if (!METHOD.matcher(method).matches()) {
      throw AgentException.invalid("method", "not an HTTP method the proxy forwards");
    }
    String rawQuery = exchange.getRequestURI().getRawQuery();
    String rest = slash < 0 ? "/" : afterPrefix.substring(slash);
    if (!TARGET.matcher(rest).matches() || (rawQuery != null && !TARGET.matcher(rawQuery).matches())) {
      throw AgentException.invalid("path", "the request target must be printable ASCII (percent-encode the rest)");
    }
    ExposedPorts.Exposure exposure = exposed.get(port);
    if (exposure == null) {
      throw ExposedPorts.notExposed(port);
    }
    List<String> params = rawQuery == null ? List.of() : new ArrayList<>(List.of(rawQuery.split("&", -1)));
    String presented = null;
    for (var it = params.iterator(); it.hasNext();) {
      String p = it.next();
      if (p.startsWith(TOKEN_PARAM + "=")) {
        presented = p.substring(TOKEN_PARAM.length() + 1);
        it.remove();
      }
    }
    String query = params.isEmpty() ? "" : "?" + String.join("&", params);
    if (slash < 0) {
      // /proxy/8080 -> /proxy/8080/: relative links of the server's pages resolve below it.
      redirect(exchange, PREFIX + port + "/" + (rawQuery == null ? "" : "?" + rawQuery), 308);
      return null;
    }
    boolean bearerOk = bearer.valid(exchange);
    if (!authRequired || bearerOk) {
      return new ProxyTarget(port, rest + query, bearerOk);
    }
    if (presented != null) {
      if (!exposure.accepts(presented)) {
        throw new AgentException(ErrorCode.UNAUTHORIZED, "invalid preview token for port " + port
            + " (it was revoked if the port was unexposed)");
      }
      String cookie = cookieName + "=" + exposure.token() + "; Path=" + PREFIX + port + "/; HttpOnly; SameSite=Strict";
      exchange.getResponseHeaders().add("Set-Cookie", cookie);
      if (method.equals("GET") || method.equals("HEAD")) {
        exchange.getResponseHeaders().set("Cache-Control", "no-store");
        exchange.getResponseHeaders().set("Referrer-Policy", "no-referrer");
        String clean = PREFIX + port + rest + query;
        if ("cross-site".equals(exchange.getRequestHeaders().getFirst("Sec-Fetch-Site"))) {
          // A browser does not send a SameSite=Strict cookie on a redirect of a navigation that
          // began on another site; a page that moves on by itself is same-site.
          refreshPage(exchange, clean);
        } else {
          redirect(exchange, clean, 302);
        }
        return null;
      }
      return new ProxyTarget(port, rest + query, false);
    }
    if (hasCookie(exchange, exposure)) {
      return new ProxyTarget(port, rest + query, false);
    }
    throw new AgentException(ErrorCode.UNAUTHORIZED, "port " + port + " needs the agent's bearer token"
        + " or its preview URL (from POST /api/expose-port)");
  }

  private boolean hasCookie(HttpExchange exchange, ExposedPorts.Exposure exposure) {
    List<String> headers = exchange.getRequestHeaders().get("Cookie");
    if (headers == null) {
      return false;
    }
    boolean found = false;
    for (String header : headers) {
      for (String pair : header.split(";")) {
        String p = pair.strip();
        // Check every candidate (there may be several paths' worth): no early exit on content.
        if (p.startsWith(cookieName + "=") && exposure.accepts(p.substring(cookieName.length() + 1))) {
          found = true;
        }
      }
    }
    return found;
  }

  private static void redirect(HttpExchange exchange, String location, int status) throws IOException {
    exchange.getResponseHeaders().set("Location", location);
    exchange.sendResponseHeaders(status, -1);
    exchange.getResponseBody().close();
  }

  private static void refreshPage(HttpExchange exchange, String location) throws IOException {
    String escaped = location.replace("&", "&amp;").replace("\"", "&quot;").replace("'", "&#39;")
        .replace("<", "&lt;").replace(">", "&gt;");
    byte[] page = ("<!doctype html><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"0;url=" + escaped
        + "\"><title>Preview</title><a href=\"" + escaped + "\">Continue to the preview</a>\n")
        .getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", "text/html; charset=utf-8");
    if (exchange.getRequestMethod().equals("HEAD")) {
      exchange.sendResponseHeaders(200, -1);
      exchange.getResponseBody().close();
      return;
    }
    exchange.sendResponseHeaders(200, page.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(page);
    }
  }

  /**
   * Forwards the request to the server and streams its answer back.
   *
   * @throws AgentException SERVICE_NOT_RESPONDING, UPSTREAM_INVALID_RESPONSE or UPSTREAM_TIMEOUT
   *     while no answer has started
   * @throws IOException if the client went away, or the server failed after the answer started
   */
  public void forward(HttpExchange exchange, ProxyTarget target) throws IOException {
    forwarder.forward(new ExchangeClient(exchange), target);
  }

  /** The JDK server's exchange as the forwarder's client. */
  private record ExchangeClient(HttpExchange exchange) implements ProxyClient {
    @Override
    public String method() {
      return exchange.getRequestMethod();
    }

    @Override
    public Map<String, List<String>> headers() {
      return exchange.getRequestHeaders(); // the server's Headers: lookups ignore case
    }

    @Override
    public String header(String name) {
      return exchange.getRequestHeaders().getFirst(name);
    }

    @Override
    public String peerAddress() {
      return exchange.getRemoteAddress().getAddress().getHostAddress();
    }

    @Override
    public InputStream body() {
      return exchange.getRequestBody();
    }

    @Override
    public void addResponseHeader(String name, String value) {
      exchange.getResponseHeaders().add(name, value);
    }

    @Override
    public OutputStream respond(int status, long length) throws IOException {
      exchange.sendResponseHeaders(status, length);
      return exchange.getResponseBody();
    }
  }
}
