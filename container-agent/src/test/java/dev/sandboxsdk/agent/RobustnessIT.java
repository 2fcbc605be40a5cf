package dev.sandboxsdk.agent;

import static dev.sandboxsdk.agent.TestAgent.obj;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpRequest;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Auth and every kind of bad input: each gets the documented JSON error and the agent keeps serving. */
class RobustnessIT {
  @RegisterExtension static final TestAgent agent = new TestAgent(b -> b.maxBodyBytes(64 * 1024));

  @AfterEach
  void agentStillServes() {
    TestAgent.Response r = agent.post("/api/execute", obj("command", "echo alive"));
    assertThat(r.status()).isEqualTo(200);
    assertThat(r.text("stdout")).isEqualTo("alive\n");
  }

  static void assertError(TestAgent.Response r, int status, String code) {
    assertThat(r.status()).as(String.valueOf(r.body())).isEqualTo(status);
    assertThat(r.header("Content-Type")).startsWith("application/json");
    assertThat(r.text("code")).isEqualTo(code);
    assertThat(r.body().get("httpStatus").asInt()).isEqualTo(status);
    assertThat(r.text("message")).isNotBlank();
    assertThat(r.body().get("context").isObject()).isTrue();
    assertThat(r.text("timestamp")).isNotBlank();
    assertThat(r.body().get("success").asBoolean()).isFalse();
  }

  HttpRequest.Builder anonymous(String path) {
    return HttpRequest.newBuilder(agent.uri(path));
  }

  @Test
  void pingNeedsNoToken() {
    TestAgent.Response r = agent.send(anonymous("/api/ping").GET().build());
    assertThat(r.status()).isEqualTo(200);
    assertThat(r.text("status")).isEqualTo("healthy");
  }

  @Test
  void versionReportsProtocolOne() {
    TestAgent.Response r = agent.get("/api/version");
    assertThat(r.body().get("protocol").asInt()).isEqualTo(1);
    assertThat(r.text("version")).isNotBlank();
    JsonNode limits = r.body().get("limits");
    assertThat(limits.get("keepAliveMs").asLong()).isEqualTo(AgentConfig.DEFAULT_KEEP_ALIVE_MS);
    assertThat(limits.get("maxBodyBytes").asInt()).isEqualTo(64 * 1024);
    assertThat(limits.get("logWindowBytes").asInt()).isEqualTo(AgentConfig.DEFAULT_LOG_WINDOW_BYTES);
    assertThat(limits.get("maxProcesses").asInt()).isEqualTo(AgentConfig.DEFAULT_MAX_PROCESSES);
  }

  @Test
  void everyAnswerCarriesTheBootIdThatVersionReports() {
    TestAgent.Response version = agent.get("/api/version");
    String bootId = version.text("bootId");
    assertThat(bootId).matches("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
    assertThat(version.header("Sandbox-Boot-Id")).isEqualTo(bootId);
    assertThat(agent.send(anonymous("/api/ping").GET().build()).header("Sandbox-Boot-Id")).isEqualTo(bootId);
    TestAgent.Response refused = agent.send(anonymous("/api/process/list").GET().build());
    assertError(refused, 401, "UNAUTHORIZED");
    assertThat(refused.header("Sandbox-Boot-Id")).as("an unauthenticated answer").isEqualTo(bootId);
  }

  @Test
  void missingTokenIsRejected() {
    TestAgent.Response r = agent.send(anonymous("/api/execute").POST(HttpRequest.BodyPublishers.ofString(obj("command", "true"))).build());
    assertError(r, 401, "UNAUTHORIZED");
    assertThat(r.header("WWW-Authenticate")).startsWith("Bearer");
  }

  @Test
  void wrongTokenIsRejectedWithoutEchoingIt() {
    TestAgent.Response r = agent.send(anonymous("/api/process/list")
        .header("Authorization", "Bearer " + TestAgent.TOKEN + "x").GET().build());
    assertError(r, 401, "UNAUTHORIZED");
    assertThat(r.raw().body()).doesNotContain(TestAgent.TOKEN);
    TestAgent.Response basic = agent.send(anonymous("/api/process/list").header("Authorization", "Basic abc").GET().build());
    assertError(basic, 401, "UNAUTHORIZED");
  }

  @Test
  void authIsCheckedBeforeRoutesAreRevealed() {
    assertError(agent.send(anonymous("/api/no-such-thing").GET().build()), 401, "UNAUTHORIZED");
  }

  @Test
  void agentWithoutAuthServesWithoutToken() {
    try (TestAgent open = TestAgent.start(b -> b.token(null).insecureNoAuth(true))) {
      TestAgent.Response r = open.send(HttpRequest.newBuilder(open.uri("/api/version")).GET().build());
      assertThat(r.status()).isEqualTo(200);
    }
  }

  @Test
  void malformedJsonIsA400() {
    assertError(agent.post("/api/execute", "{\"command\": \"echo"), 400, "VALIDATION_FAILED");
    assertError(agent.post("/api/execute", "not json"), 400, "VALIDATION_FAILED");
    assertError(agent.post("/api/execute", "[1,2]"), 400, "VALIDATION_FAILED");
    assertError(agent.post("/api/execute", ""), 400, "VALIDATION_FAILED");
    assertError(agent.post("/api/execute", "{\"command\":\"a\",\"command\":\"b\"}"), 400, "VALIDATION_FAILED");
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
      "{\"command\": 5}                                  | command",
      "{\"argv\": \"ls\"}                                | argv",
      "{\"argv\": [\"ls\", 3]}                           | argv",
      "{\"command\": \"ls\", \"timeoutMs\": \"5\"}       | timeoutMs",
      "{\"command\": \"ls\", \"timeoutMs\": 1.5}         | timeoutMs",
      "{\"command\": \"ls\", \"timeoutMs\": -1}          | timeoutMs",
      "{\"command\": \"ls\", \"env\": [\"A=B\"]}         | env",
      "{\"command\": \"ls\", \"env\": {\"A\": 1}}        | env",
      "{\"command\": \"ls\", \"env\": {\"A=B\": \"c\"}}  | env",
      "{\"command\": \"ls\", \"cwd\": 7}                 | cwd",
      "{\"command\": \"ls\", \"maxOutputBytes\": 0}      | maxOutputBytes",
      "{\"command\": \"ls\", \"encoding\": \"latin1\"}   | encoding",
      "{\"command\": \"ls\", \"stdin\": false}           | stdin",
      "{\"command\": \"ls\", \"bogus\": true}            | bogus",
  })
  void wrongTypesAndUnknownFieldsNameTheField(String body, String field) {
    TestAgent.Response r = agent.post("/api/execute", body);
    assertError(r, 400, "VALIDATION_FAILED");
    assertThat(r.body().get("context").get("field").asText()).isEqualTo(field);
  }

