package dev.sandboxsdk.mcp.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.api.BugDetectors;
import com.code_intelligence.jazzer.junit.DictionaryEntries;
import com.code_intelligence.jazzer.junit.FuzzTest;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiPredicate;

/**
 * Coverage-guided fuzzing of the MCP server's JSON-RPC handling: any bytes on stdin (one message
 * per line: parsing, the JSON-RPC envelope, lifecycle, tools/list, tools/call argument validation)
 * and any JSON value against every tool's input schema. The property: every line the server writes
 * is a JSON-RPC response or notification, an error carries a code of the JSON-RPC spec other than
 * internal error, and nothing throws.
 *
 * <p>The server drives a remote agent at {@code 127.0.0.1:1}, where nothing listens: a tool call
 * that passes validation fails to connect instead of running a fuzzed command on this machine.
 * In a normal build Jazzer runs the inputs under {@code McpMessageFuzzTestInputs/<method>/}; with
 * {@code JAZZER_FUZZ=1} it fuzzes (docs/performance.md, "Fuzzing").
 */
class McpMessageFuzzTest {
  private static final McpServer SERVER = new McpServer(AdapterConfig.parse(
      new String[] {"--agent-url", "http://127.0.0.1:1"}, Map.of(AdapterConfig.AGENT_TOKEN_ENV, "fuzz")));
  private static final ToolCatalog CATALOG = ToolCatalog.load();
  private static final BiPredicate<String, Integer> AGENT_ONLY =
      (host, port) -> port == 1 && Set.of("127.0.0.1", "localhost").contains(host);
  private static final Set<Integer> CLIENT_ERRORS = Set.of(JsonRpc.PARSE_ERROR, JsonRpc.INVALID_REQUEST,
      JsonRpc.METHOD_NOT_FOUND, JsonRpc.INVALID_PARAMS);

  @FuzzTest(maxDuration = "2m")
  @DictionaryEntries({"{\"jsonrpc\":\"2.0\",", "\"id\":", "\"method\":", "\"params\":", "\"result\":", "\"error\":",
      "\"initialize\"", "\"protocolVersion\":\"2025-06-18\"", "\"ping\"", "\"tools/list\"", "\"tools/call\"",
      "\"logging/setLevel\"", "\"notifications/cancelled\"", "\"requestId\":", "\"name\":", "\"arguments\":",
      "\"_meta\":{\"progressToken\":", "\"cursor\":", "\"level\":\"debug\"", "\"exec\"", "\"command\":",
      "\"sandboxId\":", "\\x0A", "null", "1e999", "-0.0"})
  void stdioLines(byte[] input) throws IOException {
    // Jazzer's SSRF detector flags every connection; the harness means exactly one, to the agent
    // that is not there. A message that makes the server connect anywhere else is a finding. Set
    // for every input (Jazzer resets it between inputs) and not closed: a cancelled call's
    // connection attempt can outlive the input that started it.
    BugDetectors.allowNetworkConnections(AGENT_ONLY);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    new StdioTransport(SERVER, new ByteArrayInputStream(input), out).run();

    for (String line : out.toString(StandardCharsets.UTF_8).split("\n", -1)) {
      if (!line.isEmpty()) {
        assertIsJsonRpcMessage(line);
      }
    }
  }

  @FuzzTest(maxDuration = "2m")
  @DictionaryEntries({"\"sandboxId\":", "\"command\":", "\"argv\":", "\"timeoutSeconds\":", "\"processId\":",
      "\"signal\":", "\"env\":", "\"cwd\":", "\"language\":", "\"code\":", "\"path\":", "\"content\":", "1.0", "1e400",
      "-1", "[]", "{}", "null", "true"})
  void argumentsAgainstEveryToolSchema(byte[] input) {
    JsonNode value;
    try {
      value = Json.parse(new String(input, StandardCharsets.UTF_8));
    } catch (IllegalArgumentException e) {
      return; // not JSON: the transport answers with a parse error before any schema is consulted
    }
    for (String tool : CATALOG.names()) {
      List<String> problems = SchemaValidator.validate(CATALOG.get(tool).get("inputSchema"), value);
      assertThat(problems).doesNotContainNull();
      if (!value.isObject()) {
        assertThat(problems).as("%s accepted %s", tool, value).isNotEmpty();
      }
    }
  }

  private static void assertIsJsonRpcMessage(String line) {
    JsonNode m = Json.parse(line);
    assertThat(m.isObject()).as(line).isTrue();
    assertThat(m.path("jsonrpc").asText()).as(line).isEqualTo("2.0");
    List<String> kinds = new ArrayList<>();
    m.fieldNames().forEachRemaining(kinds::add);
    if (m.has("method")) { // a notification the server sends (progress, log message)
      assertThat(m.has("id")).as(line).isFalse();
      return;
    }
    assertThat(m.has("result") ^ m.has("error")).as("exactly one of result and error: %s", line).isTrue();
    assertThat(m.has("id")).as(line).isTrue();
    if (m.has("error")) {
      ObjectNode error = (ObjectNode) m.get("error");
      assertThat(error.path("code").isInt()).as(line).isTrue();
      assertThat(CLIENT_ERRORS).as("error code in %s", line).contains(error.get("code").asInt());
      assertThat(error.path("message").asText()).as(line).isNotBlank();
    }
  }
}
