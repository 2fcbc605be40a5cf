package dev.sandboxsdk.agent.code;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Iterator;
import java.util.Map;

/**
 * Wire records and events of the code routes ({@link CodeRoutes}). Names follow Cloudflare's
 * interpreter API ({@code contextId}, {@code stdout}/{@code stderr} with {@code text}, {@code
 * result} with one field per MIME type, {@code error} with {@code ename}/{@code evalue}/{@code
 * traceback}, {@code execution_complete}); our additions are marked in docs/protocol.
 */
final class CodeMessages {
  private CodeMessages() {
  }

  /** A context as listed: {@code pid} 0 while no interpreter runs. */
  record Context(String id, String language, String cwd, String createdAt, String lastUsed, int executions,
      boolean busy, long pid) {
    static Context of(CodeContext c) {
      return new Context(c.id(), c.language().wireName(), c.cwd(), c.created().toString(), c.lastUsed().toString(),
          c.executions(), c.isBusy(), c.pid());
    }
  }

  /** POST /api/contexts: Cloudflare's {@code contextId}, {@code language}, {@code cwd}, and ours. */
  record Created(String contextId, String language, String cwd, Context context) {
  }

  record Contexts(java.util.List<Context> contexts) {
  }

  record One(Context context) {
  }

  record Deleted(String contextId) {
  }

  record Interrupted(String contextId, boolean interrupted) {
  }

  /** The MIME types that also travel under Cloudflare's short names on a {@code result} event. */
  private static final Map<String, String> SHORT = Map.of(
      "text/plain", "text", "text/html", "html", "image/png", "png", "image/jpeg", "jpeg",
      "image/svg+xml", "svg", "text/latex", "latex", "text/markdown", "markdown",
      "application/javascript", "javascript", "application/json", "json");

  /**
   * A runner event as the wire has it: {@code result} gets the short names beside its {@code data}
   * bundle. The SSE writer adds the {@code timestamp} (ISO-8601, as on every event).
   */
  static ObjectNode wire(ObjectNode event) {
    ObjectNode out = JsonNodeFactory.instance.objectNode();
    String type = event.path("type").asText();
    out.put("type", type);
    if (type.equals("result")) {
      JsonNode data = event.path("data");
      Iterator<Map.Entry<String, JsonNode>> fields = data.fields();
      while (fields.hasNext()) {
        Map.Entry<String, JsonNode> f = fields.next();
        String name = SHORT.get(f.getKey());
        if (name != null) {
          out.set(name, f.getValue());
        }
      }
      out.set("data", data);
      out.put("isMainResult", event.path("isMainResult").asBoolean(false));
    } else {
      event.fields().forEachRemaining(f -> {
        if (!f.getKey().equals("type")) {
          out.set(f.getKey(), f.getValue());
        }
      });
    }
    return out; // the SSE writer adds the timestamp
  }

  /** The last event of a run: Cloudflare's {@code execution_complete} with our details. */
  static ObjectNode complete(String contextId, CodeContext.Outcome o) {
    return JsonNodeFactory.instance.objectNode().put("type", "execution_complete")
        .put("execution_count", o.executionCount()).put("contextId", contextId).put("durationMs", o.durationMs())
        .put("interrupted", o.interrupted()).put("timedOut", o.timedOut()).put("restarted", o.restarted())
        .put("truncated", o.truncated());
  }
}
