package dev.sandboxsdk.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.CodeContext;
import dev.sandboxsdk.CodeContextInfo;
import dev.sandboxsdk.CodeContextOptions;
import dev.sandboxsdk.CodeError;
import dev.sandboxsdk.CodeEvent;
import dev.sandboxsdk.CodeLanguage;
import dev.sandboxsdk.CodeOutput;
import dev.sandboxsdk.CodeResult;
import dev.sandboxsdk.SandboxCode;
import dev.sandboxsdk.SandboxNotFoundException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.Flow;
import okhttp3.Request;

/**
 * The {@link SandboxCode} of a {@link RealSandbox}, over {@code /api/contexts} and the event
 * stream of {@code POST /api/execute/code} (docs/protocol/code.md). A run is the stream read to
 * its {@code execution_complete}; {@link CodeContext#run} collects it into a {@link CodeResult}.
 * Stateless and thread-safe.
 */
final class RealCode implements SandboxCode {
  private final AgentHttp http;
  private final EventStreams streams;

  RealCode(AgentHttp http, EventStreams streams) {
    this.http = http;
    this.streams = streams;
  }

  @Override
  public CodeContext createContext(CodeContextOptions options) {
    Objects.requireNonNull(options, "options == null");
    ObjectNode body = Wire.MAPPER.createObjectNode().put("language", options.language().wireName());
    if (options.cwd() != null) {
      body.put("cwd", options.cwd());
    }
    if (!options.env().isEmpty()) {
      ObjectNode env = body.putObject("env_vars");
      options.env().forEach(env::put);
    }
    JsonNode answer = http.call(http.post(http.url("api", "contexts"), body), "code().createContext");
    return new Handle(Wire.text(answer, "contextId"), options.language());
  }

  @Override
  public List<CodeContextInfo> contexts() {
    JsonNode answer = http.call(http.get(http.url("api", "contexts")), "code().contexts");
    List<CodeContextInfo> out = new ArrayList<>();
    JsonNode list = answer.path("contexts");
    if (!list.isArray()) {
      throw Wire.malformed("code contexts", "field 'contexts' is missing or not an array");
    }
    list.forEach(n -> out.add(info(n)));
    return out;
  }

  @Override
  public Optional<CodeContext> context(String id) {
    Objects.requireNonNull(id, "id == null");
    try {
      CodeContextInfo info = fetch(id);
      return Optional.of(new Handle(info.id(), info.language()));
    } catch (SandboxNotFoundException e) {
      return Optional.empty();
    }
  }

  private CodeContextInfo fetch(String id) {
    return info(http.call(http.get(http.url("api", "contexts", id)), "code().context").path("context"));
  }

  static CodeContextInfo info(JsonNode n) {
    String cwd = n.path("cwd").isTextual() ? n.path("cwd").asText() : null;
    return new CodeContextInfo(Wire.text(n, "id"), CodeLanguage.of(Wire.text(n, "language")), cwd,
        instant(n, "createdAt"), instant(n, "lastUsed"), n.path("executions").asInt(0), n.path("busy").asBoolean(),
        n.path("pid").asLong(0));
  }

  private static Instant instant(JsonNode n, String field) {
    return n.path(field).isTextual() ? Instant.parse(n.path(field).asText()) : Instant.EPOCH;
  }

  /** A code event, or null for a type this SDK does not know (skipped). */
  static CodeEvent event(JsonNode n) {
    switch (n.path("type").asText()) {
      case "stdout":
        return new CodeEvent.Stdout(n.path("text").asText(""));
      case "stderr":
        return new CodeEvent.Stderr(n.path("text").asText(""));
      case "result":
        return new CodeEvent.Result(output(n));
      case "error":
        if (!n.has("ename")) {
          throw ErrorMapper.streamError(n); // the agent's own failure, not the code's
        }
        List<String> tb = new ArrayList<>();
        n.path("traceback").forEach(t -> tb.add(t.asText()));
        return new CodeEvent.Error(new CodeError(n.path("ename").asText(), n.path("evalue").asText(""), tb));
      case "execution_complete":
        return new CodeEvent.Complete(n.path("execution_count").asInt(0), Duration.ofMillis(n.path("durationMs")
            .asLong(0)), n.path("interrupted").asBoolean(), n.path("timedOut").asBoolean(),
            n.path("restarted").asBoolean(), n.path("truncated").asBoolean());
      default:
        return null;
    }
  }

  private static CodeOutput output(JsonNode n) {
    Map<String, String> data = new LinkedHashMap<>();
    Iterator<Map.Entry<String, JsonNode>> fields = n.path("data").fields();
    while (fields.hasNext()) {
      Map.Entry<String, JsonNode> f = fields.next();
      data.put(f.getKey(), f.getValue().isTextual() ? f.getValue().asText() : f.getValue().toString());
    }
    return new CodeOutput(data, n.path("isMainResult").asBoolean());
  }

