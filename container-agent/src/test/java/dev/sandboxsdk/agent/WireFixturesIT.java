package dev.sandboxsdk.agent;

import static dev.sandboxsdk.agent.TestAgent.obj;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The golden captures in docs/protocol/ are what SDK tests parse; this keeps them true. Each
 * request is replayed against the real agent and the answer must have exactly the fixture's
 * fields (values that vary from run to run, such as pids and timestamps, are not compared).
 */
class WireFixturesIT {
  static final Path FIXTURES = Path.of(System.getProperty("basedir", "."), "..", "docs", "protocol").normalize();
  @RegisterExtension static final TestAgent agent = new TestAgent(b -> { });

  static JsonNode fixture(String name) throws IOException {
    return TestAgent.JSON.readTree(Files.readString(FIXTURES.resolve(name)));
  }

  static List<JsonNode> events(String name) throws IOException {
    List<JsonNode> events = new ArrayList<>();
    for (String line : Files.readAllLines(FIXTURES.resolve(name))) {
      if (!line.isBlank()) {
        events.add(TestAgent.JSON.readTree(line));
      }
    }
    return events;
  }

  /** Every field path of a JSON value ("process.argv[]", "context.processId", ...). */
  static Set<String> shape(JsonNode node) {
    Set<String> paths = new TreeSet<>();
    collect(node, "", paths);
    return paths;
  }

  private static void collect(JsonNode node, String prefix, Set<String> paths) {
    if (node.isObject()) {
      Iterator<String> names = node.fieldNames();
      while (names.hasNext()) {
        String name = names.next();
        String path = prefix.isEmpty() ? name : prefix + "." + name;
        paths.add(path);
        collect(node.get(name), path, paths);
      }
    } else if (node.isArray() && node.size() > 0) {
      collect(node.get(0), prefix + "[]", paths);
    }
  }

  @Test
  void executeResponsesHaveTheFixturesFields() throws Exception {
    JsonNode golden = fixture("execute-response.json");
    TestAgent.Response r = agent.post("/api/execute", obj("command", golden.get("command").asText()));
    assertThat(shape(r.body())).isEqualTo(shape(golden));
    for (String stable : List.of("success", "exitCode", "stdout", "stderr", "command", "timedOut", "truncated")) {
      assertThat(r.body().get(stable)).as(stable).isEqualTo(golden.get(stable));
    }

    JsonNode timeout = fixture("execute-timeout-response.json");
    TestAgent.Response t = agent.post("/api/execute", obj("command", timeout.get("command").asText(), "timeoutMs", 500));
    assertThat(shape(t.body())).isEqualTo(shape(timeout));
    assertThat(t.body().get("exitCode")).isEqualTo(timeout.get("exitCode"));
    assertThat(t.body().get("signal")).isEqualTo(timeout.get("signal"));
  }

  @Test
  void processResponsesAndEventsHaveTheFixturesFields() throws Exception {
    JsonNode start = fixture("process-start-response.json");
    JsonNode info = fixture("process-info.json");
    String id = start.get("processId").asText();
    TestAgent.Response started = agent.post("/api/process/start",
        obj("argv", TestAgent.JSON.convertValue(info.get("process").get("argv"), List.class), "processId", id));
    assertThat(shape(started.body())).isEqualTo(shape(start));

    List<JsonNode> golden = events("process-stream-events.jsonl");
    List<JsonNode> live;
    try (SseReader sse = agent.stream("/api/process/" + id + "/stream", null)) {
      live = sse.rest();
    }
    assertThat(eventShapes(live)).isEqualTo(eventShapes(golden));

    assertThat(shape(agent.get("/api/process/" + id).body())).isEqualTo(shape(info));
    JsonNode logs = fixture("process-logs-response.json");
    TestAgent.Response liveLogs = agent.get("/api/process/" + id + "/logs");
    assertThat(shape(liveLogs.body())).isEqualTo(shape(logs));
    assertThat(liveLogs.body().get("stdout")).isEqualTo(logs.get("stdout"));
    assertThat(liveLogs.body().get("stderr")).isEqualTo(logs.get("stderr"));

    JsonNode error = fixture("error-response.json");
    assertThat(shape(agent.get("/api/process/no-such-id").body())).isEqualTo(shape(error));
  }

  @Test
  void execStreamEventsHaveTheFixturesFields() throws Exception {
    List<JsonNode> golden = events("exec-stream-events.jsonl");
    List<JsonNode> live;
    try (SseReader sse = agent.stream("/api/execute/stream", obj("command", golden.get(0).get("command").asText()))) {
      live = sse.rest();
    }
    assertThat(eventShapes(live)).isEqualTo(eventShapes(golden));
  }

  @Test
  void anExecKillHasTheFixturesFields() throws Exception {
    JsonNode golden = fixture("execute-kill-response.json");
    String id = golden.get("processId").asText();
    try (SseReader sse = new SseReader(agent.http.send(agent.request("/api/execute/stream")
        .header("X-Sandbox-Exec-Id", id)
        .POST(java.net.http.HttpRequest.BodyPublishers.ofString(obj("command", "sleep 30"))).build(),
        java.net.http.HttpResponse.BodyHandlers.ofInputStream()))) {
      assertThat(sse.next().get("processId").asText()).isEqualTo(id); // running, so it can be killed

      TestAgent.Response kill = agent.delete("/api/execute/" + id);

      assertThat(kill.status()).isEqualTo(200);
      assertThat(shape(kill.body())).isEqualTo(shape(golden));
      assertThat(kill.text("signal")).isEqualTo(golden.get("signal").asText());
    }
  }

  /** The set of (type, fields) pairs: stdout and stderr may interleave differently per run. */
  static Set<String> eventShapes(List<JsonNode> events) {
    Set<String> shapes = new TreeSet<>();
    for (JsonNode e : events) {
      shapes.add(e.get("type").asText() + " " + shape(e));
    }
    return shapes;
  }
}
