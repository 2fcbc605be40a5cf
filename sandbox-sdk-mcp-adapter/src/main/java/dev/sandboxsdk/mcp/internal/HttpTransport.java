package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
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
 * stream for server messages (only keep-alives today), or with {@code Last-Event-ID} resumes a
 * stream whose connection was lost ({@link ResumableStream}); DELETE ends the session and cancels
 * its calls. Every request passes Host/Origin checks (against DNS rebinding) and, unless
 * {@code --no-auth}, a bearer token compared in constant time.
 */
public final class HttpTransport implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(HttpTransport.class);
  static final String PATH = "/mcp";
  static final int MAX_BODY = 4 * 1024 * 1024;
  static final int MAX_SESSIONS = 1_000;
  /**
   * Sessions one client may hold; a client is a remote address (the token cannot tell clients
   * apart: every client of a server shares it). Local clients all come from 127.0.0.1, so locally
   * this bounds them together, and eviction is what keeps the server open to a new client.
   */
  static final int MAX_SESSIONS_PER_CLIENT = 100;
  static final long SESSION_IDLE_NANOS = TimeUnit.HOURS.toNanos(1);
  /**
   * Each exchange being handled and how its response ended (see {@link #handle}). Not an exchange
   * attribute: in JDK 17 those belong to the context, shared by every exchange.
   */
  private static final Map<HttpExchange, CompletableFuture<Boolean>> OUTCOMES = new ConcurrentHashMap<>();
  private static final Pattern IPV4 = Pattern.compile("\\d{1,3}(\\.\\d{1,3}){3}");
  private static final Pattern IPV6 = Pattern.compile("\\[[0-9a-f:.]*:[0-9a-f:.]*]");

  public static final int MAX_REQUEST_SECONDS = 10;

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
  private final ResumableStream.Budget replayBudget = new ResumableStream.Budget();
  private final SecureRandom random = new SecureRandom();
  private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "mcp-http-keepalive");
    t.setDaemon(true);
    return t;
  });
  private ExecutorService executor;
  private HttpServer http;

  /** A session, its event streams, and which of them is its GET stream. */
  private static final class HttpSession {
    final Session session;
    final String client;
    final ResumableStream.Registry streams;
    final AtomicReference<ResumableStream> getStream = new AtomicReference<>();

    HttpSession(Session session, String client, ResumableStream.Registry streams) {
      this.session = session;
      this.client = client;
      this.streams = streams;
    }

    /**
     * Whether its streams start with a priming event (an id and empty data, and the retry field):
     * MCP 2025-11-25 asks for it, and older clients may fail on an event without data.
     */
    boolean primes() {
      String v = session.protocolVersion();
      return v != null && v.compareTo("2025-11-25") >= 0;
    }

    /**
     * Whether this session may be evicted: never while a call runs; with an open GET stream only
     * if {@code evenWithGetStream} (the second choice: a client could otherwise hold one stream per
     * session and lock every other client out).
     */
    boolean evictable(boolean evenWithGetStream) {
      ResumableStream s = getStream.get();
      return session.idleNanos() > 0 && (evenWithGetStream || s == null || !s.hasOpenConnection());
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
    int maxConnections = maxConnections(config);
    http = HttpServer.create(new InetSocketAddress(config.bind(), config.port()), maxConnections);
    AtomicInteger n = new AtomicInteger();
    executor = handlerPool(n, maxConnections);
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
   * The connection cap, {@code jdk.httpserver.maxConnections}: the JDK server closes connections
   * accepted beyond it at once. Set on purpose, below the process's open-file limit, so that
   * accepting never fails with EMFILE (the JDK's accept loop then spins at full CPU, answering
   * nobody) and sandboxes keep the other half of the descriptors. The JDK reads the property once,
   * when its first server starts: a value set before that (-D or an earlier call) wins.
   */
  static int maxConnections(AdapterConfig config) {
    String set = System.getProperty("jdk.httpserver.maxConnections");
    if (set == null) {
      int cap = config.maxConnections() > 0 ? config.maxConnections() : defaultMaxConnections(openFileLimit());
      System.setProperty("jdk.httpserver.maxConnections", String.valueOf(cap));
      return cap;
    }
    try {
      return Integer.parseInt(set.strip());
    } catch (NumberFormatException e) {
      return defaultMaxConnections(openFileLimit());
    }
  }

  /** Half the open-file limit, between 32 and 1,000 (the other half is for sandboxes and the JVM). */
  static int defaultMaxConnections(long openFileLimit) {
    return (int) Math.max(32, Math.min(1_000, openFileLimit / 2));
  }

  /** The soft limit on open files from /proc/self/limits; 1,024 (a common default) if unknown. */
  static long openFileLimit() {
    try {
      for (String line : java.nio.file.Files.readAllLines(java.nio.file.Path.of("/proc/self/limits"))) {
        if (line.startsWith("Max open files")) {
          String soft = line.substring("Max open files".length()).strip().split("\\s+")[0];
          return soft.equals("unlimited") ? Long.MAX_VALUE : Long.parseLong(soft);
        }
      }
    } catch (IOException | RuntimeException e) {
      log.debug("cannot read the open-file limit: {}", e.toString());
    }
    return 1_024;
  }

  /**
   * Reuses idle threads and makes new ones up to one per connection the server accepts: the JDK
   * server reads a request's line, headers and body on the handler thread, and an SSE response
   * holds its thread until it ends (see {@link #handle}), so every open connection may hold one
   * thread. With fewer, slow senders (held up to the request deadline) would make normal clients
   * wait in line. Beyond that (which cannot happen while the connection cap holds) requests
   * queue: the JDK's dispatcher must never see a rejection. Threads idle for 5 s end: starting
   * one costs far less than a burst of hundreds kept for good.
   */
  private static ExecutorService handlerPool(AtomicInteger names, int maxConnections) {
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
    ThreadPoolExecutor pool = new ThreadPoolExecutor(0, maxConnections + 8, 5, TimeUnit.SECONDS, queue, r -> {
      Thread t = new Thread(r, "mcp-http-" + names.incrementAndGet());
      t.setDaemon(true);
      return t;
    }, (r, full) -> queue.enqueue(r)); // at the maximum: wait in line
    return pool;
  }

  /**
   * Handles one exchange and returns only when its response is complete; throws if the response
   * failed or was cut short. That is what makes the JDK server close the connection: it does so
   * only when a handler throws. A handler that returned after a failed write (the client hung up)
   * would leave the socket open for good, one descriptor per response. So every response, also an
   * SSE stream written from other threads, reports its outcome here, and the handler thread waits
   * for it; the pool has a thread per connection for this.
   */
  private void handle(HttpExchange ex) throws IOException {
    CompletableFuture<Boolean> outcome = new CompletableFuture<>();
    OUTCOMES.put(ex, outcome);
    boolean complete;
    try {
      try {
        route(ex);
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
    // Exact bytes: a token followed by anything (a NUL, a space, a tab) is a different token.
    byte[] given = auth.substring(7).getBytes(StandardCharsets.ISO_8859_1);
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
      ResumableStream stream = hs.streams.create();
      SseStream connection = new SseStream(ex);
      streams.add(connection);
      stream.open(connection, hs.primes());
      server.handle(hs.session, message, new Outbound() {
        @Override
        public void send(ObjectNode m) {
          stream.send(m);
        }

        @Override
        public void finish() {
          stream.end();
        }

        @Override
        public void closeConnection() {
          if (hs.primes()) { // only a client that got an event id and the retry field knows to resume
            stream.closeConnection();
          }
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
    String client = ex.getRemoteAddress().getAddress().getHostAddress();
    byte[] idBytes = new byte[16];
    random.nextBytes(idBytes);
    String id = HexFormat.of().formatHex(idBytes);
    byte[] tagBytes = new byte[4];
    random.nextBytes(tagBytes);
    HttpSession hs = new HttpSession(server.newSession(id), client,
        new ResumableStream.Registry(HexFormat.of().formatHex(tagBytes), replayBudget));
    synchronized (sessions) {
      if (!makeRoom(client)) {
        rpcError(ex, 503, "too many sessions with calls running or streams open; end unused ones with DELETE "
            + PATH);
        return;
      }
      sessions.put(id, hs); // before the answer goes out: the client may use the id at once
    }
    server.handle(hs.session, message, new JsonReply(ex, id, 200));
    if (!hs.session.isInitialized()) { // only a successful initialize opens a session
      sessions.remove(id, hs);
    }
  }

  /**
   * Makes room for one more session of {@code client}: at its {@link #MAX_SESSIONS_PER_CLIENT},
   * or at {@link #MAX_SESSIONS} overall, the least recently used idle session (of that client,
   * else of anyone) is ended. False if every candidate is busy. Callers hold {@code sessions}.
   */
  private boolean makeRoom(String client) {
    long mine = sessions.values().stream().filter(s -> s.client.equals(client)).count();
    if (mine >= MAX_SESSIONS_PER_CLIENT && !evictOldest(client)) {
      return false;
    }
    return sessions.size() < MAX_SESSIONS || evictOldest(null);
  }

  /**
   * Ends the least recently used idle session (of {@code client}, or of anyone if null): one
   * without a GET stream if there is one, else one whose only activity is its GET stream. False if
   * every candidate has a call running.
   */
  private boolean evictOldest(String client) {
    return evictOldest(client, false) || evictOldest(client, true);
  }

  private boolean evictOldest(String client, boolean evenWithGetStream) {
    HttpSession oldest = null;
    long oldestIdle = 0;
    for (HttpSession s : sessions.values()) {
      if ((client == null || s.client.equals(client)) && s.evictable(evenWithGetStream)) {
        long idle = s.session.idleNanos();
        if (idle > oldestIdle) {
          oldest = s;
          oldestIdle = idle;
        }
      }
    }
    if (oldest == null) {
      return false;
    }
    log.info("session {} of {} evicted: idle for {} s, the least recently used, to make room for a new one",
        oldest.session.id(), oldest.client, TimeUnit.NANOSECONDS.toSeconds(oldestIdle));
    end(oldest);
    return true;
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
    String lastEventId = ex.getRequestHeaders().getFirst("Last-Event-ID");
    if (lastEventId != null) {
      resume(ex, hs, lastEventId.strip());
      return;
    }
    synchronized (hs) {
      ResumableStream open = hs.getStream.get();
      if (open != null && open.hasOpenConnection()) {
        rpcError(ex, 409, "this session already has an open GET stream");
        return;
      }
      if (open != null) {
        hs.streams.remove(open); // it carried no messages: nothing to resume
      }
      ResumableStream stream = hs.streams.create();
      SseStream connection = new SseStream(ex);
      hs.getStream.set(stream);
      streams.add(connection);
      stream.open(connection, hs.primes());
      connection.keepAlive(); // lets the client see the stream is open at once
    }
  }

  /**
   * GET with {@code Last-Event-ID}: the stream that event belongs to continues on this response
   * with the events after it (MCP: never those of another stream). 400 if this session never
   * issued that id; 410 if the events after it are no longer kept (see {@link ResumableStream}).
   */
  private void resume(HttpExchange ex, HttpSession hs, String lastEventId) throws IOException {
    ResumableStream.Resume outcome = ResumableStream.Resume.NOT_ISSUED;
    String[] parts = lastEventId.split("-", -1);
    if (parts.length == 3 && parts[0].equals(hs.streams.tag) && parts[1].matches("\\d{1,9}")
        && parts[2].matches("\\d{1,18}") && hs.streams.issued(Integer.parseInt(parts[1]))) {
      ResumableStream stream = hs.streams.get(Integer.parseInt(parts[1]));
      long seq = Long.parseLong(parts[2]);
      try {
        outcome = stream == null ? ResumableStream.Resume.GONE : stream.resume(seq, () -> {
          try {
            SseStream connection = new SseStream(ex);
            streams.add(connection);
            return connection;
          } catch (IOException e) {
            throw new UncheckedIOException(e);
          }
        });
      } catch (UncheckedIOException e) {
        throw e.getCause(); // the client went away: the handler closes the connection
      }
    }
    switch (outcome) {
      case RESUMED -> log.debug("session {}: stream resumed after {}", hs.session.id(), lastEventId);
      case NOT_ISSUED -> rpcError(ex, 400, "Last-Event-ID '" + abbreviate(lastEventId)
          + "' was not issued in this session; open the GET stream without Last-Event-ID");
      case GONE -> rpcError(ex, 410, "the events after Last-Event-ID '" + lastEventId + "' are no longer kept"
          + " (the server keeps " + ResumableStream.MAX_BYTES / 1024 + " Ki characters of events per stream and"
          + " the last " + ResumableStream.Registry.MAX_ENDED_PER_SESSION + " ended streams per session); what"
          + " they carried is lost: call the tool again if its result is missing");
    }
  }

  private static String abbreviate(String s) {
    return s.length() <= 80 ? s : s.substring(0, 80) + "...";
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
    hs.getStream.set(null);
    hs.streams.close(); // frees the replay buffers and closes every stream's connection
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
      if (!s.keepAlive()) { // closed: a finished, dropped or replaced connection
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
      } catch (IOException e) { // send() reported the failure: the handler closes the connection
        log.debug("client went away before its response: {}", e.toString());
      }
    }

    @Override
    public synchronized void finish() {
      if (!done) {
        done = true;
        try {
          empty(ex, 202);
        } catch (IOException e) {
          log.debug("client went away: {}", e.toString());
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
    boolean complete = false;
    try {
      ex.sendResponseHeaders(status, -1);
      complete = true;
    } finally {
      ex.close();
      finished(ex, complete);
    }
  }

  private static void send(HttpExchange ex, int status, String type, byte[] bytes) throws IOException {
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