  /** A context by id: every call is a request; holds nothing else. */
  private final class Handle implements CodeContext {
    private final String id;
    private final CodeLanguage language;

    Handle(String id, CodeLanguage language) {
      this.id = id;
      this.language = language;
    }

    @Override
    public String id() {
      return id;
    }

    @Override
    public CodeLanguage language() {
      return language;
    }

    @Override
    public CodeContextInfo info() {
      return fetch(id);
    }

    @Override
    public CodeResult run(String code) {
      return run(code, Duration.ZERO);
    }

    @Override
    public CodeResult run(String code, Duration timeout) {
      Request request = runRequest(code, timeout);
      String what = "code run in " + id;
      Abort abort = new Abort();
      CodeCollector collector = new CodeCollector();
      try (EventCursor<CodeEvent> cursor = streams.openStream(request, what, RealCode::event,
          e -> e instanceof CodeEvent.Complete, abort)) {
        for (CodeEvent e = cursor.next(); e != null; e = cursor.next()) {
          collector.accept(e);
        }
      } catch (java.io.IOException e) {
        throw ErrorMapper.fromIo(e, what);
      } catch (RuntimeException e) {
        throw e;
      } catch (Exception e) {
        throw new dev.sandboxsdk.SandboxException(what + ": " + e, e);
      }
      return collector.result();
    }

    @Override
    public Flow.Publisher<CodeEvent> runStream(String code, Duration timeout) {
      Request request = runRequest(code, timeout);
      String what = "code runStream in " + id;
      return new EventPublisher<>(abort -> {
        EventCursor<CodeEvent>[] opened = new EventCursor[1];
        abort.onAbort(() -> {
          if (opened[0] == null || !opened[0].isFinished()) {
            http.executor().execute(this::interruptQuietly);
          }
        });
        opened[0] = streams.openStream(request, what, RealCode::event, e -> e instanceof CodeEvent.Complete, abort);
        return opened[0];
      }, http.executor(), t -> http.streamError(t, what));
    }

    private void interruptQuietly() {
      try {
        interrupt();
      } catch (RuntimeException ignored) {
        // best effort: the agent also interrupts once it notices the closed stream
      }
    }

    private Request runRequest(String code, Duration timeout) {
      Objects.requireNonNull(code, "code == null");
      Objects.requireNonNull(timeout, "timeout == null");
      if (timeout.isNegative()) {
        throw new IllegalArgumentException("timeout is negative: " + timeout);
      }
      ObjectNode body = Wire.MAPPER.createObjectNode().put("context_id", id).put("code", code);
      if (!timeout.isZero()) {
        body.put("timeout_ms", Math.max(1, timeout.toMillis()));
      }
      return http.post(http.url("api", "execute", "code"), body);
    }

    @Override
    public boolean interrupt() {
      return http.call(http.post(http.url("api", "contexts", id, "interrupt"), Wire.MAPPER.createObjectNode()),
          "code interrupt").path("interrupted").asBoolean();
    }

    @Override
    public void restart() {
      http.call(http.post(http.url("api", "contexts", id, "restart"), Wire.MAPPER.createObjectNode()),
          "code restart");
    }

    @Override
    public void delete() {
      try {
        http.call(http.delete(http.url("api", "contexts", id)), "code delete");
      } catch (SandboxNotFoundException e) {
        // deleted already: idempotent
      }
    }

    @Override
    public void close() {
      delete();
    }

    @Override
    public String toString() {
      return "CodeContext{" + id + ", " + language.wireName() + "}";
    }
  }

  /** Collects a run's events into its result. Not thread-safe: one cursor's thread uses it. */
  static final class CodeCollector {
    private final StringBuilder stdout = new StringBuilder();
    private final StringBuilder stderr = new StringBuilder();
    private final List<CodeOutput> outputs = new ArrayList<>();
    private CodeError error;
    private CodeEvent.Complete complete;

    void accept(CodeEvent e) {
      if (e instanceof CodeEvent.Stdout s) {
        stdout.append(s.text());
      } else if (e instanceof CodeEvent.Stderr s) {
        stderr.append(s.text());
      } else if (e instanceof CodeEvent.Result r) {
        outputs.add(r.output());
      } else if (e instanceof CodeEvent.Error err) {
        error = err.error();
      } else if (e instanceof CodeEvent.Complete c) {
        complete = c;
      }
    }

    CodeResult result() {
      if (complete == null) {
        throw new dev.sandboxsdk.SandboxConnectionException("the code run's stream ended before its end", null);
      }
      return new CodeResult(stdout.toString(), stderr.toString(), outputs, error, complete.executionCount(),
          complete.duration(), complete.interrupted(), complete.timedOut(), complete.restarted(),
          complete.truncated());
    }
  }
}
