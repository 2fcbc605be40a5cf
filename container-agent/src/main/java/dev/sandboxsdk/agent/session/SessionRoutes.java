package dev.sandboxsdk.agent.session;

import com.sun.net.httpserver.HttpExchange;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.http.Json;
import dev.sandboxsdk.agent.http.Query;
import dev.sandboxsdk.agent.http.Replies;
import dev.sandboxsdk.agent.http.Responses;
import dev.sandboxsdk.agent.http.Routes;
import dev.sandboxsdk.agent.process.OutputBudget;
import java.io.IOException;
import java.util.Map;
import java.util.Set;

/**
 * {@code POST /api/sessions} (create, with optional {@code id}, {@code cwd}, {@code env}),
 * {@code GET /api/sessions} (list), {@code GET} and {@code DELETE /api/sessions/{id}}. Commands
 * run in a session through the exec routes' {@code sessionId}.
 */
public final class SessionRoutes {
  private static final int MAX_BODY_BYTES = 256 * 1024;

  private final Sessions sessions;
  private final OutputBudget budget;

  public SessionRoutes(Sessions sessions, OutputBudget budget) {
    this.sessions = sessions;
    this.budget = budget;
  }

  /** Registers create, list, get and delete. */
  public void register(Routes routes) {
    routes.on("POST", "/api/sessions", this::create)
        .on("GET", "/api/sessions", this::list)
        .on("GET", "/api/sessions/", "", Replies::decode, this::get)
        .on("DELETE", "/api/sessions/", "", Replies::decode, this::delete);
  }

  void create(HttpExchange exchange) throws IOException {
    Query.none(exchange);
    Json body = emptyOr(exchange);
    String id = null;
    String cwd = null;
    Map<String, String> env = Map.of();
    if (body != null) {
      body.allowOnly(Set.of("id", "cwd", "env"));
      id = body.string("id");
      cwd = body.string("cwd");
      if (cwd != null && (cwd.isEmpty() || cwd.indexOf('\0') >= 0)) {
        throw AgentException.invalid("cwd", "'cwd' must be a non-empty path without NUL; omit it for the workspace");
      }
      env = body.stringMap("env");
      for (Map.Entry<String, String> e : env.entrySet()) {
        if (e.getValue() == null || e.getValue().indexOf('\0') >= 0) {
          throw AgentException.invalid("env", "'env." + e.getKey() + "' must be a string without NUL");
        }
      }
    }
    Responses.ok(exchange, SessionMessages.One.of(sessions.create(id, cwd, env)));
  }

  void list(HttpExchange exchange) throws IOException {
    Query.none(exchange);
    Responses.ok(exchange, new SessionMessages.All(sessions.list().stream().map(SessionMessages.Info::of).toList()));
  }

  void get(HttpExchange exchange, String id) throws IOException {
    Query.none(exchange);
    Responses.ok(exchange, SessionMessages.One.of(sessions.require(id)));
  }

  void delete(HttpExchange exchange, String id) throws IOException {
    Query.none(exchange);
    Responses.ok(exchange, new SessionMessages.Deleted(sessions.delete(id).id()));
  }

  /** The body as JSON, or null when there is none (every field of create is optional). */
  private Json emptyOr(HttpExchange exchange) throws IOException {
    String length = exchange.getRequestHeaders().getFirst("Content-Length");
    if ("0".equals(length == null ? null : length.trim())) {
      return null;
    }
    return Json.read(exchange, MAX_BODY_BYTES, budget);
  }
}
