package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.LinkedTransferQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * MCP Streamable HTTP on one endpoint, {@code /mcp}, served by the JDK's HTTP server.
 *
 * <p>POST carries one JSON-RPC message. {@code initialize} opens a session ({@code Mcp-Session-Id});
 * {@code tools/call} is answered with an SSE stream (progress notifications, then the result);
 * other requests with a JSON body; notifications and responses with 202. GET opens the session's
 * stream for server messages (only keep-alives today); DELETE ends the session and cancels its
 * calls. Every request passes Host/Origin checks (against DNS rebinding) and, unless
 * {@code --no-auth}, a bearer token compared in constant time.
 */
public final class HttpTransport implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(HttpTransport.class);
  static final String PATH = "/mcp";
  static final int MAX_BODY = 4 * 1024 * 1024;
  static final int MAX_SESSIONS = 1_000;
  static final long SESSION_IDLE_NANOS = TimeUnit.HOURS.toNanos(1);
  private static final Pattern IPV4 = Pattern.compile("\\d{1,3}(\\.\\d{1,3}){3}");
  private static final Pattern IPV6 = Pattern.compile("\\[[0-9a-f:.]*:[0-9a-f:.]*]");

  public static final int MAX_REQUEST_SECONDS = 10;
  /** Handler threads; the JDK server reads each request on one, so slow senders occupy them. */
  public static final int HANDLER_THREADS = 256;

  static {
    // The JDK server reads these once, at its first use.
    // Without TCP_NODELAY each SSE answer, written in small pieces, waits for the client's
    // delayed ACK: 44 ms a call, measured.
    if (System.getProperty("sun.net.httpserver.nodelay") == null) {
      System.setProperty("sun.net.httpserver.nodelay", "true");
    }
    // A request (line, headers, body) must arrive within this many seconds; otherwise a few
    // clients sending nothing would hold every handler thread, before any token is checked.
    if (System.getProperty("sun.net.httpserver.maxReqTime") == null) {
      System.setProperty("sun.net.httpserver.maxReqTime", String.valueOf(MAX_REQUEST_SECONDS));
    }
  }


  private final McpServer server;
  private final AdapterConfig config;
  private final byte[] token;
  private final Set<String> allowedHosts;
  private final Map<String, HttpSession> sessions = new ConcurrentHashMap<>();
  private final Set<SseStream> streams = ConcurrentHashMap.newKeySet();
  private final SecureRandom random = new SecureRandom();
  private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "mcp-http-keepalive");
    t.setDaemon(true);
    return t;
  });
  private ExecutorService executor;
  private HttpServer http;

  /** A session and its GET stream, if one is open. */
  private static final class HttpSession {
    final Session session;
    final AtomicReference<SseStream> getStream = new AtomicReference<>();

    HttpSession(Session session) {
      this.session = session;
    }
  }

  public HttpTransport(McpServer server) {
    this.server = server;
    this.config = server.config();
    this.token = config.httpToken() == null ? null : config.httpToken().getBytes(StandardCharsets.UTF_8);
    Set<String> hosts = ConcurrentHashMap.newKeySet();
    hosts.addAll(List.of("localhost", "127.0.0.1", "[::1]"));
    hosts.addAll(config.allowedHosts());
    if (!config.bind().equals("0.0.0.0") && !config.bind().equals("::")) {
      hosts.add(config.bind().contains(":") && !config.bind().startsWith("[") ? "[" + config.bind() + "]" : config.bind());
    }
    this.allowedHosts = hosts;
  }

  /** Binds and starts serving; returns the endpoint's URL. */
  public URI start() throws IOException {
    http = HttpServer.create(new InetSocketAddress(config.bind(), config.port()), 64);
    AtomicInteger n = new AtomicInteger();
    executor = handlerPool(n);
    http.setExecutor(executor);
    http.createContext("/", this::handle);
    http.start();
    long every = config.keepAlive().toMillis();
    timer.scheduleWithFixedDelay(this::keepAlive, every, every, TimeUnit.MILLISECONDS);
    timer.scheduleWithFixedDelay(this::expireSessions, 1, 1, TimeUnit.MINUTES);
    String host = config.bind().contains(":") ? "[" + config.bind() + "]" : config.bind();
    return URI.create("http://" + host + ":" + http.getAddress().getPort() + PATH);
  }

  /**
   * Reuses idle threads, makes new ones up to {@link #HANDLER_THREADS} only when none is idle,
   * queues beyond that (the JDK's dispatcher must never see a rejection), and lets threads idle
   * for a minute die, so a quiet server keeps few.
   */
  private static ExecutorService handlerPool(AtomicInteger names) {
    final class HandOff extends LinkedTransferQueue<Runnable> {
      private static final long serialVersionUID = 1L;

      @Override
      public boolean offer(Runnable r) { // only to a thread waiting for work; else the pool adds one
        return tryTransfer(r);
      }

      void enqueue(Runnable r) {
        super.offer(r); // unbounded: always accepted
      }
    }
    HandOff queue = new HandOff();
    ThreadPoolExecutor pool = new ThreadPoolExecutor(0, HANDLER_THREADS, 60, TimeUnit.SECONDS, queue, r -> {
      Thread t = new Thread(r, "mcp-http-" + names.incrementAndGet());
      t.setDaemon(true);
      return t;
    }, (r, full) -> queue.enqueue(r)); // at the maximum: wait in line
    return pool;
  }

  private void handle(HttpExchange ex) throws IOException {
    try {
      route(ex);
    } catch (RuntimeException e) {
      log.error("HTTP {} {} failed", ex.getRequestMethod(), ex.getRequestURI(), e);
      plain(ex, 500, "internal error: " + e);
    }
  }

  private void route(HttpExchange ex) throws IOException {
    if (!PATH.equals(ex.getRequestURI().getPath())) {
      plain(ex, 404, "not found: the MCP endpoint is " + PATH);
      return;
    }
    String hostProblem = checkHostAndOrigin(ex);
    if (hostProblem != null) {
      rpcError(ex, 403, hostProblem);
      return;
    }
    if (token != null && !authorized(ex)) {
      return;
    }
    switch (ex.getRequestMethod()) {
      case "POST" -> post(ex);
      case "GET" -> get(ex);
      case "DELETE" -> delete(ex);
      default -> {
        ex.getResponseHeaders().set("Allow", "GET, POST, DELETE");
        plain(ex, 405, "method not allowed: use POST, GET or DELETE");
      }
    }
  }

  // ---- checks

  /** Null if Host and Origin are acceptable, else why not (MCP: validate Origin against DNS rebinding). */
  String checkHostAndOrigin(HttpExchange ex) {
    String host = ex.getRequestHeaders().getFirst("Host");
    if (host == null || !hostAllowed(hostName(host))) {
      return "Host header '" + host + "' is not allowed (DNS rebinding protection); use localhost or an IP"
          + " address, or start the server with --allow-host";
    }
    String origin = ex.getRequestHeaders().getFirst("Origin");
    if (origin != null) {
      String o = origin.toLowerCase(Locale.ROOT);
      if (config.allowedOrigins().contains(o)) {
        return null;
      }
      URI u;
      try {
        u = URI.create(o);
      } catch (IllegalArgumentException e) {
        return "Origin '" + origin + "' is not allowed";
      }
      if (u.getScheme() == null || !Set.of("http", "https").contains(u.getScheme()) || u.getHost() == null
          || !originHostAllowed(u.getHost())) {
        return "Origin '" + origin + "' is not allowed; start the server with --allow-origin to accept it";
      }
    }
    return null;
  }

  private boolean hostAllowed(String name) {
    String h = name.toLowerCase(Locale.ROOT);
    // An IP literal cannot be a rebound DNS name, so any is fine; names must be listed.
    return allowedHosts.contains(h) || IPV4.matcher(h).matches() || IPV6.matcher(h).matches();
  }

  /**
   * An Origin names the page that made the request, so unlike Host any IP will not do: only the
   * names and addresses this server answers to as itself, and loopback addresses.
   */
  private boolean originHostAllowed(String name) {
    String h = name.toLowerCase(Locale.ROOT);
    String bracketed = h.contains(":") && !h.startsWith("[") ? "[" + h + "]" : h;
    return allowedHosts.contains(h) || allowedHosts.contains(bracketed) || h.startsWith("127.")
        && IPV4.matcher(h).matches() || bracketed.equals("[::1]");
  }

  /** The host part of a Host header (without the port); a malformed header gives a name that never passes. */
  private static String hostName(String hostHeader) {
    String h = hostHeader.strip();
    if (h.startsWith("[")) {
      int end = h.indexOf(']');
      if (end < 0 || end + 1 < h.length() && !h.substring(end + 1).matches(":\\d{1,5}")) {
        return "invalid";
      }
      return h.substring(0, end + 1);
    }
    int colon = h.lastIndexOf(':');
    return colon >= 0 ? h.substring(0, colon) : h;
  }

  private boolean authorized(HttpExchange ex) throws IOException {
    String auth = ex.getRequestHeaders().getFirst("Authorization");
    if (auth == null || !auth.regionMatches(true, 0, "Bearer ", 0, 7)) {
      ex.getResponseHeaders().set("WWW-Authenticate", "Bearer realm=\"sandbox-mcp\"");
      rpcError(ex, 401, "authentication required: send Authorization: Bearer <token>");
      return false;
    }
    byte[] given = auth.substring(7).strip().getBytes(StandardCharsets.UTF_8);
    if (!MessageDigest.isEqual(given, token)) { // constant time for equal lengths
      ex.getResponseHeaders().set("WWW-Authenticate",
          "Bearer realm=\"sandbox-mcp\", error=\"invalid_token\", error_description=\"the token is not valid\"");
      rpcError(ex, 401, "invalid bearer token");
      return false;
    }
    return true;
  }

  /** Whether the MCP-Protocol-Version header is absent or one we speak; else answers 400 and says false. */
  private static boolean versionAccepted(HttpExchange ex) throws IOException {
    String v = ex.getRequestHeaders().getFirst("MCP-Protocol-Version");
    if (v != null && !McpServer.PROTOCOL_VERSIONS.contains(v.strip())) {
      rpcError(ex, 400, "unsupported MCP-Protocol-Version '" + v + "'; this server speaks " + McpServer.PROTOCOL_VERSIONS);
      return false;
    }
    return true;
  }

  private static boolean accepts(HttpExchange ex, String type) {
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

  // ---- methods

  private void post(HttpExchange ex) throws IOException {
    if (!accepts(ex, "application/json") || !accepts(ex, "text/event-stream")) {
      rpcError(ex, 406, "Accept must list both application/json and text/event-stream");
      return;
    }
    String ct = ex.getRequestHeaders().getFirst("Content-Type");
    if (ct == null || !ct.split(";")[0].strip().equalsIgnoreCase("application/json")) {
      rpcError(ex, 415, "Content-Type must be application/json");
      return;
    }
    byte[] body = readBody(ex);
    if (body == null) {
      rpcError(ex, 413, "request body larger than " + MAX_BODY + " bytes");
      return;
    }
    JsonNode message;
    try {
      message = Json.parse(new String(body, StandardCharsets.UTF_8));
    } catch (IllegalArgumentException e) {
      json(ex, 400, JsonRpc.error(null, JsonRpc.PARSE_ERROR, "not valid JSON: " + e.getMessage()));
      return;
    }
    if (message.isArray()) {
      json(ex, 400, JsonRpc.error(null, JsonRpc.INVALID_REQUEST,
          "JSON-RPC batches are not supported; send one message per request"));
      return;
    }
    String method = message.path("method").asText(null);
    boolean isRequest = method != null && message.has("id");
    String sessionId = ex.getRequestHeaders().getFirst("Mcp-Session-Id");
    if ("initialize".equals(method) && isRequest) {
      if (sessionId != null) {
        rpcError(ex, 400, "initialize must not carry Mcp-Session-Id: it starts a new session");
        return;
      }
      initialize(ex, message);
      return;
    }
    HttpSession hs = session(ex, sessionId);
    if (hs == null) {
      return;
    }
    if (!isRequest) { // a notification or a response: 202, or the error an invalid one earns
      server.handle(hs.session, message, new JsonReply(ex, null, 400));
      return;
    }
    if ("tools/call".equals(method)) {
      SseStream stream = new SseStream(ex);
      streams.add(stream);
      server.handle(hs.session, message, new Outbound() {
        @Override
        public void send(ObjectNode m) {
          stream.send(m);
        }

        @Override
        public void finish() {
          streams.remove(stream);
          stream.close();
        }
      });
      return;
    }
    server.handle(hs.session, message, new JsonReply(ex, null, 200));
  }

  private void initialize(HttpExchange ex, JsonNode message) throws IOException {
    if (!versionAccepted(ex)) {
      return;
    }
    if (sessions.size() >= MAX_SESSIONS) {
      rpcError(ex, 503, "too many open sessions; end unused ones with DELETE " + PATH);
      return;
    }
    byte[] idBytes = new byte[16];
    random.nextBytes(idBytes);
    String id = HexFormat.of().formatHex(idBytes);
    HttpSession hs = new HttpSession(server.newSession(id));
    sessions.put(id, hs); // before the answer goes out: the client may use the id at once
    server.handle(hs.session, message, new JsonReply(ex, id, 200));
    if (!hs.session.isInitialized()) { // only a successful initialize opens a session
      sessions.remove(id, hs);
    }
  }

  private void get(HttpExchange ex) throws IOException {
    if (!accepts(ex, "text/event-stream")) {
      rpcError(ex, 406, "GET " + PATH + " opens an event stream: Accept must list text/event-stream");
      return;
    }
    HttpSession hs = session(ex, ex.getRequestHeaders().getFirst("Mcp-Session-Id"));
    if (hs == null) {
      return;
    }
    synchronized (hs) {
      SseStream open = hs.getStream.get();
      if (open != null && !open.isClosed()) {
        rpcError(ex, 409, "this session already has an open GET stream");
        return;
      }
      SseStream stream = new SseStream(ex);
      hs.getStream.set(stream);
      streams.add(stream);
      stream.keepAlive(); // lets the client see the stream is open at once
    }
  }

  private void delete(HttpExchange ex) throws IOException {
    HttpSession hs = session(ex, ex.getRequestHeaders().getFirst("Mcp-Session-Id"));
    if (hs == null) {
      return;
    }
    end(hs);
    empty(ex, 204);
  }

  private void end(HttpSession hs) {
    sessions.remove(hs.session.id(), hs);
    hs.session.close();
    SseStream s = hs.getStream.getAndSet(null);
    if (s != null) {
      streams.remove(s);
      s.close();
    }
    log.info("session {} ended", hs.session.id());
  }

  /**
   * The session a request names, or null after answering 400 (none given, or an unsupported
   * MCP-Protocol-Version) or 404 (unknown or ended).
   */
  private HttpSession session(HttpExchange ex, String id) throws IOException {
    if (id == null) {
      rpcError(ex, 400, "Mcp-Session-Id header required: send initialize first to open a session");
      return null;
    }
    HttpSession hs = sessions.get(id);
    if (hs == null) {
      rpcError(ex, 404, "unknown or ended session: send initialize to open a new one");
      return null;
    }
    return versionAccepted(ex) ? hs : null;
  }

  private void keepAlive() {
    for (SseStream s : streams) {
      if (!s.keepAlive()) {
        streams.remove(s);
      }
    }
  }

  private void expireSessions() {
    for (HttpSession hs : sessions.values()) {
      if (hs.session.idleNanos() > SESSION_IDLE_NANOS) {
        log.info("session {} idle for an hour; ending it", hs.session.id());
        end(hs);
      }
    }
  }

  // ---- responses

  /**
   * Answers an exchange with the request's response as a JSON body, or 202 when none comes.
   * Notifications have no channel in this mode and are dropped (only tools/call sends any, and it
   * is answered with SSE).
   */
  private final class JsonReply implements Outbound {
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
        json(ex, m.has("error") ? errorStatus : 200, m);
      } catch (IOException e) {
        log.debug("client went away before its response: {}", e.toString());
      }
    }

    @Override
    public synchronized void finish() {
      if (!done) {
        done = true;
        try {
          ex.sendResponseHeaders(202, -1);
        } catch (IOException e) {
          log.debug("client went away: {}", e.toString());
        } finally {
          ex.close();
        }
      }
    }
  }

  private static void json(HttpExchange ex, int status, ObjectNode body) throws IOException {
    send(ex, status, "application/json", Json.write(body).getBytes(StandardCharsets.UTF_8));
  }

  private static void rpcError(HttpExchange ex, int status, String message) throws IOException {
    json(ex, status, JsonRpc.error(null, JsonRpc.INVALID_REQUEST, message));
  }

  private static void plain(HttpExchange ex, int status, String text) throws IOException {
    send(ex, status, "text/plain; charset=utf-8", (text + "\n").getBytes(StandardCharsets.UTF_8));
  }

  private static void empty(HttpExchange ex, int status) throws IOException {
    try {
      ex.sendResponseHeaders(status, -1);
    } finally {
      ex.close();
    }
  }

  private static void send(HttpExchange ex, int status, String type, byte[] bytes) throws IOException {
    try {
      ex.getResponseHeaders().set("Content-Type", type);
      ex.sendResponseHeaders(status, bytes.length);
      try (OutputStream os = ex.getResponseBody()) {
        os.write(bytes);
      }
    } finally {
      ex.close();
    }
  }

  private static byte[] readBody(HttpExchange ex) throws IOException {
    try (InputStream in = ex.getRequestBody()) {
      byte[] bytes = in.readNBytes(MAX_BODY + 1);
      return bytes.length > MAX_BODY ? null : bytes;
    }
  }

  @Override
  public void close() {
    timer.shutdownNow();
    sessions.values().forEach(this::end); // cancels their calls; nothing here waits for a client
    streams.forEach(SseStream::close);
    if (http != null) {
      http.stop(0); // closes every connection, which also frees writers stuck on stalled clients
    }
    if (executor != null) {
      executor.shutdownNow();
    }
  }
}
