package dev.sandboxsdk.agent;

import static dev.sandboxsdk.agent.TestAgent.obj;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sandboxsdk.testkit.Await;
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

  /**
   * Every field path of a JSON value ("process.argv[]", "context.processId", ...), in the order
   * the fields are written: the agent's answers keep the fixtures' field order, not only their
   * fields. An error's {@code context} is compared as a set (its order is not fixed).
   */
  static List<String> shape(JsonNode node) {
    List<String> paths = new ArrayList<>();
    collect(node, "", paths);
    return paths;
  }

  private static void collect(JsonNode node, String prefix, List<String> paths) {
    if (node.isObject()) {
      Iterator<String> names = prefix.equals("context") ? new TreeSet<>(iterable(node.fieldNames())).iterator()
          : node.fieldNames();
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
  void terminalResponsesHaveTheFixturesFields() throws Exception {
    JsonNode start = fixture("process-start-pty-response.json");
    String id = start.get("processId").asText();
    TestAgent.Response started = agent.post("/api/process/start",
        "{\"argv\":[\"sleep\",\"30\"],\"processId\":\"" + id + "\",\"pty\":{\"cols\":100,\"rows\":30}}");
    assertThat(shape(started.body())).isEqualTo(shape(start));
    assertThat(started.body().get("pty")).isEqualTo(start.get("pty"));

    JsonNode resize = fixture("process-resize-response.json");
    TestAgent.Response resized = agent.post("/api/process/" + id + "/resize", obj("cols", 132, "rows", 43));
    assertThat(shape(resized.body())).isEqualTo(shape(resize));
    JsonNode info = fixture("process-info-pty.json");
    JsonNode live = agent.processInfo(id);
    assertThat(shape(live)).isEqualTo(shape(info));
    assertThat(live.get("pty")).isEqualTo(info.get("pty"));
    agent.delete("/api/process/" + id + "?signal=SIGKILL");
    assertThat(Await.until(10_000, () -> agent.isFinished(id))).isTrue();
    agent.post("/api/process/cleanup", "");
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

  @Test
  void fileRoutesHaveTheFixturesFields() throws Exception {
    Files.deleteIfExists(agent.workspace.resolve("notes/link"));
    assertThat(shape(agent.post("/api/mkdir", obj("path", "notes/sub", "recursive", true)).body()))
        .isEqualTo(shape(fixture("file-mkdir-response.json")));
    JsonNode read = fixture("file-read-response.json");
    assertThat(shape(agent.post("/api/write", obj("path", "notes/hello.txt", "content", read.get("content").asText())).body()))
        .isEqualTo(shape(fixture("file-write-response.json")));
    TestAgent.Response liveRead = agent.post("/api/read", obj("path", "notes/hello.txt"));
    assertThat(shape(liveRead.body())).isEqualTo(shape(read));
    for (String stable : List.of("content", "encoding", "isBinary", "mimeType", "size")) {
      assertThat(liveRead.body().get(stable)).as(stable).isEqualTo(read.get(stable));
    }
    Files.writeString(agent.workspace.resolve("notes/sub/two.txt"), "line one\nline two\n");
    try (SseReader sse = agent.stream("/api/read/stream", obj("path", "notes/hello.txt"))) {
      assertThat(eventShapes(sse.rest())).isEqualTo(eventShapes(events("file-read-stream-events.jsonl")));
    }
    JsonNode list = fixture("file-list-response.json");
    TestAgent.Response liveList = agent.post("/api/list-files", obj("path", "notes", "options", java.util.Map.of("recursive", true)));
    assertThat(shape(liveList.body())).isEqualTo(shape(list));
    assertThat(liveList.body().get("count")).isEqualTo(list.get("count"));
    assertThat(shape(agent.post("/api/exists", obj("path", "notes/hello.txt")).body()))
        .isEqualTo(shape(fixture("file-exists-response.json")));
    assertThat(shape(agent.post("/api/rename", obj("oldPath", "notes/sub/two.txt", "newPath", "notes/sub/2.txt")).body()))
        .isEqualTo(shape(fixture("file-rename-response.json")));
    assertThat(shape(agent.post("/api/move", obj("sourcePath", "notes/sub/2.txt", "destinationPath", "notes/moved.txt")).body()))
        .isEqualTo(shape(fixture("file-move-response.json")));
    Files.createSymbolicLink(agent.workspace.resolve("notes/link"), Path.of("hello.txt"));
    assertThat(shape(agent.post("/api/stat", obj("path", "notes/link")).body())).isEqualTo(shape(fixture("file-stat-response.json")));
    TestAgent.Response put = agent.send(agent.request("/api/files/raw?path=notes/blob.bin")
        .PUT(java.net.http.HttpRequest.BodyPublishers.ofByteArray(new byte[100_000])).build());
    assertThat(shape(put.body())).isEqualTo(shape(fixture("file-raw-put-response.json")));
    assertThat(shape(agent.post("/api/delete", obj("path", "notes/sub", "recursive", true)).body()))
        .isEqualTo(shape(fixture("file-delete-response.json")));
    TestAgent.Response missing = agent.post("/api/read", obj("path", "notes/missing.txt"));
    JsonNode error = fixture("file-error-response.json");
    assertThat(shape(missing.body())).isEqualTo(shape(error));
    assertThat(missing.body().get("code")).isEqualTo(error.get("code"));
    assertThat(missing.status()).isEqualTo(error.get("httpStatus").asInt());
  }

  @Test
  void portWatchEventsHaveTheFixturesFields() throws Exception {
    int port;
    try (java.net.ServerSocket free = new java.net.ServerSocket(0)) {
      port = free.getLocalPort();
    }
    agent.post("/api/process/start", obj("command", "sleep 1; exec python3 -m http.server " + port + " --bind 127.0.0.1",
        "processId", "fixture-web"));
    try (SseReader sse = agent.stream("/api/port-watch", obj("port", port, "mode", "http", "path", "/", "processId",
        "fixture-web"))) {
      assertThat(eventShapes(sse.rest())).isEqualTo(eventShapes(events("port-watch-events.jsonl")));
    }
    agent.delete("/api/process/fixture-web");
    agent.post("/api/process/start", obj("command", "sleep 0.5; exit 3", "processId", "fixture-quitter"));
    try (SseReader sse = agent.stream("/api/port-watch", obj("port", 9, "mode", "tcp", "processId", "fixture-quitter"))) {
      assertThat(eventShapes(sse.rest())).isEqualTo(eventShapes(events("port-watch-exited-events.jsonl")));
    }
    try (SseReader sse = agent.stream("/api/port-watch", obj("port", 9, "mode", "tcp", "timeoutMs", 500))) {
      assertThat(eventShapes(sse.rest())).isEqualTo(eventShapes(events("port-watch-timeout-events.jsonl")));
    }
  }

  @Test
  void fileWatchEventsHaveTheFixturesFields() throws Exception {
    Path notes = Files.createDirectories(agent.workspace.resolve("fixture-notes"));
    try (SseReader sse = agent.stream("/api/watch", obj("path", "fixture-notes", "recursive", true))) {
      JsonNode watching = sse.next();
      Files.writeString(notes.resolve("hello.txt"), "one\n");
      Files.move(notes.resolve("hello.txt"), notes.resolve("renamed.txt"));
      Files.createDirectories(notes.resolve("sub"));
      Files.writeString(notes.resolve("sub/inner.txt"), "x\n");
      Files.writeString(notes.resolve("sub/inner.txt"), "y\n", java.nio.file.StandardOpenOption.APPEND);
      FilesIT.deleteTree(notes);
      List<JsonNode> events = new ArrayList<>(List.of(watching));
      events.addAll(sse.rest());
      assertThat(eventShapes(events)).isEqualTo(eventShapes(events("file-watch-events.jsonl")));
      assertThat(events.get(events.size() - 1).get("type").asText()).isEqualTo("stopped");
    }
  }

  @Test
  void checkpointAnswersHaveTheFixturesFields() throws Exception {
    TestAgent.Response created = agent.post("/api/checkpoints", obj("name", "before-build"));
    JsonNode golden = fixture("checkpoint-create-response.json");
    assertThat(created.status()).isEqualTo(201);
    assertThat(shape(created.body())).isEqualTo(shape(golden));
    String id = created.body().get("checkpoint").get("id").asText();
    assertThat(shape(agent.get("/api/checkpoints").body())).isEqualTo(shape(fixture("checkpoint-list-response.json")));
    agent.post("/api/process/start", obj("command", "sleep 60", "processId", "fixture-busy"));
    TestAgent.Response refused = agent.post("/api/checkpoints/" + id + "/restore", "{}");
    JsonNode conflict = fixture("checkpoint-restore-error-response.json");
    assertThat(shape(refused.body())).isEqualTo(shape(conflict));
    assertThat(refused.body().get("code")).isEqualTo(conflict.get("code"));
    assertThat(refused.status()).isEqualTo(conflict.get("httpStatus").asInt());
    assertThat(shape(agent.post("/api/checkpoints/" + id + "/restore", "{\"force\":true}").body()))
        .isEqualTo(shape(fixture("checkpoint-restore-response.json")));
    assertThat(shape(agent.delete("/api/checkpoints/" + id).body()))
        .isEqualTo(shape(fixture("checkpoint-delete-response.json")));
    TestAgent.Response gone = agent.delete("/api/checkpoints/" + id);
    JsonNode error = fixture("checkpoint-error-response.json");
    assertThat(shape(gone.body())).isEqualTo(shape(error));
    assertThat(gone.body().get("code")).isEqualTo(error.get("code"));
    assertThat(gone.status()).isEqualTo(error.get("httpStatus").asInt());
  }

  @Test
  void gitCheckoutAnswersHaveTheFixturesFields() throws Exception {
    Path repo = agent.workspace.resolve("fixture-origin");
    GitCheckoutIT.repository(repo);
    TestAgent.Response ok = agent.post("/api/git/checkout", obj("repoUrl", "file://" + repo, "targetDir", "fixture-clone"));
    assertThat(shape(ok.body())).isEqualTo(shape(fixture("git-checkout-response.json")));
    TestAgent.Response missing = agent.post("/api/git/checkout", obj("repoUrl", "file://" + repo + "-missing.git",
        "targetDir", "fixture-missing"));
    JsonNode error = fixture("git-error-response.json");
    assertThat(shape(missing.body())).isEqualTo(shape(error));
    assertThat(missing.body().get("code")).isEqualTo(error.get("code"));
    assertThat(missing.status()).isEqualTo(error.get("httpStatus").asInt());
  }

  @Test
  void exposedPortAnswersHaveTheFixturesFields() throws Exception {
    int port;
    try (java.net.ServerSocket free = new java.net.ServerSocket(0)) {
      port = free.getLocalPort();
    }
    TestAgent.Response exposed = agent.post("/api/expose-port", obj("port", port, "name", "web"));
    JsonNode golden = fixture("port-expose-response.json");
    assertThat(shape(exposed.body())).isEqualTo(shape(golden));
    assertThat(exposed.body().get("url").asText()).matches("http://[^/]+/proxy/" + port + "/\\?sandbox-preview-token=[A-Za-z0-9_-]{43}");
    assertThat(shape(agent.get("/api/exposed-ports").body())).isEqualTo(shape(fixture("port-list-response.json")));
    TestAgent.Response twice = agent.post("/api/expose-port", obj("port", port));
    JsonNode conflict = fixture("port-expose-error-response.json");
    assertThat(shape(twice.body())).isEqualTo(shape(conflict));
    assertThat(twice.status()).isEqualTo(conflict.get("httpStatus").asInt());
    assertThat(shape(agent.delete("/api/exposed-ports/" + port).body())).isEqualTo(shape(fixture("port-unexpose-response.json")));
    TestAgent.Response gone = agent.get("/proxy/" + port + "/");
    JsonNode error = fixture("proxy-error-response.json");
    assertThat(shape(gone.body())).isEqualTo(shape(error));
    assertThat(gone.body().get("code")).isEqualTo(error.get("code"));
    assertThat(gone.status()).isEqualTo(error.get("httpStatus").asInt());
  }

  @Test
  void egressAnswersHaveTheFixturesFields() throws Exception {
    try (TestAgent egress = TestAgent.start(b -> b.egressPolicy(dev.sandboxsdk.agent.egress.EgressPolicy
        .builder(dev.sandboxsdk.agent.egress.EgressPolicy.Mode.ALLOW_LIST).deny("denied.test").build())
        .egressTestHosts(java.util.Map.of("denied.test", "127.0.0.1")))) {
      assertThat(shape(egress.get("/api/egress/policy").body())).isEqualTo(shape(fixture("egress-policy-response.json")));
      TestAgent.Response bad = egress.send(EgressWiringIT.put(egress, "{\"mode\":\"open\",\"rules\":[\"allow a..b\"]}"));
      JsonNode error = fixture("egress-policy-error-response.json");
      assertThat(shape(bad.body())).isEqualTo(shape(error));
      assertThat(bad.body().get("code")).isEqualTo(error.get("code"));
      assertThat(bad.status()).isEqualTo(error.get("httpStatus").asInt());
      egress.post("/api/execute", obj("command", "curl -s -m 5 http://denied.test:9/ || true"));
      JsonNode events = EgressWiringIT.events(egress, 1); // recorded when the connection ends
      assertThat(events.path("events").size()).isEqualTo(1);
      assertThat(shape(events)).isEqualTo(shape(fixture("egress-events-response.json")));
    }
  }

  @Test
  void sessionAnswersHaveTheFixturesFields() throws Exception {
    assertThat(shape(agent.post("/api/sessions", obj("id", "fixture-session")).body()))
        .isEqualTo(shape(fixture("session-create-response.json")));
    agent.post("/api/execute", obj("command", "true", "sessionId", "fixture-session"));
    assertThat(shape(agent.get("/api/sessions/fixture-session").body()))
        .isEqualTo(shape(fixture("session-create-response.json")));
    assertThat(shape(agent.get("/api/sessions").body())).isEqualTo(shape(fixture("session-list-response.json")));
    assertThat(shape(agent.delete("/api/sessions/fixture-session").body()))
        .isEqualTo(shape(fixture("session-delete-response.json")));
    TestAgent.Response gone = agent.post("/api/execute", obj("command", "true", "sessionId", "fixture-session"));
    JsonNode error = fixture("session-error-response.json");
    assertThat(shape(gone.body())).isEqualTo(shape(error));
    assertThat(gone.body().get("code")).isEqualTo(error.get("code"));
    assertThat(gone.status()).isEqualTo(error.get("httpStatus").asInt());
  }

  private static List<String> iterable(Iterator<String> names) {
    List<String> all = new ArrayList<>();
    names.forEachRemaining(all::add);
    return all;
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
