package dev.sandboxsdk.agent.http;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpExchange;
import dev.sandboxsdk.agent.AgentConfig;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.fs.PathErrors;
import dev.sandboxsdk.agent.process.ProcessManager;
import java.io.BufferedOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
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
 * WebSocket needs the raw socket after the 101 answer and is refused (docs/decisions.md).
 */
final class ProxyEndpoints {
  private static final Logger log = LoggerFactory.getLogger(ProxyEndpoints.class);
  /** The preview URL's query parameter that carries the exposure's token. */
  static final String TOKEN_PARAM = "sandbox-preview-token";
  /** Every preview cookie's name starts so; such cookies never reach a server, whichever agent set them. */
  static final String COOKIE_PREFIX = "sandbox-preview-";
  static final String PREFIX = "/proxy/";
  /** The largest response head (status line and headers) accepted from a server. */
  static final int MAX_HEAD_BYTES = 64 * 1024;
  private static final int BUFFER = 16 * 1024;
  /** How long a server may stay silent towards a preview (non-bearer) client, at most. */
  static final long PREVIEW_SILENCE_MS = 30_000;
  /** RFC 9110 hop-by-hop headers, plus the old Proxy-Connection; never forwarded either way. */
  private static final Set<String> HOP_BY_HOP = Set.of("connection", "keep-alive", "proxy-authenticate",
      "proxy-authorization", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade");
  private static final Pattern METHOD = Pattern.compile("[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}");
  /** What a request target may hold: printable ASCII, no space (the JDK split the request line on them). */
  private static final Pattern TARGET = Pattern.compile("[\\x21-\\x7e]*");
  private static final Pattern HOST = Pattern.compile("[A-Za-z0-9.:\\[\\]-]{1,262}");
  private static final Set<String> EXPOSE_FIELDS = Set.of("port", "name", "sessionId");

  /** A request that passed auth: the port and the target to send the server. */
  record Target(int port, String pathAndQuery, boolean bearer) { }

  /** Says whether the request carries the agent's valid bearer token. */
  interface BearerCheck {
    boolean valid(HttpExchange exchange);
  }

  private final ProcessManager processes;
  private final AgentConfig config;
  private final ExposedPorts exposed = new ExposedPorts();
  private final Upstreams upstreams;
  private final boolean authRequired;
  private final BearerCheck bearer;
  /** This agent's preview cookie: agents on one host share the browser's cookies for 127.0.0.1. */
  private final String cookieName;
  private final int agentPort;
  private final Timeouts timeouts;

  ProxyEndpoints(ProcessManager processes, boolean authRequired, BearerCheck bearer, String agentId, int agentPort) {
    this.processes = processes;
    this.config = processes.config();
    this.upstreams = processes.relay() == null ? Upstreams.direct() : Upstreams.relay(processes.relay());
    this.authRequired = authRequired;
    this.bearer = bearer;
    this.cookieName = COOKIE_PREFIX + agentId;
    this.agentPort = agentPort;
    this.timeouts = new Timeouts(config.proxyTimeoutMs());
  }

  /** Stops the timeout thread and cuts every server connection still open (the agent is stopping). */
  void close() {
    timeouts.close();
  }

  // ---- exposure routes

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
    ObjectNode answer = Json.object();
    describe(answer, e, exchange);
    Responses.ok(exchange, answer);
  }

  void list(HttpExchange exchange) throws IOException {
    Query.none(exchange);
    ObjectNode answer = Json.object();
    ArrayNode ports = answer.putArray("ports");
    for (ExposedPorts.Exposure e : exposed.list()) {
      describe(ports.addObject(), e, exchange);
    }
    Responses.ok(exchange, answer);
  }

  void unexpose(HttpExchange exchange, String portText) throws IOException {
    Query.none(exchange);
    int port = validPort(parsePort(portText));
    exposed.unexpose(port);
    log.info("unexposed port {}", port);
    ObjectNode answer = Json.object();
    answer.put("port", port);
    Responses.ok(exchange, answer);
  }

