package dev.sandboxsdk.mcp.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Drives an in-process {@link McpServer} session the way a transport does, recording every
 * notification. Every tool result's structuredContent is checked against the tool's outputSchema.
 */
final class McpTestClient implements AutoCloseable {
  final McpServer server;
  final Session session;
  final List<ObjectNode> notifications = new CopyOnWriteArrayList<>();
  private final AtomicInteger ids = new AtomicInteger();
  private final ToolCatalog catalog = ToolCatalog.load();

  McpTestClient(AdapterConfig config) {
    this.server = new McpServer(config);
    this.session = server.newSession("test");
  }

  /** A client whose session is initialized. */
  static McpTestClient initialized(AdapterConfig config) {
    McpTestClient c = new McpTestClient(config);
    ObjectNode p = Json.object().put("protocolVersion", "2025-11-25");
    p.putObject("clientInfo").put("name", "test").put("version", "1");
    assertThat(c.request("initialize", p).has("result")).isTrue();
    c.send(Json.object().put("jsonrpc", "2.0").put("method", "notifications/initialized"));
    return c;
  }

  /** Sends a raw message; returns the future of what it answers (null for none). */
  CompletableFuture<ObjectNode> sendAsync(JsonNode message) {
    CompletableFuture<ObjectNode> answer = new CompletableFuture<>();
    server.handle(session, message, new Outbound() {
      @Override
      public void send(ObjectNode m) {
        if (m.has("method")) {
          notifications.add(m);
        } else {
          answer.complete(m);
        }
      }

      @Override
      public void finish() {
        answer.complete(null);
      }
    });
    return answer;
  }

  ObjectNode send(JsonNode message) {
    try {
      return sendAsync(message).get(60, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new AssertionError("no answer to " + message, e);
    }
  }

  ObjectNode request(String method, JsonNode params) {
    return send(requestMessage(ids.incrementAndGet(), method, params));
  }

  static ObjectNode requestMessage(Object id, String method, JsonNode params) {
    ObjectNode m = Json.object().put("jsonrpc", "2.0").put("method", method);
    m.set("id", Json.MAPPER.valueToTree(id));
    if (params != null) {
      m.set("params", params);
    }
    return m;
  }

  static ObjectNode callParams(String tool, ObjectNode args, Object progressToken) {
    ObjectNode p = Json.object().put("name", tool);
    p.set("arguments", args);
    if (progressToken != null) {
      p.putObject("_meta").set("progressToken", Json.MAPPER.valueToTree(progressToken));
    }
    return p;
  }

  /** Calls a tool and returns its CallToolResult, checked against the tool's outputSchema. */
  JsonNode call(String tool, ObjectNode args) {
    return call(tool, args, null);
  }

  JsonNode call(String tool, ObjectNode args, Object progressToken) {
    ObjectNode response = request("tools/call", callParams(tool, args, progressToken));
    assertThat(response.has("error")).as("JSON-RPC error: %s", response).isFalse();
    JsonNode result = response.get("result");
    checkResult(tool, result);
    return result;
  }

  /** The result's structuredContent matches the outputSchema, and its text content is the same JSON. */
  void checkResult(String tool, JsonNode result) {
    assertThat(result.get("content").isArray()).isTrue();
    JsonNode structured = result.get("structuredContent");
    if (structured == null) {
      assertThat(result.path("isError").asBoolean()).as("only error results may lack structuredContent: %s", result)
          .isTrue();
      return;
    }
    assertThat(SchemaValidator.validate(catalog.get(tool).get("outputSchema"), structured))
        .as("%s result against its outputSchema", tool).isEmpty();
    JsonNode last = result.get("content").get(result.get("content").size() - 1);
    assertThat(Json.parse(last.get("text").asText())).isEqualTo(Json.parse(Json.write(structured)));
  }

  static ObjectNode args(Object... pairs) {
    ObjectNode o = Json.object();
    for (int i = 0; i < pairs.length; i += 2) {
      o.set((String) pairs[i], Json.MAPPER.valueToTree(pairs[i + 1]));
    }
    return o;
  }

  /** A tool result's structuredContent. */
  static JsonNode sc(JsonNode result) {
    return result.get("structuredContent");
  }

  /** A tool result's first text (an error's message). */
  static String text(JsonNode result) {
    return result.get("content").get(0).get("text").asText();
  }

  static boolean isError(JsonNode result) {
    return result.path("isError").asBoolean(false);
  }

  /** Progress notifications sent for {@code token}, in order. */
  List<JsonNode> progress(Object token) {
    JsonNode t = Json.MAPPER.valueToTree(token);
    return notifications.stream()
        .filter(n -> n.get("method").asText().equals("notifications/progress"))
        .map(n -> n.get("params"))
        .filter(p -> p.get("progressToken").equals(t))
        .map(p -> (JsonNode) p)
        .toList();
  }

  @Override
  public void close() {
    session.close();
    server.close();
  }
}
