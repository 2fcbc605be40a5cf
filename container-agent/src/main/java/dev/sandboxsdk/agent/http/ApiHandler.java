package dev.sandboxsdk.agent.http;

import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import dev.sandboxsdk.agent.AgentConfig;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.process.ProcessManager;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
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
  /**
   * The response header that carries {@link #bootId()} on every answer (our extension of
   * protocol v1): a client that sees it change knows the agent was restarted and its processes
   * and streams are gone.
   */
  public static final String BOOT_ID_HEADER = "Sandbox-Boot-Id";
  /**
   * The response header that carries the keep-alive interval in milliseconds on every answer (our
   * extension): a client learns its liveness window from its very first call, before the body of
   * an {@code execute} whose heartbeats it must watch, without asking {@code /api/version}.
   */
  public static final String KEEP_ALIVE_HEADER = "Sandbox-Keep-Alive-Ms";

  private final AgentConfig config;
  private final Admission admission;
  private final byte[] tokenDigest;
  private final String version;
  private final ExecEndpoints exec;
  private final ProcessEndpoints process;
  private final FileEndpoints files;
  private final PortEndpoints ports;
  private final GitEndpoints git;
  private final WatchEndpoints watches;
  private final ProxyEndpoints proxy;
  private final CheckpointEndpoints checkpoints;
  /** Random per agent run; not a secret (unauthenticated answers carry it too). */
  private final String bootId = java.util.UUID.randomUUID().toString();
  private final String keepAliveText;

  /** {@code agentPort}: the port the agent listens on, which the proxy refuses to forward to. */
  public ApiHandler(ProcessManager processes, String token, String version, int agentPort, Admission admission) {
    this.config = processes.config();
    this.admission = admission;
    this.keepAliveText = Long.toString(config.keepAliveMs());
    this.tokenDigest = token == null ? null : sha256(token.getBytes(StandardCharsets.UTF_8));
    this.version = version;
    this.exec = new ExecEndpoints(processes);
    this.process = new ProcessEndpoints(processes);
    this.files = new FileEndpoints(processes);
    this.ports = new PortEndpoints(processes);
    this.git = new GitEndpoints(processes);
    this.watches = new WatchEndpoints(processes);
    this.checkpoints = new CheckpointEndpoints(processes);
    this.proxy = new ProxyEndpoints(processes, tokenDigest != null, this::hasValidBearer, bootId.substring(0, 8), agentPort);
    this.commandUser = processes.commandUser();
    this.isolationMode = processes.isolation();
    this.network = processes.network();
    this.processes = processes;
  }

  /** Reports how commands are started ({@code native} or {@code jdk}) on /api/version. */
  private final ProcessManager processes;

  private final java.util.concurrent.atomic.AtomicInteger inFlight = new java.util.concurrent.atomic.AtomicInteger();
  /** Authenticated requests in progress, for the idle timeout. */
  private final java.util.concurrent.atomic.AtomicInteger activeCalls = new java.util.concurrent.atomic.AtomicInteger();
  /** When an authenticated request last started or ended (System.nanoTime). */
  private volatile long lastActivityNanos = System.nanoTime();
  private final dev.sandboxsdk.agent.process.CommandUser commandUser;
  /** {@code none} or {@code bwrap}, reported by /api/version. */
  private final String isolationMode;
  private final boolean network;

  /**
   * Nanoseconds without an authenticated request in progress: 0 while one is, else since the last
   * one started or ended. Pings and requests that fail authentication do not count, so a health
   * probe or a stranger cannot keep a forgotten agent alive.
   */
  public long idleNanos() {
    // The count first: end() writes the time before it decrements, so a 0 seen here comes with
    // the end time of the request that made it 0.
    if (activeCalls.get() > 0) {
      return 0;
    }
    return Math.max(0, System.nanoTime() - lastActivityNanos);
  }

  /** This agent run's id: random at start, the same in every answer until the agent stops. */
  public String bootId() {
    return bootId;
  }

  /** Requests being handled right now (streams included). */
  public int inFlight() {
    return inFlight.get();
  }

  /** The JVM's answer when the OS refuses a thread (a pids or nproc limit), which is not the heap running out. */
  private static boolean noRoomForThread(OutOfMemoryError e) {
    return e.getMessage() != null && e.getMessage().contains("unable to create native thread");
  }

  /**
   * Handles one exchange. If the response could not be completed (the client hung up, a write or
   * the final flush failed, or no response was sent at all) this throws: the JDK server closes
   * and forgets a connection only when its handler throws, so a swallowed failure would leak the
   * connection's file descriptor for good.
   */
  @Override
  public void handle(HttpExchange exchange) throws IOException {
    Admission.headersDone();
    inFlight.incrementAndGet();
    ResponseGuard guard = new ResponseGuard(exchange.getResponseBody());
    exchange.setStreams(null, guard);
    exchange.getResponseHeaders().set(BOOT_ID_HEADER, bootId);
    exchange.getResponseHeaders().set(KEEP_ALIVE_HEADER, keepAliveText);
    IOException failure = null;
    try {
      route(exchange);
    } catch (AgentException e) {
      failure = respondError(exchange, e);
    } catch (IOException e) {
      failure = e;
    } catch (OutOfMemoryError e) {
      if (!noRoomForThread(e)) {
        log.error("{} {} failed", exchange.getRequestMethod(), exchange.getRequestURI().getRawPath(), e);
      }
      failure = respondError(exchange, noRoomForThread(e)
          ? new AgentException(ErrorCode.TOO_MANY_PROCESSES, "the sandbox has no room for another process or thread"
              + " (its process limit is reached, e.g. by a fork bomb): kill processes (kill-all) and try again")
          : new AgentException(ErrorCode.INTERNAL_ERROR, "internal error: OutOfMemoryError"));
    } catch (RuntimeException | Error e) {
      log.error("{} {} failed", exchange.getRequestMethod(), exchange.getRequestURI().getRawPath(), e);
      failure = respondError(exchange, new AgentException(ErrorCode.INTERNAL_ERROR, "internal error: " + e.getClass().getSimpleName()));
    } finally {
      exchange.close();
      inFlight.decrementAndGet();
    }
    if (failure == null) {
      failure = guard.failure();
    }
    if (failure == null && exchange.getResponseCode() == -1) {
      failure = new IOException("no response was sent");
    }
    if (failure != null) {
      log.debug("{} {}: connection closed: {}", exchange.getRequestMethod(), exchange.getRequestURI().getRawPath(), failure.toString());
      throw failure;
    }
  }

  /** Sends the error unless a response already started; returns the failure to send it, if any. */
  private static IOException respondError(HttpExchange exchange, AgentException e) {
    if (exchange.getResponseCode() != -1) {
      return null; // headers already went out (a stream); the stream itself reports errors
    }
    if (e.code() == ErrorCode.UNAUTHORIZED || e.code() == ErrorCode.TOO_MANY_PROXIED_REQUESTS) {
      // No body is read for a client without a token, and its connection is not kept: neither a
      // slow body nor idle connections let it hold a share of the connection cap.
      if (e.code() == ErrorCode.UNAUTHORIZED) {
        exchange.getResponseHeaders().set("WWW-Authenticate", "Bearer realm=\"sandbox-agent\"");
      }
      exchange.getResponseHeaders().set("Connection", "close");
    } else if (!drainRequestBody(exchange)) {
      // An unread body would be taken for the next request; tell the client not to reuse this connection.
      exchange.getResponseHeaders().set("Connection", "close");
    }
    if (e.code() == ErrorCode.METHOD_NOT_ALLOWED) {
      exchange.getResponseHeaders().set("Allow", String.valueOf(e.context().get("allow")));
    }
    try {
      Responses.error(exchange, e);
      return null;
    } catch (IOException io) {
      return io;
    }
  }

  /**
   * The response body as handlers see it; remembers whether any write, flush or close failed.
   * After a failure it does not pass close on: closing the JDK's stream then would still report the
   * response as written and keep the dead connection for reuse.
   */
  private static final class ResponseGuard extends FilterOutputStream {
    private volatile IOException failure;
    private volatile boolean closed;

    ResponseGuard(OutputStream out) {
      super(out);
    }

    IOException failure() {
      return failure;
    }

    @Override
    public void write(int b) throws IOException {
      check();
      try {
        out.write(b);
      } catch (IOException e) {
        throw failed(e);
      }
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      check();
      try {
        out.write(b, off, len);
      } catch (IOException e) {
        throw failed(e);
      }
    }

    @Override
    public void flush() throws IOException {
      check();
      try {
        out.flush();
      } catch (IOException e) {
        throw failed(e);
      }
    }

    @Override
    public void close() throws IOException {
      if (closed) {
        return;
      }
      closed = true; // before closing: the JDK's stream calls back here when it gives up
      check();
      try {
        out.close();
      } catch (IOException e) {
        throw failed(e);
      }
    }

    private void check() throws IOException {
      if (failure != null) {
        throw new IOException("the connection already failed", failure);
      }
    }

    private IOException failed(IOException e) {
      if (failure == null) {
        failure = e;
      }
      return e;
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
    String rawPath = exchange.getRequestURI().getRawPath();
    if (rawPath.startsWith(ProxyEndpoints.PREFIX)) {
      // The proxy's own auth: the bearer token, or an exposure's preview token or cookie.
      ProxyEndpoints.Target target = proxy.authorize(exchange, rawPath);
      if (target != null) {
        forward(exchange, target);
      }
      return;
    }
    if (!path.startsWith("/api/")) {
      throw notFound(path);
    }
    authenticate(exchange);
    Admission.authenticated();
    // Asking for the version (which reports the last activity, read by a provider's list) is not
    // using the sandbox: it neither keeps an idle agent alive nor moves lastActivityAt.
    if (path.equals("/api/version")) {
      routeAuthenticated(exchange, method, path);
      return;
    }
    lastActivityNanos = System.nanoTime();
    activeCalls.incrementAndGet();
    try {
      routeAuthenticated(exchange, method, path);
    } finally {
      lastActivityNanos = System.nanoTime();
      activeCalls.decrementAndGet();
    }
  }

  /**
   * Forwards a proxied request; one without the bearer token (a preview URL's) only within the
   * preview clients' share of connections, and its connection is kept for the next request only
   * while that share has room.
   */
  private void forward(HttpExchange exchange, ProxyEndpoints.Target target) throws IOException {
    boolean preview = !target.bearer();
    if (preview && !admission.admitPreview()) {
      throw new AgentException(ErrorCode.TOO_MANY_PROXIED_REQUESTS, "preview clients use all "
          + admission.maxPreview() + " connections the agent gives them; try again when one is done",
          Map.of("limit", admission.maxPreview()));
    }
    try {
      Admission.authenticated();
    } catch (IOException e) {
      if (preview) {
        admission.releasePreview();
      }
      throw e;
    }
    if (preview && !admission.keepPreviewConnection(String.valueOf(exchange.getRemoteAddress()))) {
      exchange.getResponseHeaders().set("Connection", "close");
    }
    lastActivityNanos = System.nanoTime();
    activeCalls.incrementAndGet();
    try {
      proxy.forward(exchange, target);
    } finally {
      lastActivityNanos = System.nanoTime();
      activeCalls.decrementAndGet();
      if (preview) {
        admission.releasePreview();
      }
    }
  }

  /** When the agent last served a request that counts as activity: now while one is in progress. */
  private java.time.Instant lastActivityAt() {
    return java.time.Instant.now().minusNanos(idleNanos());
  }

  private void routeAuthenticated(HttpExchange exchange, String method, String path) throws IOException {
    switch (path) {
      case "/api/version": {
        allow(method, "GET");
        Query.none(exchange);
        ObjectNode body = Json.object();
        body.put("version", version);
        body.put("protocol", PROTOCOL_VERSION);
        body.put("bootId", bootId);
        body.put("lastActivityAt", lastActivityAt().toString());
        // Limits a client calibrates against, e.g. how long a stream may stay silent before it
        // is dead (two keep-alive intervals), or how far back a reader can resume.
        ObjectNode limits = body.putObject("limits");
        limits.put("keepAliveMs", config.keepAliveMs());
        limits.put("graceMs", config.graceMs());
        limits.put("maxProcesses", config.effectiveMaxProcesses());
        limits.put("maxBodyBytes", config.maxBodyBytes());
        limits.put("logWindowBytes", config.logWindowBytes());
        exec.describeOutput(body, limits);
        limits.put("idleTimeoutMs", config.idleTimeoutMs());
        if (commandUser != null) {
          ObjectNode user = body.putObject("commandUser");
          if (commandUser.name() != null) {
            user.put("name", commandUser.name());
          }
          user.put("uid", commandUser.uid());
          user.put("gid", commandUser.gid());
          user.put("home", commandUser.home());
        }
        ObjectNode isolation = body.putObject("isolation");
        isolation.put("mode", isolationMode);
        isolation.put("network", network);
        body.put("spawn", processes.spawn());
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
      case "/api/read":
        allow(method, "POST");
        files.read(exchange);
        return;
      case "/api/read/stream":
        allow(method, "POST");
        files.readStream(exchange);
        return;
      case "/api/write":
        allow(method, "POST");
        files.write(exchange);
        return;
      case "/api/delete":
        allow(method, "POST");
        files.delete(exchange);
        return;
      case "/api/rename":
        allow(method, "POST");
        files.rename(exchange);
        return;
      case "/api/move":
        allow(method, "POST");
        files.move(exchange);
        return;
      case "/api/mkdir":
        allow(method, "POST");
        files.mkdir(exchange);
        return;
      case "/api/list-files":
        allow(method, "POST");
        files.listFiles(exchange);
        return;
      case "/api/exists":
        allow(method, "POST");
        files.exists(exchange);
        return;
      case "/api/stat":
        allow(method, "POST");
        files.stat(exchange);
        return;
      case "/api/port-watch":
        allow(method, "POST");
        ports.watch(exchange);
        return;
      case "/api/watch":
        allow(method, "POST");
        watches.watch(exchange);
        return;
      case "/api/expose-port":
        allow(method, "POST");
        proxy.expose(exchange);
        return;
      case "/api/exposed-ports":
        allow(method, "GET");
        proxy.list(exchange);
        return;
      case "/api/git/checkout":
        allow(method, "POST");
        git.checkout(exchange);
        return;
      case "/api/checkpoints":
        if (method.equals("POST")) {
          checkpoints.create(exchange);
        } else {
          allow(method, "GET", "POST");
          checkpoints.list(exchange);
        }
        return;
      case "/api/files/raw":
        if (method.equals("PUT")) {
          files.upload(exchange);
        } else {
          allow(method, "GET", "PUT");
          files.download(exchange);
        }
        return;
      default:
        break;
    }
    if (path.startsWith("/api/execute/") && path.indexOf('/', "/api/execute/".length()) < 0) {
      String id = decode(path.substring("/api/execute/".length()));
      if (!id.isEmpty()) {
        allow(method, "DELETE");
        Query.none(exchange);
        exec.kill(exchange, id);
        return;
      }
    }
    if (path.startsWith("/api/exposed-ports/") && path.indexOf('/', "/api/exposed-ports/".length()) < 0) {
      allow(method, "DELETE");
      proxy.unexpose(exchange, path.substring("/api/exposed-ports/".length()));
      return;
    }
    if (path.startsWith("/api/checkpoints/")) {
      String[] parts = path.substring("/api/checkpoints/".length()).split("/", -1);
      String id = decode(parts[0], "checkpointId");
      if (parts.length == 1 && !id.isEmpty()) {
        allow(method, "DELETE");
        checkpoints.delete(exchange, id);
        return;
      }
      if (parts.length == 2 && !id.isEmpty() && parts[1].equals("restore")) {
        allow(method, "POST");
        checkpoints.restore(exchange, id);
        return;
      }
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
          case "resize":
            allow(method, "POST");
            Query.none(exchange);
            process.resize(exchange, id);
            return;
          default:
            break;
        }
      }
    }
    throw notFound(path);
  }

  private static String decode(String segment) {
    return decode(segment, "processId");
  }

  private static String decode(String segment, String field) {
    try {
      return java.net.URLDecoder.decode(segment.replace("+", "%2B"), StandardCharsets.UTF_8);
    } catch (IllegalArgumentException e) {
      throw AgentException.invalid(field, "malformed " + (field.equals("processId") ? "process" : "checkpoint")
          + " id in path");
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

  /** Releases what the routes hold beyond their requests (the proxy's timeout thread); the server has stopped. */
  public void close() {
    proxy.close();
    checkpoints.close();
  }

  /** Whether the request carries the agent's bearer token (always true without a token). */
  private boolean hasValidBearer(HttpExchange exchange) {
    try {
      authenticate(exchange);
      return true;
    } catch (AgentException e) {
      return false;
    }
  }

  private void authenticate(HttpExchange exchange) {
    if (tokenDigest == null) {
      return;
    }
    String header = exchange.getRequestHeaders().getFirst("Authorization");
    byte[] presented = null;
    if (header != null && header.regionMatches(true, 0, "Bearer ", 0, 7)) {
      int start = 7;
      while (start < header.length() && header.charAt(start) == ' ') {
        start++; // RFC 6750 allows several spaces after the scheme, but nothing after the token
      }
      // The JDK hands over each header byte as one char: these are the exact bytes sent.
      presented = header.substring(start).getBytes(StandardCharsets.ISO_8859_1);
    }
    // Compare fixed-length digests in constant time, so neither content nor length leaks.
    if (presented == null || !MessageDigest.isEqual(tokenDigest, sha256(presented))) {
      throw new AgentException(ErrorCode.UNAUTHORIZED, presented == null
          ? "missing bearer token: send 'Authorization: Bearer <token>'"
          : "invalid bearer token");
    }
  }

  private static byte[] sha256(byte[] bytes) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(bytes);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required by every JDK", e);
    }
  }
}
