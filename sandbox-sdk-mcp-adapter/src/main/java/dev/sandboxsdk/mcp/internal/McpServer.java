package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The MCP protocol layer, independent of transport: lifecycle ({@code initialize}, version
 * negotiation), {@code ping}, {@code tools/list}, {@code tools/call}, {@code logging/setLevel},
 * progress and cancellation. A transport hands it one JSON-RPC message at a time with an
 * {@link Outbound} for whatever that message causes to be sent. Thread-safe.
 */
public final class McpServer implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(McpServer.class);

  /** Newest first: the version offered when the client asks for one we do not speak. */
  public static final List<String> PROTOCOL_VERSIONS = List.of("2025-11-25", "2025-06-18", "2025-03-26");
  /**
   * Serves the official conformance suite's fixture tool {@code test_reconnection} (never listed in
   * tools/list): its call closes its connection early, as a server polling its clients does, and
   * answers on the resumed stream. Only with {@code -Dsandbox.mcp.conformanceFixtures=true}, which
   * e2e/node-client/run-conformance.sh sets.
   */
  static final String CONFORMANCE_FIXTURES = "sandbox.mcp.conformanceFixtures";

  private final AdapterConfig config;
  private final ToolCatalog catalog;
  private final SandboxTools tools;
  private final Sandboxes sandboxes;
  private final ExecutorService workers;
  /** Tool calls running now, across sessions: each holds output buffers, so their number is the memory bound. */
  private final AtomicInteger running = new AtomicInteger();

  public McpServer(AdapterConfig config) {
    this.config = config;
    this.catalog = ToolCatalog.load();
    this.sandboxes = new Sandboxes(config);
    this.tools = new SandboxTools(config, sandboxes);
    AtomicInteger n = new AtomicInteger();
    // Long calls (exec, streams) hand their wait to the SDK's streams and free the worker at once;
    // the bound stops a flood of slow blocking calls from piling up threads.
    // No cap of its own: `running` admits at most --max-concurrent-calls calls, and a worker is
    // held for a whole call. A fixed cap here (it was 64) turned every call past 64 into "busy"
    // whatever --max-concurrent-calls said, and a finishing worker that had already counted its
    // call down but not yet returned to the pool could get the next call refused even below it.
    this.workers = new ThreadPoolExecutor(0, Integer.MAX_VALUE, 60, TimeUnit.SECONDS, new SynchronousQueue<>(),
        r -> {
          Thread t = new Thread(r, "mcp-tool-" + n.incrementAndGet());
          t.setDaemon(true);
          return t;
        });
  }

  SandboxTools tools() {
    return tools;
  }

  public AdapterConfig config() {
    return config;
  }

  public Session newSession(String id) {
    return new Session(id);
  }

  /**
   * Handles one message (a request, notification or response; not a batch). Everything it causes
   * goes to {@code out}, then {@code out.finish()}; for notifications and responses nothing is sent.
   */
  public void handle(Session session, JsonNode message, Outbound out) {
    session.touch();
    if (!message.isObject()) {
      reply(out, JsonRpc.error(null, JsonRpc.INVALID_REQUEST, "a JSON-RPC message must be an object"));
      return;
    }
    JsonNode id = message.get("id");
    JsonNode method = message.get("method");
    if (!"2.0".equals(message.path("jsonrpc").asText(null))) {
      reply(out, JsonRpc.error(JsonRpc.isValidId(id) ? id : null, JsonRpc.INVALID_REQUEST,
          "\"jsonrpc\" must be \"2.0\""));
      return;
    }
    if (method == null) {
      // A response to a request of ours; we send none, so there is nothing to match it with.
      if (id == null || !message.has("result") && !message.has("error")) {
        reply(out, JsonRpc.error(null, JsonRpc.INVALID_REQUEST, "a message needs a \"method\" (or is a response)"));
      } else {
        out.finish();
      }
      return;
    }
    if (!method.isTextual()) {
      reply(out, JsonRpc.error(JsonRpc.isValidId(id) ? id : null, JsonRpc.INVALID_REQUEST, "\"method\" must be a string"));
      return;
    }
    if (id == null) {
      notification(session, method.asText(), message.get("params"));
      out.finish();
      return;
    }
    if (!JsonRpc.isValidId(id)) {
      reply(out, JsonRpc.error(null, JsonRpc.INVALID_REQUEST, "\"id\" must be a string or an integer"));
      return;
    }
    JsonNode params = message.get("params");
    if (params != null && !params.isObject()) {
      reply(out, JsonRpc.error(id, JsonRpc.INVALID_PARAMS, "\"params\" must be an object"));
      return;
    }
    try {
      request(session, id, method.asText(), params == null ? Json.object() : (ObjectNode) params, out);
    } catch (JsonRpc.Error e) {
      reply(out, JsonRpc.error(id, e.code(), e.getMessage()));
    }
  }

  private void request(Session session, JsonNode id, String method, ObjectNode params, Outbound out) {
    if (!session.isInitialized() && !method.equals("initialize") && !method.equals("ping")) {
      throw new JsonRpc.Error(JsonRpc.INVALID_REQUEST, "the session is not initialized: send \"initialize\" first");
    }
    switch (method) {
      case "initialize" -> reply(out, JsonRpc.result(id, initialize(session, params)));
      case "ping" -> reply(out, JsonRpc.result(id, Json.object()));
      case "tools/list" -> {
        JsonNode cursor = params.get("cursor");
        if (cursor != null && !cursor.isNull()) {
          throw new JsonRpc.Error(JsonRpc.INVALID_PARAMS, "unknown cursor: tools/list returns every tool in one page");
        }
        ObjectNode result = Json.object();
        result.set("tools", catalog.listing());
        reply(out, JsonRpc.result(id, result));
      }
      case "tools/call" -> callTool(session, id, params, out);
      case "logging/setLevel" -> {
        String level = params.path("level").asText("");
        if (!Session.LOG_LEVELS.contains(level)) {
          throw new JsonRpc.Error(JsonRpc.INVALID_PARAMS, "\"level\" must be one of " + Session.LOG_LEVELS);
        }
        session.logLevel(level);
        reply(out, JsonRpc.result(id, Json.object()));
      }
      default -> throw new JsonRpc.Error(JsonRpc.METHOD_NOT_FOUND, "method not found: " + method);
    }
  }

  private ObjectNode initialize(Session session, ObjectNode params) {
    JsonNode requested = params.get("protocolVersion");
    if (requested == null || !requested.isTextual()) {
      throw new JsonRpc.Error(JsonRpc.INVALID_PARAMS, "initialize needs \"protocolVersion\" (a string)");
    }
    if (session.isInitialized()) {
      throw new JsonRpc.Error(JsonRpc.INVALID_REQUEST, "the session is already initialized");
    }
    // Version negotiation: echo a version we speak, otherwise offer our newest and let the client decide.
    String version = PROTOCOL_VERSIONS.contains(requested.asText()) ? requested.asText() : PROTOCOL_VERSIONS.get(0);
    session.protocolVersion(version);
    ObjectNode result = Json.object().put("protocolVersion", version);
    ObjectNode caps = result.putObject("capabilities");
    caps.putObject("tools").put("listChanged", false);
    caps.putObject("logging");
    result.putObject("serverInfo")
        .put("name", "sandbox-sdk-mcp-adapter")
        .put("title", "Sandbox SDK")
        .put("version", version());
    String where = config.sandboxesDescription();
    result.put("instructions", "Run commands and code in sandboxes. " + where + " exec runs a command and waits;"
        + " runCode runs a snippet; startProcess starts a background process whose output you read with"
        + " getProcessLogs or streamProcessLogs. Tools act on the sandbox \"default\" unless you pass sandboxId;"
        + " create others with getSandbox and remove them with destroy. For work that lasts: getSandbox with"
        + " persistent: true keeps a sandbox's files and checkpoints (createCheckpoint, restoreCheckpoint) when it is"
        + " idle or shut down (shutdownSandbox) and for later servers; listSandboxes shows them, wakeSandbox starts one"
        + " again.");
    log.info("session {} initialized: protocol {}, client {}", session.id() == null ? "stdio" : session.id(),
        version, params.path("clientInfo").path("name").asText("?"));
    return result;
  }

  private void notification(Session session, String method, JsonNode params) {
    switch (method) {
      case "notifications/cancelled" -> {
        JsonNode requestId = params == null ? null : params.get("requestId");
        if (JsonRpc.isValidId(requestId)) {
          log.debug("client cancelled request {}", requestId);
          session.cancel(requestId);
        }
      }
      case "notifications/initialized", "notifications/progress", "notifications/roots/list_changed" -> {
      }
      default -> log.debug("ignoring notification {}", method);
    }
  }

  private void callTool(Session session, JsonNode id, ObjectNode params, Outbound out) {
    JsonNode name = params.get("name");
    if (name == null || !name.isTextual()) {
      throw new JsonRpc.Error(JsonRpc.INVALID_PARAMS, "tools/call needs \"name\" (a string)");
    }
    if (name.asText().equals("test_reconnection") && Boolean.getBoolean(CONFORMANCE_FIXTURES)) {
      testReconnection(id, out);
      return;
    }
    ObjectNode tool = catalog.get(name.asText());
    if (tool == null) {
      throw new JsonRpc.Error(JsonRpc.INVALID_PARAMS, "Unknown tool: " + name.asText()
          + " (tools/list shows the " + String.join(", ", catalog.names()) + " tools)");
    }
    JsonNode args = params.get("arguments");
    if (args != null && !args.isNull() && !args.isObject()) {
      throw new JsonRpc.Error(JsonRpc.INVALID_PARAMS, "\"arguments\" must be an object");
    }
    // Models often send null for an optional argument they mean to leave out: treat it so.
    ObjectNode arguments = args == null || args.isNull() ? Json.object() : withoutNulls((ObjectNode) args);
    JsonNode token = params.path("_meta").get("progressToken");
    JsonNode progressToken = token != null && (token.isTextual() || token.isIntegralNumber()) ? token : null;
    CallContext ctx = new CallContext(progressToken, out, session);
    if (!session.begin(id, ctx)) {
      throw new JsonRpc.Error(JsonRpc.INVALID_REQUEST, session.isClosed() ? "the session has ended"
          : "request id " + id + " is already in use by a running call");
    }
    List<String> problems = SchemaValidator.validate(tool.get("inputSchema"), arguments);
    CompletableFuture<ToolOutcome> outcome;
    if (!problems.isEmpty()) {
      outcome = CompletableFuture.completedFuture(ToolOutcome.error("Invalid arguments for " + name.asText() + ": "
          + String.join("; ", problems) + ". The inputSchema in tools/list describes every argument."));
    } else if (running.incrementAndGet() > config.maxConcurrentCalls()) {
      running.decrementAndGet();
      outcome = CompletableFuture.completedFuture(ToolOutcome.error("The server is busy: "
          + config.maxConcurrentCalls() + " tool calls are already running (the limit bounds the memory their"
          + " output takes). Wait for one to finish, then try again."));
    } else {
      outcome = start(name.asText(), arguments, ctx);
    }
    outcome.whenComplete((r, e) -> {
      session.end(id, ctx);
      if (ctx.isCancelled() || e != null && shuttingDown()) {
        out.finish(); // MCP: no response to a cancelled request; at shutdown, as good as cancelled
        return;
      }
      if (e != null) { // SandboxTools turns every failure a model can act on into a result: this is a bug
        Throwable cause = e instanceof java.util.concurrent.CompletionException && e.getCause() != null ? e.getCause() : e;
        log.error("tool {} failed unexpectedly", name.asText(), cause);
        reply(out, JsonRpc.error(id, JsonRpc.INTERNAL_ERROR, "internal error in " + name.asText() + ": " + cause));
        return;
      }
      reply(out, JsonRpc.result(id, toResult(r)));
    });
  }

  /**
   * Runs a call that passed its checks and counts as running (until its outcome completes): on
   * this thread when the tool starts without waiting, else on a worker.
   */
  private CompletableFuture<ToolOutcome> start(String name, ObjectNode arguments, CallContext ctx) {
    CompletableFuture<ToolOutcome> outcome = new CompletableFuture<>();
    outcome.whenComplete((r, e) -> running.decrementAndGet()); // counted by callTool
    // A cancelled stream sends no further signal, so the call ends here (its hooks stop the work).
    ctx.onCancel(() -> outcome.cancel(false));
    Runnable call = () -> {
      try {
        tools.call(name, arguments, ctx).whenComplete((r, e) -> {
          if (e != null) {
            outcome.completeExceptionally(e);
          } else {
            outcome.complete(r);
          }
        });
      } catch (RuntimeException e) {
        outcome.completeExceptionally(e);
      }
    };
    if (tools.startsWithoutWaiting(name, arguments)) {
      call.run(); // starts the SDK's stream and returns: no worker needed
    } else {
      try {
        workers.execute(call);
      } catch (RejectedExecutionException e) {
        outcome.complete(ToolOutcome.error("The server is shutting down.")); // the pool refuses only then
      }
    }
    return outcome;
  }

  /** The arguments without null properties: a copy if there are any (the message is the transport's), else they. */
  private static ObjectNode withoutNulls(ObjectNode args) {
    for (var e : args.properties()) {
      if (e.getValue().isNull()) {
        ObjectNode copy = args.deepCopy();
        copy.properties().removeIf(f -> f.getValue().isNull());
        return copy;
      }
    }
    return args;
  }

  /** The conformance fixture (see {@link #CONFORMANCE_FIXTURES}): closes the connection, answers 300 ms later. */
  private static void testReconnection(JsonNode id, Outbound out) {
    out.closeConnection();
    ObjectNode result = Json.object();
    result.putArray("content").addObject().put("type", "text").put("text", "Reconnection test completed");
    CompletableFuture.delayedExecutor(300, TimeUnit.MILLISECONDS).execute(() -> reply(out, JsonRpc.result(id, result)));
  }

  /** The CallToolResult: structured content, images, the same JSON as text, and isError; text redacted. */
  ObjectNode toResult(ToolOutcome r) {
    Redactor redactor = tools.redactor();
    ObjectNode result = Json.object();
    var content = result.putArray("content");
    if (r.message() != null) {
      content.addObject().put("type", "text").put("text", redactor.redact(r.message()));
    }
    // Images (a chart of runCode) before the JSON, which stays the last content item.
    for (ToolOutcome.Image image : r.images()) {
      content.addObject().put("type", "image").put("data", image.base64()).put("mimeType", image.mimeType());
    }
    if (r.structured() != null) {
      JsonNode structured = redactor.redact(r.structured());
      // compact: the text goes to a model, where indentation only costs tokens
      String text = Json.write(structured);
      // the transport writes the object as this same text rather than serialising it a second time
      result.set("structuredContent",
          structured instanceof ObjectNode o ? Json.serialized(o, text) : structured);
      content.addObject().put("type", "text").put("text", text);
    }
    if (r.isError()) {
      result.put("isError", true);
    }
    return result;
  }

  private static void reply(Outbound out, ObjectNode message) {
    out.send(message);
    out.finish();
  }

  /** Whether the JVM is exiting: calls failing now fail because of it, which says nothing to a model. */
  static boolean shuttingDown() {
    try {
      Thread probe = new Thread(() -> { });
      Runtime.getRuntime().addShutdownHook(probe);
      Runtime.getRuntime().removeShutdownHook(probe);
      return false;
    } catch (IllegalStateException e) {
      return true;
    }
  }

  static String version() {
    String v = McpServer.class.getPackage().getImplementationVersion();
    return v != null ? v : "dev";
  }

  /** Sandboxes are the server's, shared by every session; closing the server destroys local ones and containers. */
  public Sandboxes sandboxes() {
    return sandboxes;
  }

  @Override
  public void close() {
    workers.shutdownNow();
    tools.close();
    sandboxes.close();
  }
}
