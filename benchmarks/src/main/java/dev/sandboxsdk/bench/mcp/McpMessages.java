package dev.sandboxsdk.bench.mcp;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

/** The JSON-RPC messages {@link McpBench} sends to the MCP server, and the check of an exec result. */
final class McpMessages {
  static final ObjectMapper JSON = new ObjectMapper();
  static final String PROTOCOL = "2025-11-25";

  private McpMessages() {}

  static ObjectNode argvTrue() {
    ObjectNode a = JSON.createObjectNode();
    a.putArray("argv").add("true");
    return a;
  }

  static ObjectNode execParams(ObjectNode arguments, String progressToken) {
    ObjectNode p = JSON.createObjectNode().put("name", "exec");
    p.set("arguments", arguments);
    if (progressToken != null) {
      p.putObject("_meta").put("progressToken", progressToken);
    }
    return p;
  }

  static ObjectNode initializeParams() {
    ObjectNode p = JSON.createObjectNode().put("protocolVersion", PROTOCOL);
    p.putObject("capabilities");
    p.putObject("clientInfo").put("name", "mcp-bench").put("version", "1");
    return p;
  }

  static ObjectNode message(Long id, String method, ObjectNode params) {
    ObjectNode m = JSON.createObjectNode().put("jsonrpc", "2.0");
    if (id != null) {
      m.put("id", id);
    }
    m.put("method", method);
    if (params != null) {
      m.set("params", params);
    }
    return m;
  }

  /** The structured result of a successful exec response, or an exception saying what came instead. */
  static JsonNode checkExec(JsonNode response) {
    if (response.has("error")) {
      throw new IllegalStateException("JSON-RPC error: " + response.get("error"));
    }
    JsonNode r = response.path("result");
    if (r.path("isError").asBoolean(false) || r.path("structuredContent").path("exitCode").asInt(-1) != 0) {
      throw new IllegalStateException("exec failed: " + abbreviate(r.toString()));
    }
    return r.get("structuredContent");
  }

  static String abbreviate(String s) {
    return s.length() <= 2000 ? s : s.substring(0, 2000) + "...";
  }
}
