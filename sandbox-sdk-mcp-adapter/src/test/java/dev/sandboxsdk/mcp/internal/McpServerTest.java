package dev.sandboxsdk.mcp.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The JSON-RPC and MCP lifecycle layer, without starting any sandbox. */
class McpServerTest {
  private final McpTestClient client = new McpTestClient(AdapterConfig.defaults());

  @AfterEach
  void close() {
    client.close();
  }

  private ObjectNode initialize(String version) {
    ObjectNode p = Json.object().put("protocolVersion", version);
    p.putObject("capabilities");
    p.putObject("clientInfo").put("name", "t").put("version", "1");
    return client.request("initialize", p);
  }

  @Test
  void initializeEchoesASupportedVersionAndDeclaresToolsAndLogging() {
    ObjectNode r = initialize("2025-06-18");
    assertThat(r.get("jsonrpc").asText()).isEqualTo("2.0");
    JsonNode result = r.get("result");
    assertThat(result.get("protocolVersion").asText()).isEqualTo("2025-06-18");
    assertThat(result.get("capabilities").has("tools")).isTrue();
    assertThat(result.get("capabilities").has("logging")).isTrue();
    assertThat(result.get("capabilities").has("resources")).isFalse();
    assertThat(result.get("serverInfo").get("name").asText()).isEqualTo("sandbox-sdk-mcp-adapter");
    assertThat(result.get("instructions").asText()).contains("exec");
  }

  @Test
  void instructionsAndGetSandboxSayLocalSandboxesAreNotIsolatedFromTheHost() {
    String instructions = initialize("2025-06-18").get("result").get("instructions").asText();
    String getSandbox = ToolCatalog.load().get("getSandbox").get("description").asText();

    assertThat(instructions).doesNotContain("isolated sandboxes")
        .contains("not isolated from this machine", "host user", "files", "network", "minimal environment");
    assertThat(getSandbox).doesNotContain("isolated workspace")
        .contains("not isolated from the host", "host user", "files", "network", "agent's container");
  }

  @Test
  void overStdioJsonNestedDeeperThan64IsAParseErrorAndTheNextLineIsServed() throws Exception {
    String deep = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":"
        + "[".repeat(65) + "]".repeat(65) + "}}";
    String ping = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}";
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    try (McpServer server = new McpServer(AdapterConfig.defaults())) {
      new StdioTransport(server, new java.io.ByteArrayInputStream((deep + "\n" + ping + "\n")
          .getBytes(java.nio.charset.StandardCharsets.UTF_8)), out).run();
    }
    String[] lines = out.toString(java.nio.charset.StandardCharsets.UTF_8).split("\n");

