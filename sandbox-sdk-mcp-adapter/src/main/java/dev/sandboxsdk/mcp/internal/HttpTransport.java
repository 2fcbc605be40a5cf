package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.sandboxsdk.mcp.internal.HttpSessions.HttpSession;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
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
 *
 * <p>This class routes requests and serves the MCP methods on them; {@link HttpGuard} checks
 * them, {@link HttpSessions} keeps the sessions, {@link HttpExchanges} reads requests and writes
 * responses, and {@link HttpLimits} sizes the connections and threads.
 */
public final class HttpTransport implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(HttpTransport.class);
  static final String PATH = "/mcp";
  static final int MAX_BODY = 4 * 1024 * 1024;

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
  private final HttpGuard guard;
  private final HttpSessions sessions;
  private final Set<SseStream> streams = ConcurrentHashMap.newKeySet();
  private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "mcp-http-keepalive");
    t.setDaemon(true);
    return t;
  });
  private ExecutorService executor;
  private HttpServer http;

  public HttpTransport(McpServer server) {
    this.server = server;
    this.config = server.config();
    this.guard = new HttpGuard(config);
    this.sessions = new HttpSessions(server);
  }

  /** Binds and starts serving; returns the endpoint's URL. */
  public URI start() throws IOException {
    int maxConnections = HttpLimits.maxConnections(config);
    http = HttpServer.create(new InetSocketAddress(config.bind(), config.port()), maxConnections);
    AtomicInteger n = new AtomicInteger();
    executor = HttpLimits.handlerPool(n, maxConnections);
    http.setExecutor(executor);
    http.createContext("/", ex -> HttpExchanges.handle(ex, this::route));
    http.start();
    long every = config.keepAlive().toMillis();
    timer.scheduleWithFixedDelay(this::keepAlive, every, every, TimeUnit.MILLISECONDS);
    timer.scheduleWithFixedDelay(sessions::expire, 1, 1, TimeUnit.MINUTES);
    String host = config.bind().contains(":") ? "[" + config.bind() + "]" : config.bind();
    return URI.create("http://" + host + ":" + http.getAddress().getPort() + PATH);
  }

  private void route(HttpExchange ex) throws IOException {
    if (!PATH.equals(ex.getRequestURI().getPath())) {
      HttpExchanges.plain(ex, 404, "not found: the MCP endpoint is " + PATH);
      return;
    }
    String hostProblem = guard.checkHostAndOrigin(ex);
    if (hostProblem != null) {
      HttpExchanges.rpcError(ex, 403, hostProblem);
      return;
    }
    if (!guard.authorized(ex)) {
      return;
    }
    switch (ex.getRequestMethod()) {
      case "POST" -> post(ex);
      case "GET" -> get(ex);
      case "DELETE" -> delete(ex);
      default -> {
        ex.getResponseHeaders().set("Allow", "GET, POST, DELETE");
        HttpExchanges.plain(ex, 405, "method not allowed: use POST, GET or DELETE");
      }
    }
  }

  // ---- methods

  private void post(HttpExchange ex) throws IOException {
    if (!HttpExchanges.accepts(ex, "application/json") || !HttpExchanges.accepts(ex, "text/event-stream")) {
      HttpExchanges.rpcError(ex, 406, "Accept must list both application/json and text/event-stream");
      return;
    }
    String ct = ex.getRequestHeaders().getFirst("Content-Type");
    if (ct == null || !ct.split(";")[0].strip().equalsIgnoreCase("application/json")) {
      HttpExchanges.rpcError(ex, 415, "Content-Type must be application/json");
      return;
    }
    byte[] body = HttpExchanges.readBody(ex);
    if (body == null) {
      HttpExchanges.rpcError(ex, 413, "request body larger than " + MAX_BODY + " bytes");
      return;
    }
    JsonNode message;
    try {
      message = Json.parse(new String(body, StandardCharsets.UTF_8));
    } catch (IllegalArgumentException e) {
      HttpExchanges.json(ex, 400, JsonRpc.error(null, JsonRpc.PARSE_ERROR, "not valid JSON: " + e.getMessage()));
      return;
    }
    if (message.isArray()) {
      HttpExchanges.json(ex, 400, JsonRpc.error(null, JsonRpc.INVALID_REQUEST,
          "JSON-RPC batches are not supported; send one message per request"));
      return;
    }
    String method = message.path("method").asText(null);
    boolean isRequest = method != null && message.has("id");
    String sessionId = ex.getRequestHeaders().getFirst("Mcp-Session-Id");
    if ("initialize".equals(method) && isRequest) {
      if (sessionId != null) {
        HttpExchanges.rpcError(ex, 400, "initialize must not carry Mcp-Session-Id: it starts a new session");
        return;
      }
      initialize(ex, message);
      return;
    }
    HttpSession hs = sessions.find(ex, sessionId);
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
    if (!HttpExchanges.versionAccepted(ex)) {
      return;
    }
    String client = ex.getRemoteAddress().getAddress().getHostAddress();
    HttpSession hs = sessions.create(client);
    String id = hs.session.id();
    if (!sessions.add(hs)) { // before the answer goes out: the client may use the id at once
      HttpExchanges.rpcError(ex, 503, "too many sessions with calls running or streams open; end unused ones with DELETE "
          + PATH);
      return;
    }
    server.handle(hs.session, message, new JsonReply(ex, id, 200));
    if (!hs.session.isInitialized()) { // only a successful initialize opens a session
      sessions.remove(hs);
    }
  }

  private void get(HttpExchange ex) throws IOException {
    if (!HttpExchanges.accepts(ex, "text/event-stream")) {
      HttpExchanges.rpcError(ex, 406, "GET " + PATH + " opens an event stream: Accept must list text/event-stream");
      return;
    }
    HttpSession hs = sessions.find(ex, ex.getRequestHeaders().getFirst("Mcp-Session-Id"));
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
        HttpExchanges.rpcError(ex, 409, "this session already has an open GET stream");
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
      case NOT_ISSUED -> HttpExchanges.rpcError(ex, 400, "Last-Event-ID '" + abbreviate(lastEventId)
          + "' was not issued in this session; open the GET stream without Last-Event-ID");
      case GONE -> HttpExchanges.rpcError(ex, 410, "the events after Last-Event-ID '" + lastEventId + "' are no longer kept"
          + " (the server keeps " + ResumableStream.MAX_BYTES / 1024 + " Ki characters of events per stream and"
          + " the last " + ResumableStream.Registry.MAX_ENDED_PER_SESSION + " ended streams per session); what"
          + " they carried is lost: call the tool again if its result is missing");
    }
  }

  private static String abbreviate(String s) {
    return s.length() <= 80 ? s : s.substring(0, 80) + "...";
  }

  private void delete(HttpExchange ex) throws IOException {
    HttpSession hs = sessions.find(ex, ex.getRequestHeaders().getFirst("Mcp-Session-Id"));
    if (hs == null) {
      return;
    }
    sessions.end(hs);
    HttpExchanges.empty(ex, 204);
  }

  private void keepAlive() {
    for (SseStream s : streams) {
      if (!s.keepAlive()) { // closed: a finished, dropped or replaced connection
        streams.remove(s);
      }
    }
  }

  @Override
  public void close() {
    timer.shutdownNow();
    sessions.closeAll(); // cancels their calls; nothing here waits for a client
    streams.forEach(SseStream::close);
    if (http != null) {
      http.stop(0); // closes every connection, which also frees writers stuck on stalled clients
    }
    if (executor != null) {
      executor.shutdownNow();
    }
  }
}