  @Test
  void emptyOrMissingCommandsAreInvalidCommands() {
    assertError(agent.post("/api/execute", obj("command", "  ")), 400, "INVALID_COMMAND");
    assertError(agent.post("/api/execute", obj("argv", List.of())), 400, "INVALID_COMMAND");
    assertError(agent.post("/api/execute", obj("argv", List.of(""))), 400, "INVALID_COMMAND");
    assertError(agent.post("/api/execute", "{}"), 400, "INVALID_COMMAND");
    assertError(agent.post("/api/execute", obj("command", "ls", "argv", List.of("ls"))), 400, "INVALID_COMMAND");
    assertError(agent.post("/api/process/start", "{}"), 400, "INVALID_COMMAND");
  }

  @Test
  void oversizedBodiesAre413() {
    String big = obj("command", "echo", "stdin", "x".repeat(100 * 1024));
    assertError(agent.post("/api/execute", big), 413, "PAYLOAD_TOO_LARGE");
  }

  @Test
  void unknownRoutesAre404() {
    assertError(agent.get("/api/nothing-here"), 404, "NOT_FOUND");
    assertError(agent.get("/api/process/x/nonsense"), 404, "NOT_FOUND");
    assertError(agent.get("/elsewhere"), 404, "NOT_FOUND");
  }

  @Test
  void wrongMethodsAre405WithAllow() {
    TestAgent.Response r = agent.get("/api/execute");
    assertError(r, 405, "METHOD_NOT_ALLOWED");
    assertThat(r.header("Allow")).isEqualTo("POST");
    TestAgent.Response put = agent.send(agent.request("/api/process/list").PUT(HttpRequest.BodyPublishers.noBody()).build());
    assertError(put, 405, "METHOD_NOT_ALLOWED");
    assertThat(put.header("Allow")).isEqualTo("GET");
  }

  @Test
  void queryParametersAreRejectedWhereNoneAreDefined() {
    assertError(agent.post("/api/execute?timeout=5", obj("command", "true")), 400, "VALIDATION_FAILED");
    assertError(agent.post("/api/process/start?x=1", obj("command", "true")), 400, "VALIDATION_FAILED");
    assertError(agent.get("/api/version?verbose"), 400, "VALIDATION_FAILED");
    assertError(agent.send(anonymous("/api/ping?x=1").GET().build()), 400, "VALIDATION_FAILED");
  }

  @Test
  void routeAndMethodAreCheckedBeforeQueryParameters() {
    assertError(agent.get("/api/execute?foo=1"), 405, "METHOD_NOT_ALLOWED");
    assertError(agent.get("/api/nope?x=1"), 404, "NOT_FOUND");
    assertError(agent.get("/api/process/a/b/c?x=1"), 404, "NOT_FOUND");
  }

