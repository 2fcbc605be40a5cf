package dev.sandboxsdk.agent.code;

import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import dev.sandboxsdk.agent.AgentConfig;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.http.Json;
import dev.sandboxsdk.agent.http.Query;
import dev.sandboxsdk.agent.http.Replies;
import dev.sandboxsdk.agent.http.Responses;
import dev.sandboxsdk.agent.http.Routes;
import dev.sandboxsdk.agent.http.SseWriter;
import dev.sandboxsdk.agent.process.OutputBudget;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * The code context routes: {@code POST}/{@code GET /api/contexts}, {@code GET}/{@code DELETE
 * /api/contexts/{id}}, {@code POST /api/contexts/{id}/restart} and {@code /interrupt}, and {@code
 * POST /api/execute/code}, whose answer is an event stream ending in {@code execution_complete}.
 */
public final class CodeRoutes {
  private static final Set<String> CREATE_FIELDS = Set.of("language", "cwd", "env_vars", "envVars");
  private static final Set<String> RUN_FIELDS = Set.of("context_id", "contextId", "code", "language", "timeout_ms",
      "timeoutMs", "maxOutputBytes");
  /** The longest code a run accepts (1 MiB), below the agent's body limit. */
  static final int MAX_CODE_BYTES = 1 << 20;

  private final CodeContexts contexts;
  private final AgentConfig config;
  private final OutputBudget budget;

  public CodeRoutes(CodeContexts contexts, AgentConfig config, OutputBudget budget) {
    this.contexts = contexts;
    this.config = config;
    this.budget = budget;
  }

  /** Registers the context routes and the run. */
  public void register(Routes routes) {
    routes.on("POST", "/api/contexts", this::create)
        .on("GET", "/api/contexts", exchange -> {
          Query.none(exchange);
          List<CodeMessages.Context> out = new ArrayList<>();
          contexts.list().forEach(c -> out.add(CodeMessages.Context.of(c)));
          Responses.ok(exchange, new CodeMessages.Contexts(out));
        })
        .on("GET", "/api/contexts/", "", Replies::decode, (exchange, id) -> {
          Query.none(exchange);
          Responses.ok(exchange, new CodeMessages.One(CodeMessages.Context.of(contexts.require(id))));
        })
        .on("DELETE", "/api/contexts/", "", Replies::decode, (exchange, id) -> {
          Query.none(exchange);
          contexts.delete(id);
          Responses.ok(exchange, new CodeMessages.Deleted(id));
        })
        .on("POST", "/api/contexts/", "/restart", Replies::decode, this::restart)
        .on("POST", "/api/contexts/", "/interrupt", Replies::decode, (exchange, id) -> {
          Query.none(exchange);
          boolean running = contexts.require(id).interrupt();
          Responses.ok(exchange, new CodeMessages.Interrupted(id, running));
        })
        .on("POST", "/api/execute/code", this::run);
  }

  void create(HttpExchange exchange) throws IOException {
    Query.none(exchange);
    Json body = Json.read(exchange, config.maxBodyBytes(), budget).allowOnly(CREATE_FIELDS);
    CodeLanguage language = CodeLanguage.parse(body.string("language"));
    String cwd = body.string("cwd");
    Map<String, String> env = body.stringMap(body.has("env_vars") ? "env_vars" : "envVars");
    CodeContext c = contexts.create(language, cwd, env == null ? Map.of() : env);
    Responses.ok(exchange, new CodeMessages.Created(c.id(), language.wireName(), c.cwd(), CodeMessages.Context.of(c)));
  }

  void restart(HttpExchange exchange, String id) throws IOException {
    Query.none(exchange);
    CodeContext c = contexts.require(id);
    try {
      c.restart();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AgentException(ErrorCode.SHUTTING_DOWN, "the agent is shutting down");
    }
    Responses.ok(exchange, new CodeMessages.One(CodeMessages.Context.of(c)));
  }

  void run(HttpExchange exchange) throws IOException {
    Query.none(exchange);
    Json body = Json.read(exchange, config.maxBodyBytes(), budget).allowOnly(RUN_FIELDS);
    String code = body.string("code");
    if (code == null) {
      throw AgentException.invalid("code", "code is required");
    }
    if (code.length() > MAX_CODE_BYTES) {
      throw new AgentException(ErrorCode.PAYLOAD_TOO_LARGE, "code is at most " + MAX_CODE_BYTES + " characters",
          Map.of("limit", MAX_CODE_BYTES));
    }
    String id = body.has("context_id") ? body.string("context_id") : body.string("contextId");
    Long timeout = body.integer(body.has("timeout_ms") ? "timeout_ms" : "timeoutMs", 0, 86_400_000L);
    CodeLimits limits = contexts.limits();
    Long max = body.integer("maxOutputBytes", 0, limits.maxOutputBytesLimit());
    CodeContext context;
    boolean temporary = id == null;
    if (temporary) { // Cloudflare's runCode without a context: a fresh one for this run only
      context = contexts.create(CodeLanguage.parse(body.string("language")), null, Map.of());
    } else {
      context = contexts.require(id);
      String language = body.string("language");
      if (language != null && CodeLanguage.parse(language) != context.language()) {
        throw AgentException.invalid("language", "context " + id + " runs " + context.language().wireName()
            + ", not " + language);
      }
    }
    try {
      stream(exchange, context, code, timeout == null ? 0 : timeout,
          max == null ? limits.defaultMaxOutputBytes() : max);
    } finally {
      if (temporary) {
        contexts.delete(context.id());
      }
    }
  }

  private void stream(HttpExchange exchange, CodeContext context, String code, long timeoutMs, long max)
      throws IOException {
    // ASCII only: Cloudflare's interpreter client decodes each read on its own (docs/protocol/code.md)
    SseWriter sse = SseWriter.openAscii(exchange);
    long keepAlive = TimeUnit.MILLISECONDS.toNanos(config.keepAliveMs());
    try {
      CodeContext.Outcome outcome = context.run(code, timeoutMs, max, new CodeContext.Listener() {
        @Override
        public void event(ObjectNode event) throws IOException {
          sse.send(CodeMessages.wire(event));
        }

        @Override
        public void idle() throws IOException {
          if (!sse.keepAliveIfIdle(keepAlive)) {
            throw new IOException("the client is gone");
          }
        }
      });
      sse.send(CodeMessages.complete(context.id(), outcome));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      sse.sendInternalError(new AgentException(ErrorCode.SHUTTING_DOWN, "the agent is shutting down"));
    } catch (RuntimeException e) {
      sse.sendInternalError(e);
    } finally {
      sse.close();
    }
  }
}