  private void describe(ObjectNode node, ExposedPorts.Exposure e, HttpExchange exchange) {
    node.put("port", e.port());
    node.put("url", previewUrl(exchange, e));
    node.put("status", "active");
    if (e.name() != null) {
      node.put("name", e.name());
    }
    node.put("exposedAt", e.exposedAt().toString());
  }

  /** The URL a browser opens: the address the client used to reach the agent, the port's path, the token. */
  private String previewUrl(HttpExchange exchange, ExposedPorts.Exposure e) {
    String host = exchange.getRequestHeaders().getFirst("Host");
    if (host == null || !HOST.matcher(host).matches()) {
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
  Target authorize(HttpExchange exchange, String rawPath) throws IOException {
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
      return new Target(port, rest + query, bearerOk);
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
      return new Target(port, rest + query, false);
    }
    if (hasCookie(exchange, exposure)) {
      return new Target(port, rest + query, false);
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
  void forward(HttpExchange exchange, Target target) throws IOException {
    Upstreams.Connection up;
    try {
      up = upstreams.open(target.port());
    } catch (ConnectException e) {
      throw notListening(target.port());
    } catch (SocketTimeoutException e) {
      throw new AgentException(ErrorCode.UPSTREAM_TIMEOUT, "connecting to port " + target.port()
          + " in the sandbox timed out", Map.of("port", target.port()));
    } catch (IOException e) {
      log.warn("cannot reach port {} in the sandbox: {}", target.port(), e.getMessage());
      throw new AgentException(ErrorCode.SERVICE_NOT_RESPONDING, "cannot reach port " + target.port()
          + " in the sandbox: " + e.getMessage(), Map.of("port", target.port()));
    }
    // A preview client's exchange waits on a silent server for less long: it holds one of the few
    // connections preview clients get, and the agent cannot see its client hang up meanwhile.
    Timeouts.Watch watch = timeouts.watch(up, target.bearer() ? config.proxyTimeoutMs()
        : Math.min(config.proxyTimeoutMs(), PREVIEW_SILENCE_MS));
    try {
      pass(exchange, target, up, watch);
    } finally {
      timeouts.release(watch);
      up.close();
    }
  }

  private static AgentException notListening(int port) {
    return new AgentException(ErrorCode.SERVICE_NOT_RESPONDING, "nothing listens on port " + port
        + " in the sandbox (is the server running, and bound to 127.0.0.1 or 0.0.0.0?)", Map.of("port", port));
  }

  private void pass(HttpExchange exchange, Target target, Upstreams.Connection up, Timeouts.Watch watch)
      throws IOException {
    Headers in = exchange.getRequestHeaders();
    boolean chunkedBody = in.containsKey("Transfer-encoding");
    String length = chunkedBody ? null : in.getFirst("Content-length");
    OutputStream toServer = new BufferedOutputStream(up.out(), BUFFER);
    try {
      toServer.write(head(exchange, target, chunkedBody, length).getBytes(StandardCharsets.ISO_8859_1));
      if (chunkedBody || (length != null && !length.equals("0"))) {
        sendBody(exchange.getRequestBody(), toServer, chunkedBody, watch);
      }
      toServer.flush();
    } catch (ClientGone e) {
      throw e.getCause();
    } catch (IOException e) {
      throw upstreamFailed(target, watch, "the server closed the connection while receiving the request");
    }
    UpstreamReader fromServer = new UpstreamReader(up.in(), watch);
    Head head;
    try {
      head = readHead(fromServer);
      while (head.status() >= 100 && head.status() < 200) {
        if (head.status() == 101) {
          throw new AgentException(ErrorCode.UPSTREAM_INVALID_RESPONSE, "the server switched protocols (101),"
              + " which the proxy does not forward (no WebSocket)", Map.of("port", target.port()));
        }
        head = readHead(fromServer); // 100 Continue, 103 Early Hints: the final answer follows
      }
    } catch (IOException e) {
      throw upstreamFailed(target, watch, e instanceof EOFException
          ? "the server closed the connection without an answer" : "reading the server's answer failed: " + e.getMessage());
    }
    Headers out = exchange.getResponseHeaders();
    Set<String> listed = connectionListed(head.headers());
    // Behind a front proxy that names its own prefix the browser's paths are the front's: leave them.
    boolean ownPrefix = !exchange.getRequestHeaders().containsKey("X-forwarded-prefix");
    for (String[] h : head.headers()) {
      String name = h[0].toLowerCase(Locale.ROOT);
      if (!HOP_BY_HOP.contains(name) && !listed.contains(name) && !name.equals("content-length")) {
        out.add(h[0], ownPrefix && name.equals("location") ? underPrefix(h[1], target.port()) : h[1]);
      }
    }
    String te = head.first("transfer-encoding");
    String cl = head.first("content-length");
    boolean noBody = exchange.getRequestMethod().equals("HEAD") || head.status() == 204 || head.status() == 304;
    if (noBody) {
      exchange.sendResponseHeaders(head.status(), -1);
      exchange.getResponseBody().close();
      return;
    }
    InputStream body;
    long fixed = -1;
    if (te != null) {
      if (!te.toLowerCase(Locale.ROOT).strip().endsWith("chunked")) {
        throw upstreamFailed(target, watch, "the server's answer has an unsupported Transfer-Encoding: " + te);
      }
      body = new ChunkedReader(fromServer);
    } else if (cl != null) {
      try {
        fixed = Long.parseLong(cl.strip());
      } catch (NumberFormatException e) {
        fixed = -2;
      }
      if (fixed < 0) {
        throw upstreamFailed(target, watch, "the server's answer has an invalid Content-Length");
      }
      body = fromServer;
    } else {
      body = fromServer; // until the server closes
    }
    // From here on the answer has started: failures cut the connection, the client sees a short body.
    exchange.sendResponseHeaders(head.status(), fixed == 0 ? -1 : fixed > 0 ? fixed : 0);
    OutputStream toClient = exchange.getResponseBody();
    byte[] buf = new byte[BUFFER];
    long left = fixed;
    while (fixed < 0 || left > 0) {
      int n = body.read(buf, 0, fixed < 0 ? buf.length : (int) Math.min(buf.length, left));
      if (n < 0) {
        if (fixed > 0) {
          throw new EOFException("the server closed the connection " + left + " bytes before the end of its answer");
        }
        break;
      }
      toClient.write(buf, 0, n);
      toClient.flush(); // server-sent events: each read goes out as it came
      left -= n;
    }
    toClient.close();
  }

  /** The request head for the server. */
  private String head(HttpExchange exchange, Target target, boolean chunked, String length) {
    StringBuilder h = new StringBuilder(exchange.getRequestMethod()).append(' ').append(target.pathAndQuery())
        .append(" HTTP/1.1\r\nHost: localhost:").append(target.port()).append("\r\n");
    Headers in = exchange.getRequestHeaders();
    List<String[]> pairs = new ArrayList<>();
    for (Map.Entry<String, List<String>> e : in.entrySet()) {
      for (String v : e.getValue()) {
        pairs.add(new String[] {e.getKey(), v});
      }
    }
    Set<String> listed = connectionListed(pairs);
    String forwardedFor = null;
    boolean proto = false;
    boolean host = false;
    boolean prefix = false;
    for (String[] p : pairs) {
      String name = p[0].toLowerCase(Locale.ROOT);
      String value = p[1];
      if (HOP_BY_HOP.contains(name) || listed.contains(name) || value.indexOf('\r') >= 0 || value.indexOf('\n') >= 0) {
        continue;
      }
      switch (name) {
        case "host":
        case "content-length":
        case "expect":
          continue;
        case "authorization":
          if (target.bearer()) {
            continue; // the agent's token is for the agent only
          }
          break;
        case "cookie":
          value = withoutPreviewCookies(value);
          if (value.isEmpty()) {
            continue;
          }
          break;
        case "x-forwarded-for":
          forwardedFor = forwardedFor == null ? value : forwardedFor + ", " + value;
          continue;
        case "x-forwarded-proto":
          proto = true;
          break;
        case "x-forwarded-host":
          host = true;
          break;
        case "x-forwarded-prefix":
          prefix = true;
          break;
        default:
          break;
      }
      h.append(p[0]).append(": ").append(value).append("\r\n");
    }
    String peer = exchange.getRemoteAddress().getAddress().getHostAddress();
    h.append("X-Forwarded-For: ").append(forwardedFor == null ? peer : forwardedFor + ", " + peer).append("\r\n");
    // A front proxy (Caddy, nginx) knows the public scheme, host and prefix: what it says stands.
    if (!proto) {
      h.append("X-Forwarded-Proto: http\r\n");
    }
    String clientHost = in.getFirst("Host");
    if (!host && clientHost != null && HOST.matcher(clientHost).matches()) {
      h.append("X-Forwarded-Host: ").append(clientHost).append("\r\n");
    }
    if (!prefix) {
      h.append("X-Forwarded-Prefix: ").append(PREFIX).append(target.port()).append("\r\n");
    }
    if (chunked) {
      h.append("Transfer-Encoding: chunked\r\n");
    } else if (length != null) {
      h.append("Content-Length: ").append(length.strip()).append("\r\n");
    }
    h.append("Connection: close\r\n\r\n");
    return h.toString();
  }

  /**
   * A redirect target of the server as the browser must see it: an absolute path, or an absolute
   * URL of the server's own loopback address, goes below {@code /proxy/{port}}; anything else
   * (a relative reference, another host) stays as it is.
   */
  static String underPrefix(String location, int port) {
    String prefix = PREFIX + port;
    for (String own : new String[] {"http://localhost:" + port, "http://127.0.0.1:" + port, "http://[::1]:" + port}) {
      if (location.regionMatches(true, 0, own, 0, own.length())) {
        String rest = location.substring(own.length());
        if (rest.isEmpty() || rest.startsWith("/") || rest.startsWith("?")) {
          return prefix + (rest.startsWith("/") ? rest : "/" + rest);
        }
      }
    }
    if (location.startsWith("/") && !location.startsWith("//") && !location.startsWith(prefix + "/")) {
      return prefix + location;
    }
    return location;
  }

  /** The cookie header without any agent's preview cookies. */
  static String withoutPreviewCookies(String header) {
    List<String> kept = new ArrayList<>();
    for (String pair : header.split(";")) {
      String p = pair.strip();
      if (!p.isEmpty() && !p.startsWith(COOKIE_PREFIX)) {
        kept.add(p);
      }
    }
    return String.join("; ", kept);
  }

  /** Names listed in Connection headers: hop-by-hop for this connection only. */
  private static Set<String> connectionListed(List<String[]> headers) {
    Set<String> names = new HashSet<>();
    for (String[] h : headers) {
      if (h[0].equalsIgnoreCase("connection")) {
        for (String n : h[1].split(",")) {
          names.add(n.strip().toLowerCase(Locale.ROOT));
        }
      }
    }
    return names;
  }

  /** An IOException of the client's side while the request body is copied. */
  private static final class ClientGone extends IOException {
    private static final long serialVersionUID = 1L;

    ClientGone(IOException cause) {
      super(cause);
    }

    @Override
    public synchronized IOException getCause() {
      return (IOException) super.getCause();
    }
  }

  /** Copies the request body to the server, chunked or as it is. */
  private static void sendBody(InputStream from, OutputStream to, boolean chunked, Timeouts.Watch watch)
      throws IOException {
    byte[] buf = new byte[BUFFER];
    while (true) {
      int n;
      try {
        n = from.read(buf);
      } catch (IOException e) {
        throw new ClientGone(e);
      }
      if (n < 0) {
        break;
      }
      if (n == 0) {
        continue;
      }
      if (chunked) {
        to.write((Integer.toHexString(n) + "\r\n").getBytes(StandardCharsets.US_ASCII));
      }
      to.write(buf, 0, n);
      if (chunked) {
        to.write('\r');
        to.write('\n');
      }
      watch.touch();
    }
    if (chunked) {
      to.write("0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
    }
  }

  private AgentException upstreamFailed(Target target, Timeouts.Watch watch, String message) {
    if (watch.timedOut()) {
      return new AgentException(ErrorCode.UPSTREAM_TIMEOUT, "the server on port " + target.port() + " did not answer within "
          + watch.limitMs() + " ms", Map.of("port", target.port(), "timeoutMs", watch.limitMs()));
    }
    return new AgentException(ErrorCode.UPSTREAM_INVALID_RESPONSE, "port " + target.port() + ": " + message,
        Map.of("port", target.port()));
  }

  /** A response's status and headers, names as sent. */
  record Head(int status, List<String[]> headers) {
    String first(String name) {
      for (String[] h : headers) {
        if (h[0].equalsIgnoreCase(name)) {
          return h[1];
        }
      }
      return null;
    }
  }

  static Head readHead(UpstreamReader in) throws IOException {
    int budget = MAX_HEAD_BYTES;
    String status = in.readLine(budget);
    budget -= status.length();
    String[] parts = status.split(" ", 3);
    if (parts.length < 2 || !parts[0].startsWith("HTTP/1.") || !parts[1].matches("[1-5][0-9][0-9]")) {
      throw new IOException("not an HTTP/1.x status line");
    }
    List<String[]> headers = new ArrayList<>();
    while (true) {
      String line = in.readLine(budget);
      budget -= line.length() + 2;
      if (line.isEmpty()) {
        return new Head(Integer.parseInt(parts[1]), headers);
      }
      int colon = line.indexOf(':');
      // A bare CR or a NUL is invalid in a field (RFC 9110 5.5); the JDK's server throws on a CR.
      if (colon <= 0 || line.charAt(0) == ' ' || line.charAt(0) == '\t' || line.indexOf('\r') >= 0
          || line.indexOf('\0') >= 0) {
        throw new IOException("malformed header line");
      }
      headers.add(new String[] {line.substring(0, colon).strip(), line.substring(colon + 1).strip()});
    }
  }

  /**
   * Buffered reads from the server that never wait for more than one read of the socket, so a
   * server-sent event is passed on as soon as it arrives. Every read counts as activity.
   */
  static final class UpstreamReader extends InputStream {
    private final InputStream in;
    private final Timeouts.Watch watch;
    private final byte[] buf = new byte[BUFFER];
    private int pos;
    private int lim;

    UpstreamReader(InputStream in, Timeouts.Watch watch) {
      this.in = in;
      this.watch = watch;
    }

    private boolean fill() throws IOException {
      int n = in.read(buf, 0, buf.length);
      if (n < 0) {
        return false;
      }
      watch.touch();
      pos = 0;
      lim = n;
      return true;
    }

    @Override
    public int read() throws IOException {
      if (pos == lim && !fill()) {
        return -1;
      }
      return buf[pos++] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      if (len == 0) {
        return 0;
      }
      if (pos == lim && !fill()) {
        return -1;
      }
      int n = Math.min(len, lim - pos);
      System.arraycopy(buf, pos, b, off, n);
      pos += n;
      return n;
    }

    /** A line without its CRLF (or LF), at most {@code max} bytes; EOFException at end of file. */
    String readLine(int max) throws IOException {
      StringBuilder line = new StringBuilder();
      while (true) {
        int c = read();
        if (c < 0) {
          throw new EOFException("end of file in the answer's head");
        }
        if (c == '\n') {
          int end = line.length();
          if (end > 0 && line.charAt(end - 1) == '\r') {
            line.setLength(end - 1);
          }
          return line.toString();
        }
        if (line.length() >= max) {
          throw new IOException("the answer's head is larger than " + MAX_HEAD_BYTES + " bytes");
        }
        line.append((char) c);
      }
    }
  }

  /** The data of a chunked body (RFC 9112 7.1); trailers are read and dropped. */
  static final class ChunkedReader extends InputStream {
    private final UpstreamReader in;
    private long left;
    private boolean done;

    ChunkedReader(UpstreamReader in) {
      this.in = in;
    }

    @Override
    public int read() throws IOException {
      byte[] one = new byte[1];
      return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      if (done) {
        return -1;
      }
      if (left == 0) {
        String size = in.readLine(1024);
        int semi = size.indexOf(';');
        String hex = (semi < 0 ? size : size.substring(0, semi)).strip();
        if (!hex.matches("[0-9A-Fa-f]{1,15}")) {
          throw new IOException("malformed chunk size in the server's answer");
        }
        left = Long.parseLong(hex, 16);
        if (left == 0) {
          while (!in.readLine(MAX_HEAD_BYTES).isEmpty()) {
            // trailers: dropped
          }
          done = true;
          return -1;
        }
      }
      int n = in.read(b, off, (int) Math.min(len, left));
      if (n < 0) {
        throw new EOFException("the server closed the connection inside a chunk");
      }
      left -= n;
      if (left == 0 && !in.readLine(2).isEmpty()) {
        throw new IOException("a chunk of the server's answer does not end with CRLF");
      }
      return n;
    }
  }

  /**
   * Closes server connections that stay silent longer than the proxy timeout, which unblocks the
   * request thread waiting on them: one daemon thread for all, started with the first request
   * and stopped by {@link #close()} (an agent may live in a JVM that goes on, such as a test's).
   */
  static final class Timeouts {
    private final long timeoutNanos;
    private final Set<Watch> watches = ConcurrentHashMap.newKeySet();
    private Thread thread;
    private boolean closed;

    Timeouts(long timeoutMs) {
      this.timeoutNanos = TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    }

    /** One connection under watch. */
    static final class Watch {
      private final Upstreams.Connection connection;
      private final long limitNanos;
      private volatile long lastNanos = System.nanoTime();
      private volatile boolean timedOut;

      Watch(Upstreams.Connection connection, long limitNanos) {
        this.connection = connection;
        this.limitNanos = limitNanos;
      }

      void touch() {
        lastNanos = System.nanoTime();
      }

      boolean timedOut() {
        return timedOut;
      }

      long limitMs() {
        return TimeUnit.NANOSECONDS.toMillis(limitNanos);
      }
    }

    /** Watches {@code c}, silent for at most {@code limitMs}; once closed, closes it and throws. */
    Watch watch(Upstreams.Connection c, long limitMs) throws IOException {
      Watch w = new Watch(c, Math.min(timeoutNanos, TimeUnit.MILLISECONDS.toNanos(limitMs)));
      watches.add(w);
      if (!startThread()) {
        watches.remove(w);
        c.close();
        throw new IOException("the agent is stopping");
      }
      return w;
    }

    void release(Watch w) {
      watches.remove(w);
    }

    /** False once closed. */
    private synchronized boolean startThread() {
      if (closed) {
        return false;
      }
      if (thread != null) {
        return true;
      }
      long periodMs = Math.max(10, Math.min(1000,
          TimeUnit.NANOSECONDS.toMillis(Math.min(timeoutNanos, TimeUnit.MILLISECONDS.toNanos(PREVIEW_SILENCE_MS))) / 4));
      thread = new Thread(null, () -> {
        while (true) {
          try {
            Thread.sleep(periodMs);
          } catch (InterruptedException e) {
            return;
          }
          long now = System.nanoTime();
          for (Watch w : watches) {
            if (now - w.lastNanos > w.limitNanos) {
              w.timedOut = true;
              watches.remove(w);
              try {
                w.connection.close();
              } catch (IOException e) {
                // closed either way
              }
            }
          }
        }
      }, "agent-proxy-timeouts", 256 * 1024);
      thread.setDaemon(true);
      thread.start();
      return true;
    }

    void close() {
      synchronized (this) {
        closed = true;
        if (thread != null) {
          thread.interrupt();
        }
      }
      for (Watch w : watches) {
        watches.remove(w);
        try {
          w.connection.close();
        } catch (IOException e) {
          // closed either way
        }
      }
    }
  }
}
