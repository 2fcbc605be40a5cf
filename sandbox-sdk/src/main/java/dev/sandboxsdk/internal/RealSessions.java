package dev.sandboxsdk.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.Command;
import dev.sandboxsdk.ExecEvent;
import dev.sandboxsdk.ExecOptions;
import dev.sandboxsdk.ExecResult;
import dev.sandboxsdk.SandboxNotFoundException;
import dev.sandboxsdk.SandboxSessions;
import dev.sandboxsdk.Session;
import dev.sandboxsdk.SessionInfo;
import dev.sandboxsdk.SessionOptions;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.atomic.AtomicBoolean;
import okhttp3.HttpUrl;

/**
 * The {@link SandboxSessions} of a {@link RealSandbox}, over {@code /api/sessions}
 * (docs/protocol/sessions.md); a session's commands go through the sandbox's own {@link
 * ExecCalls} with the session's id in the body. Stateless and thread-safe.
 */
final class RealSessions implements SandboxSessions {
  private final AgentHttp http;
  private final ExecCalls execs;

  RealSessions(AgentHttp http, ExecCalls execs) {
    this.http = http;
    this.execs = execs;
  }

  @Override
  public Session create(SessionOptions options) {
    Objects.requireNonNull(options, "options == null");
    ObjectNode body = Wire.MAPPER.createObjectNode();
    if (options.id() != null) {
      body.put("id", options.id());
    }
    if (options.cwd() != null) {
      body.put("cwd", options.cwd());
    }
    if (!options.env().isEmpty()) {
      ObjectNode env = body.putObject("env");
      options.env().forEach(env::put);
    }
    JsonNode answer = http.call(http.post(http.url("api", "sessions"), body), "sessions().create");
    return handle(info(answer.path("session")));
  }

  @Override
  public List<SessionInfo> list() {
    JsonNode answer = http.call(http.get(http.url("api", "sessions")), "sessions().list");
    JsonNode all = answer.get("sessions");
    if (all == null || !all.isArray()) {
      throw Wire.malformed("session list", "field 'sessions' is missing or not an array");
    }
    List<SessionInfo> out = new ArrayList<>(all.size());
    all.forEach(n -> out.add(info(n)));
    return out;
  }

  @Override
  public Optional<Session> get(String id) {
    try {
      return Optional.of(handle(fetch(id)));
    } catch (SandboxNotFoundException e) {
      if ("SESSION_NOT_FOUND".equals(e.code())) {
        return Optional.empty();
      }
      throw e;
    }
  }

  @Override
  public void delete(String id) {
    http.call(http.delete(url(id)), "sessions().delete");
  }

  private SessionInfo fetch(String id) {
    return info(http.call(http.get(url(id)), "sessions().get").path("session"));
  }

  private HttpUrl url(String id) {
    Objects.requireNonNull(id, "id == null");
    if (id.isEmpty()) {
      throw new IllegalArgumentException("id is empty");
    }
    return http.url("api", "sessions", id);
  }

  static SessionInfo info(JsonNode n) {
    if (!n.isObject()) {
      throw Wire.malformed("session", "not an object");
    }
    return new SessionInfo(Wire.text(n, "id"), Wire.instant(n, "createdAt"), Wire.instant(n, "lastUsedAt"),
        n.path("commandCount").asLong(), n.path("busy").asBoolean());
  }

  private Session handle(SessionInfo info) {
    return new Handle(info.id(), execs.inSession(info.id()));
  }

  /** A session's handle: its id and the exec calls that name it. */
  private final class Handle implements Session {
    private final String id;
    private final ExecCalls calls;
    private final AtomicBoolean closed = new AtomicBoolean();

    Handle(String id, ExecCalls calls) {
      this.id = id;
      this.calls = calls;
    }

    @Override
    public String id() {
      return id;
    }

    @Override
    public ExecResult exec(Command command, ExecOptions options) {
      return calls.exec(command, options);
    }

    @Override
    public CompletableFuture<ExecResult> execAsync(Command command, ExecOptions options) {
      return calls.execAsync(command, options);
    }

    @Override
    public Flow.Publisher<ExecEvent> execStream(Command command, ExecOptions options) {
      return calls.execStream(command, options);
    }

    @Override
    public SessionInfo info() {
      return fetch(id);
    }

    @Override
    public void delete() {
      closed.set(true);
      RealSessions.this.delete(id);
    }

    @Override
    public void close() {
      if (!closed.compareAndSet(false, true) || http.isClosed()) {
        return;
      }
      try {
        RealSessions.this.delete(id);
      } catch (SandboxNotFoundException gone) {
        // deleted already: nothing left to do
      }
    }

    @Override
    public String toString() {
      return "Session{" + id + "}";
    }
  }
}
