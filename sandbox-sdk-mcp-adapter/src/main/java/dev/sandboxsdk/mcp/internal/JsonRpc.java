package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/** JSON-RPC 2.0 message shapes and the error codes MCP uses. */
public final class JsonRpc {
  public static final int PARSE_ERROR = -32700;
  public static final int INVALID_REQUEST = -32600;
  public static final int METHOD_NOT_FOUND = -32601;
  public static final int INVALID_PARAMS = -32602;
  public static final int INTERNAL_ERROR = -32603;

  private JsonRpc() {
  }

  public static ObjectNode result(JsonNode id, JsonNode result) {
    ObjectNode m = Json.object().put("jsonrpc", "2.0");
    m.set("id", id);
    m.set("result", result);
    return m;
  }

  public static ObjectNode error(JsonNode id, int code, String message) {
    ObjectNode m = Json.object().put("jsonrpc", "2.0");
    m.set("id", id == null ? NullNode.instance : id);
    m.putObject("error").put("code", code).put("message", message);
    return m;
  }

  public static ObjectNode notification(String method, JsonNode params) {
    ObjectNode m = Json.object().put("jsonrpc", "2.0").put("method", method);
    m.set("params", params);
    return m;
  }

  /** Whether a request id has a type JSON-RPC allows (MCP: string or integer, never null). */
  public static boolean isValidId(JsonNode id) {
    return id != null && (id.isTextual() || id.isIntegralNumber());
  }

  /** A thrown protocol error: the dispatcher turns it into an error response. */
  public static final class Error extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final int code;

    public Error(int code, String message) {
      super(message, null, false, false);
      this.code = code;
    }

    public int code() {
      return code;
    }
  }
}