    assertThat(lines).hasSize(2);
    assertThat(Json.parse(lines[0]).path("error").path("code").asInt()).isEqualTo(JsonRpc.PARSE_ERROR);
    assertThat(Json.parse(lines[0]).path("error").path("message").asText()).contains("nesting depth");
    assertThat(Json.parse(lines[1]).path("id").asInt()).isEqualTo(2);
    assertThat(Json.parse(lines[1]).has("result")).isTrue();
  }

  @Test
  void everySupportedVersionIsEchoed() {
    for (String v : McpServer.PROTOCOL_VERSIONS) {
      try (McpTestClient c = new McpTestClient(AdapterConfig.defaults())) {
        ObjectNode p = Json.object().put("protocolVersion", v);
        assertThat(c.request("initialize", p).get("result").get("protocolVersion").asText()).isEqualTo(v);
      }
    }
  }

  @Test
  void anUnknownVersionIsAnsweredWithTheNewest() {
    assertThat(initialize("2024-11-05").get("result").get("protocolVersion").asText()).isEqualTo("2025-11-25");
  }

  @Test
  void initializeWithoutAVersionIsInvalidParams() {
    ObjectNode r = client.request("initialize", Json.object());
    assertThat(r.get("error").get("code").asInt()).isEqualTo(JsonRpc.INVALID_PARAMS);
    assertThat(client.session.isInitialized()).isFalse();
  }

  @Test
  void aSecondInitializeIsRefused() {
    initialize("2025-11-25");
    assertThat(initialize("2025-11-25").get("error").get("code").asInt()).isEqualTo(JsonRpc.INVALID_REQUEST);
  }

  @Test
  void requestsBeforeInitializeAreRefusedButPingWorks() {
    assertThat(client.request("tools/list", null).get("error").get("message").asText()).contains("initialize");
    assertThat(client.request("ping", null).get("result")).isEqualTo(Json.object());
  }

  @Test
  void pingAnswersAnEmptyObjectWithTheSameId() {
    initialize("2025-11-25");
    ObjectNode r = client.send(McpTestClient.requestMessage("abc", "ping", null));
    assertThat(r.get("id").asText()).isEqualTo("abc");
    assertThat(r.get("result")).isEqualTo(Json.object());
  }

  @Test
  void toolsListHasEveryToolWithSchemasAndAnnotations() {
    initialize("2025-11-25");
    JsonNode tools = client.request("tools/list", null).get("result").get("tools");
    List<String> names = new ArrayList<>();
    for (JsonNode t : tools) {
      names.add(t.get("name").asText());
      assertThat(t.get("description").asText()).hasSizeGreaterThan(40);
      assertThat(t.get("inputSchema").get("type").asText()).isEqualTo("object");
      assertThat(t.get("outputSchema").get("type").asText()).isEqualTo("object");
      assertThat(t.get("annotations").has("readOnlyHint")).isTrue();
      assertThat(t.get("annotations").has("destructiveHint")).isTrue();
      assertThat(t.get("annotations").has("idempotentHint")).isTrue();
      assertThat(t.toString()).as("schemas are self-contained").doesNotContain("$ref");
    }
    assertThat(names).containsExactlyInAnyOrder("exec", "runCode", "listCodeContexts", "deleteCodeContext", "startProcess", "listProcesses", "getProcess",
        "killProcess", "killAllProcesses", "getProcessLogs", "streamProcessLogs", "cleanupCompletedProcesses",
        "getSandbox", "listSandboxes", "destroy", "readFile", "writeFile", "listFiles", "mkdir", "deleteFile",
        "moveFile", "renameFile", "fileExists", "statFile", "waitForPort", "gitCheckout", "watchFiles", "exposePort", "unexposePort",
        "listExposedPorts", "shutdownSandbox", "wakeSandbox", "createCheckpoint", "listCheckpoints", "restoreCheckpoint",
        "deleteCheckpoint", "getEgressPolicy", "updateEgressPolicy", "listEgressEvents", "listSessions",
        "deleteSession");
    Set<String> implemented = new HashSet<>();
    try (SandboxTools impl = new SandboxTools(AdapterConfig.defaults(), new Sandboxes(AdapterConfig.defaults()))) {
      impl.names().forEach(implemented::add);
    }
    assertThat(implemented).containsExactlyInAnyOrderElementsOf(names);
  }

  @Test
  void annotationsMatchWhatEachToolDoes() {
    initialize("2025-11-25");
    // readOnly, destructive, idempotent
    java.util.Map<String, List<Boolean>> expected = java.util.Map.ofEntries(
        java.util.Map.entry("exec", List.of(false, true, false)),
        java.util.Map.entry("runCode", List.of(false, true, false)),
        java.util.Map.entry("listCodeContexts", List.of(true, false, true)),
        java.util.Map.entry("deleteCodeContext", List.of(false, true, false)),
        java.util.Map.entry("startProcess", List.of(false, false, false)),
        java.util.Map.entry("listProcesses", List.of(true, false, true)),
        java.util.Map.entry("getProcess", List.of(true, false, true)),
        java.util.Map.entry("killProcess", List.of(false, true, true)),
        java.util.Map.entry("killAllProcesses", List.of(false, true, true)),
        java.util.Map.entry("getProcessLogs", List.of(true, false, true)),
        java.util.Map.entry("streamProcessLogs", List.of(true, false, true)),
        java.util.Map.entry("cleanupCompletedProcesses", List.of(false, true, true)),
        java.util.Map.entry("getSandbox", List.of(false, false, true)),
        java.util.Map.entry("listSandboxes", List.of(true, false, true)),
        java.util.Map.entry("destroy", List.of(false, true, true)),
        java.util.Map.entry("readFile", List.of(true, false, true)),
        java.util.Map.entry("writeFile", List.of(false, true, true)),
        java.util.Map.entry("listFiles", List.of(true, false, true)),
        java.util.Map.entry("mkdir", List.of(false, false, true)),
        java.util.Map.entry("deleteFile", List.of(false, true, true)),
        java.util.Map.entry("moveFile", List.of(false, true, false)),
        java.util.Map.entry("renameFile", List.of(false, true, false)),
        java.util.Map.entry("fileExists", List.of(true, false, true)),
        java.util.Map.entry("statFile", List.of(true, false, true)),
        java.util.Map.entry("waitForPort", List.of(true, false, true)),
        java.util.Map.entry("watchFiles", List.of(true, false, true)),
        java.util.Map.entry("exposePort", List.of(false, false, false)),
        java.util.Map.entry("unexposePort", List.of(false, true, true)),
        java.util.Map.entry("listExposedPorts", List.of(true, false, true)),
        java.util.Map.entry("gitCheckout", List.of(false, false, false)),
        java.util.Map.entry("shutdownSandbox", List.of(false, true, true)),
        java.util.Map.entry("wakeSandbox", List.of(false, false, true)),
        java.util.Map.entry("createCheckpoint", List.of(false, false, false)),
        java.util.Map.entry("listCheckpoints", List.of(true, false, true)),
        java.util.Map.entry("restoreCheckpoint", List.of(false, true, true)),
        java.util.Map.entry("deleteCheckpoint", List.of(false, true, true)),
        java.util.Map.entry("getEgressPolicy", List.of(true, false, true)),
        java.util.Map.entry("updateEgressPolicy", List.of(false, true, true)),
        java.util.Map.entry("listEgressEvents", List.of(true, false, true)),
        java.util.Map.entry("listSessions", List.of(true, false, true)),
        java.util.Map.entry("deleteSession", List.of(false, true, false)));
    JsonNode tools = client.request("tools/list", null).get("result").get("tools");
    assertThat(tools).hasSize(expected.size());
    for (JsonNode t : tools) {
      JsonNode a = t.get("annotations");
      assertThat(List.of(a.get("readOnlyHint").asBoolean(), a.get("destructiveHint").asBoolean(),
          a.get("idempotentHint").asBoolean())).as(t.get("name").asText()).isEqualTo(expected.get(t.get("name").asText()));
    }
  }

  @Test
  void schemasUseOnlyKeywordsTheValidatorUnderstands() {
    Set<String> annotations = Set.of("description", "title", "$schema", "default");
    ToolCatalog catalog = ToolCatalog.load();
    for (String name : catalog.names()) {
      for (String which : List.of("inputSchema", "outputSchema")) {
        walk(catalog.get(name).get(which), name + "." + which, annotations);
      }
    }
  }

  private static void walk(JsonNode schema, String path, Set<String> annotations) {
    schema.fieldNames().forEachRemaining(k -> assertThat(SchemaValidator.KEYWORDS.contains(k) || annotations.contains(k))
        .as("%s uses keyword %s", path, k).isTrue());
    if (schema.has("properties")) {
      schema.get("properties").fields().forEachRemaining(f -> walk(f.getValue(), path + "." + f.getKey(), annotations));
    }
    if (schema.has("items")) {
      walk(schema.get("items"), path + "[]", annotations);
    }
    if (schema.has("additionalProperties") && schema.get("additionalProperties").isObject()) {
      walk(schema.get("additionalProperties"), path + ".*", annotations);
    }
  }

  @Test
  void toolsListRejectsACursorItNeverGave() {
    initialize("2025-11-25");
    ObjectNode r = client.request("tools/list", Json.object().put("cursor", "x"));
    assertThat(r.get("error").get("code").asInt()).isEqualTo(JsonRpc.INVALID_PARAMS);
  }

  @Test
  void unknownMethodIsMethodNotFound() {
    initialize("2025-11-25");
    ObjectNode r = client.request("resources/list", null);
    assertThat(r.get("error").get("code").asInt()).isEqualTo(JsonRpc.METHOD_NOT_FOUND);
  }

  @Test
  void unknownToolIsInvalidParamsNamingTheTools() {
    initialize("2025-11-25");
    ObjectNode r = client.request("tools/call", McpTestClient.callParams("nope", Json.object(), null));
    assertThat(r.get("error").get("code").asInt()).isEqualTo(JsonRpc.INVALID_PARAMS);
    assertThat(r.get("error").get("message").asText()).contains("Unknown tool: nope").contains("exec");
  }

  @Test
  void malformedCallParamsAreJsonRpcErrors() {
    initialize("2025-11-25");
    assertThat(client.request("tools/call", Json.object()).get("error").get("code").asInt())
        .isEqualTo(JsonRpc.INVALID_PARAMS);
    ObjectNode badArgs = Json.object().put("name", "exec").put("arguments", "ls");
    assertThat(client.request("tools/call", badArgs).get("error").get("code").asInt()).isEqualTo(JsonRpc.INVALID_PARAMS);
    ObjectNode m = McpTestClient.requestMessage(7, "tools/list", null);
    m.put("params", "not an object");
    assertThat(client.send(m).get("error").get("code").asInt()).isEqualTo(JsonRpc.INVALID_PARAMS);
  }

  @Test
  void argumentsThatBreakTheSchemaGiveAnErrorResultListingEveryProblem() {
    initialize("2025-11-25");
    ObjectNode args = McpTestClient.args("command", 5, "timeoutSeconds", -1, "colour", "red");
    JsonNode result = client.request("tools/call", McpTestClient.callParams("exec", args, null)).get("result");
    assertThat(result.get("isError").asBoolean()).isTrue();
    String text = result.get("content").get(0).get("text").asText();
    assertThat(text).contains("arguments.command: expected string")
        .contains("arguments.timeoutSeconds: must be greater than 0")
        .contains("unknown property 'colour'");
  }

  @Test
  void envelopeMistakesAreInvalidRequest() {
    ObjectNode noVersion = Json.object().put("id", 1).put("method", "ping");
    assertThat(client.send(noVersion).get("error").get("code").asInt()).isEqualTo(JsonRpc.INVALID_REQUEST);
    ObjectNode nullId = Json.object().put("jsonrpc", "2.0").put("method", "ping");
    nullId.putNull("id");
    ObjectNode r = client.send(nullId);
    assertThat(r.get("error").get("code").asInt()).isEqualTo(JsonRpc.INVALID_REQUEST);
    assertThat(r.get("id").isNull()).isTrue();
    assertThat(client.send(Json.array()).get("error").get("code").asInt()).isEqualTo(JsonRpc.INVALID_REQUEST);
    ObjectNode numericMethod = Json.object().put("jsonrpc", "2.0").put("id", 2).put("method", 5);
    assertThat(client.send(numericMethod).get("error").get("code").asInt()).isEqualTo(JsonRpc.INVALID_REQUEST);
  }

  @Test
  void notificationsAndResponsesGetNoAnswer() {
    initialize("2025-11-25");
    assertThat(client.send(Json.object().put("jsonrpc", "2.0").put("method", "notifications/whatever"))).isNull();
    ObjectNode response = Json.object().put("jsonrpc", "2.0").put("id", 3);
    response.putObject("result");
    assertThat(client.send(response)).isNull();
    ObjectNode cancelUnknown = Json.object().put("jsonrpc", "2.0").put("method", "notifications/cancelled");
    cancelUnknown.putObject("params").put("requestId", 12345);
    assertThat(client.send(cancelUnknown)).isNull();
  }

  @Test
  void loggingSetLevelAcceptsTheEightLevelsOnly() {
    initialize("2025-11-25");
    assertThat(client.request("logging/setLevel", Json.object().put("level", "warning")).get("result"))
        .isEqualTo(Json.object());
    assertThat(client.request("logging/setLevel", Json.object().put("level", "loud")).get("error").get("code").asInt())
        .isEqualTo(JsonRpc.INVALID_PARAMS);
  }
}
