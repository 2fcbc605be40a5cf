package dev.sandboxsdk.agent.http;

import static dev.sandboxsdk.agent.http.Replies.allow;
import static dev.sandboxsdk.agent.http.Replies.noRoomForThread;
import static dev.sandboxsdk.agent.http.Replies.notFound;
import static dev.sandboxsdk.agent.http.Replies.respondError;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import dev.sandboxsdk.agent.AgentConfig;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.background.ProcessRoutes;
import dev.sandboxsdk.agent.checkpoint.CheckpointRoutes;
import dev.sandboxsdk.agent.code.CodeContexts;
import dev.sandboxsdk.agent.code.CodeLimits;
import dev.sandboxsdk.agent.code.CodeRoutes;
import dev.sandboxsdk.agent.egress.EgressRoutes;
import dev.sandboxsdk.agent.exec.ExecRoutes;
import dev.sandboxsdk.agent.files.FileRoutes;
import dev.sandboxsdk.agent.files.FileTransferRoutes;
import dev.sandboxsdk.agent.fs.Workspace;
import dev.sandboxsdk.agent.git.GitRoutes;
import dev.sandboxsdk.agent.ports.PortWatchRoutes;
import dev.sandboxsdk.agent.ports.ProxyRoutes;
import dev.sandboxsdk.agent.ports.ProxyTarget;
import dev.sandboxsdk.agent.process.ProcessManager;
import dev.sandboxsdk.agent.session.SessionRoutes;
import dev.sandboxsdk.agent.session.Sessions;
import dev.sandboxsdk.agent.watch.WatchRoutes;
import java.io.IOException;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Routes every request of protocol v1, checks the bearer token, and turns every failure into the
 * protocol's JSON error. Unexpected exceptions become INTERNAL_ERROR without leaking details.
 * Each capability's route group registers its own routes ({@link #routes()}, one line each); the
 * ping, {@code /api/version} and the proxy's entry (it has its own authentication) are here.
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
  private final BearerAuth auth;
  private final String version;
  private final Workspace workspace;
  private final ProxyRoutes proxy;
  private final CheckpointRoutes checkpoints;
  private final CodeContexts codeContexts;
  /** Random per agent run; not a secret (unauthenticated answers carry it too). */
  private final String bootId = java.util.UUID.randomUUID().toString();
  private final String keepAliveText;

  /** {@code agentPort}: the port the agent listens on, which the proxy refuses to forward to. */
  public ApiHandler(ProcessManager processes, String token, String version, int agentPort, Admission admission) {
    this.config = processes.config();
    this.admission = admission;
    this.keepAliveText = Long.toString(config.keepAliveMs());
    this.auth = new BearerAuth(token);
    this.version = version;
    this.workspace = Workspace.open(config.workspace(), processes.commandUser());
    this.checkpoints = new CheckpointRoutes(processes);
    this.codeContexts = new CodeContexts(processes, CodeLimits.DEFAULT);
    this.proxy = new ProxyRoutes(processes, auth.required(), auth::valid, bootId.substring(0, 8), agentPort);
    this.commandUser = processes.commandUser();
    this.isolationMode = processes.isolation();
    this.network = processes.network();
    this.processes = processes;
    this.sessions = Sessions.open(processes.commandTmpOnHost(), processes.commandTmp(), processes.commandUser(),
        Sessions.DEFAULT_MAX_SESSIONS, Sessions.DEFAULT_WAIT_MS, Sessions.DEFAULT_MAX_STATE_BYTES);
    this.routes = routes();
  }

  private final Routes routes;
  /** The shell sessions, closed with this handler. */
  private final Sessions sessions;

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
    // Until the request shows the token (admitted() below) its connection is not kept: an idle
    // connection left after a ping or a 401 would hold a share of the cap outside every deadline.
    exchange.getResponseHeaders().set("Connection", "close");
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

  private void route(HttpExchange exchange) throws IOException {
    String method = exchange.getRequestMethod();
    String path = exchange.getRequestURI().getRawPath();
    if (path.length() > 1 && path.endsWith("/")) {
      path = path.substring(0, path.length() - 1);
    }
    if (path.equals("/api/ping")) {
      if (auth.valid(exchange)) {
        admitted(exchange); // a client with the token may keep its connection, as after any call
      }
      allow(method, "GET");
      Query.none(exchange);
      Responses.ok(exchange, new AgentMessages.Ping("healthy"));
      return;
    }
    String rawPath = exchange.getRequestURI().getRawPath();
    if (rawPath.startsWith(ProxyRoutes.PREFIX)) {
      // The proxy's own auth: the bearer token, or an exposure's preview token or cookie.
      ProxyTarget target = proxy.authorize(exchange, rawPath);
      if (target != null) {
        forward(exchange, target);
      }
      return;
    }
    if (!path.startsWith("/api/")) {
      throw notFound(path);
    }
    auth.check(exchange);
    admitted(exchange);
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
  private void forward(HttpExchange exchange, ProxyTarget target) throws IOException {
    boolean preview = !target.bearer();
    if (preview && !admission.admitPreview()) {
      throw new AgentException(ErrorCode.TOO_MANY_PROXIED_REQUESTS, "preview clients use all "
          + admission.maxPreview() + " connections the agent gives them; try again when one is done",
          Map.of("limit", admission.maxPreview()));
    }
    try {
      admitted(exchange);
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

  /** The request showed the token (or a preview admission): it leaves the unauthenticated share. */
  private static void admitted(HttpExchange exchange) throws IOException {
    Admission.authenticated();
    exchange.getResponseHeaders().remove("Connection");
  }

  /** When the agent last served a request that counts as activity: now while one is in progress. */
  private java.time.Instant lastActivityAt() {
    return java.time.Instant.now().minusNanos(idleNanos());
  }

  private void routeAuthenticated(HttpExchange exchange, String method, String path) throws IOException {
    routes.dispatch(exchange, method, path);
  }

  /**
   * Every authenticated route: each capability's route group registers its own, in this order
   * (which is the order of 405's allowed methods where two groups share a path).
   */
  private Routes routes() {
    Routes routes = new Routes().on("GET", "/api/version", this::version);
    new ExecRoutes(processes, sessions).register(routes);
    new SessionRoutes(sessions, processes.outputBudget()).register(routes);
    new ProcessRoutes(processes).register(routes);
    new FileRoutes(processes, workspace).register(routes);
    new FileTransferRoutes(processes, workspace).register(routes);
    new PortWatchRoutes(processes).register(routes);
    new WatchRoutes(processes, workspace).register(routes);
    proxy.register(routes);
    new GitRoutes(processes, workspace).register(routes);
    checkpoints.register(routes);
    new EgressRoutes(processes.egress(), config.maxBodyBytes(), processes.outputBudget()).register(routes);
    new CodeRoutes(codeContexts, config, processes.outputBudget()).register(routes);
    return routes;
  }

  /** GET /api/version: the agent, its protocol and the limits a client calibrates against. */
  private void version(HttpExchange exchange) throws IOException {
    Query.none(exchange);
    AgentMessages.CommandUser user = commandUser == null ? null
        : new AgentMessages.CommandUser(commandUser.name(), commandUser.uid(), commandUser.gid(), commandUser.home());
    Responses.ok(exchange, new AgentMessages.Version(version, PROTOCOL_VERSION, bootId, lastActivityAt().toString(),
        limits(), output(), user, new AgentMessages.Isolation(isolationMode, network), processes.spawn()));
  }

  /** The limits of GET /api/version. */
  private AgentMessages.Limits limits() {
    return new AgentMessages.Limits(config.keepAliveMs(), config.graceMs(), config.effectiveMaxProcesses(),
        config.maxBodyBytes(), config.logWindowBytes(), config.effectiveDefaultMaxOutputBytes(),
        config.maxOutputBytesLimit(), processes.outputBudget().limit(), config.idleTimeoutMs());
  }

  /** The live figures of the output budget: bytes buffered now (exec results and background windows) and evicted so far. */
  private AgentMessages.Output output() {
    return new AgentMessages.Output(processes.outputBudget().used(), processes.outputBudget().evictedBytes());
  }

  /** Releases what the routes hold beyond their requests (the proxy's timeout thread); the server has stopped. */
  public void close() {
    proxy.close();
    checkpoints.close();
    sessions.close();
    codeContexts.close();
  }
}