  @Test
  void duplicateFieldsAreNamedPlainly() {
    TestAgent.Response r = agent.post("/api/execute", "{\"command\":\"a\",\"command\":\"b\"}");
    assertThat(r.text("message")).contains("duplicate field 'command'").doesNotContain("Feature");
  }

  @Test
  void aCommandThatWipesTheTempDirectoryDoesNotBreakLaterCommands() {
    // The agent's pipes live in the temp directory; sandboxed commands may well clean it.
    String mine = "sandbox-agent-pipes-" + ProcessHandle.current().pid() + "-*";
    TestAgent.Response wipe = agent.post("/api/execute",
        obj("command", "rm -rf " + System.getProperty("java.io.tmpdir") + "/" + mine + "; echo wiped"));
    assertThat(wipe.text("stdout")).as("%s", wipe.body()).isEqualTo("wiped\n");

    for (int i = 0; i < 100; i++) { // more than one batch of pipes
      assertThat(agent.post("/api/execute", obj("argv", List.of("echo", "again " + i))).text("stdout")).isEqualTo("again " + i + "\n");
    }
  }

  @Test
  void headRequestsGetHeadersWithoutABody() {
    TestAgent.Response r = agent.send(agent.request("/api/ping").method("HEAD", HttpRequest.BodyPublishers.noBody()).build());
    assertThat(r.status()).isEqualTo(405);
    assertThat(r.raw().body()).isEmpty();
  }

  @Test
  void unknownProcessIdsAre404OnEveryEndpoint() {
    assertError(agent.get("/api/process/ghost"), 404, "PROCESS_NOT_FOUND");
    assertError(agent.delete("/api/process/ghost"), 404, "PROCESS_NOT_FOUND");
    assertError(agent.get("/api/process/ghost/logs"), 404, "PROCESS_NOT_FOUND");
    assertError(agent.get("/api/process/ghost/stream"), 404, "PROCESS_NOT_FOUND");
    assertError(agent.post("/api/process/ghost/stdin", obj("data", "x")), 404, "PROCESS_NOT_FOUND");
  }

  @Test
  void badSignalsAndQueriesAre400() {
    agent.post("/api/process/start", obj("command", "sleep 30", "processId", "target"));
    try {
      TestAgent.Response r = agent.delete("/api/process/target?signal=SIGBOGUS");
      assertError(r, 400, "VALIDATION_FAILED");
      assertThat(r.body().get("context").get("field").asText()).isEqualTo("signal");
      assertError(agent.delete("/api/process/target?signal=99"), 400, "VALIDATION_FAILED");
      assertError(agent.delete("/api/process/target?graceMs=soon"), 400, "VALIDATION_FAILED");
      assertError(agent.delete("/api/process/target?sig=TERM"), 400, "VALIDATION_FAILED");
      assertError(agent.get("/api/process/list?status=sleeping"), 400, "VALIDATION_FAILED");
      assertError(agent.get("/api/process/target/logs?since=-3"), 400, "VALIDATION_FAILED");
      assertThat(agent.get("/api/process/target").body().get("process").get("status").asText())
          .as("rejected kills did nothing").isEqualTo("running");
    } finally {
      agent.delete("/api/process/kill-all");
    }
  }

  @Test
  void aMissingWorkingDirectoryIsA400() {
    TestAgent.Response r = agent.post("/api/execute", obj("command", "pwd", "cwd", "does/not/exist"));
    assertError(r, 400, "VALIDATION_FAILED");
    assertThat(r.body().get("context").get("field").asText()).isEqualTo("cwd");
  }

  @Test
  void aMissingBinaryIs404CommandNotFound() throws Exception {
    assertError(agent.post("/api/execute", obj("argv", List.of("no-such-binary-xyz", "-v"))), 404, "COMMAND_NOT_FOUND");
    assertError(agent.post("/api/process/start", obj("argv", List.of("./missing.sh"))), 404, "COMMAND_NOT_FOUND");
    java.nio.file.Files.writeString(agent.workspace.resolve("notes.txt"), "not a program");
    assertError(agent.post("/api/execute", obj("argv", List.of("./notes.txt"))), 400, "INVALID_COMMAND");
  }

  @Test
  void invalidProcessIdsAreRejected() {
    assertError(agent.post("/api/process/start", obj("command", "true", "processId", "has space")), 400, "VALIDATION_FAILED");
    assertError(agent.post("/api/process/start", obj("command", "true", "processId", "kill-all")), 400, "VALIDATION_FAILED");
    assertError(agent.post("/api/process/start", obj("command", "true", "stdin", "hello")), 400, "VALIDATION_FAILED");
  }
}
