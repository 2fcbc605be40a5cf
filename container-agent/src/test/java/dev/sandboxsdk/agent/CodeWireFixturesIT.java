package dev.sandboxsdk.agent;

import static dev.sandboxsdk.agent.TestAgent.obj;
import static dev.sandboxsdk.agent.WireFixturesIT.events;
import static dev.sandboxsdk.agent.WireFixturesIT.fixture;
import static dev.sandboxsdk.agent.WireFixturesIT.shape;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The code context captures of docs/protocol (fixtures.md, "Code contexts") replayed against the
 * real agent: every answer and event has exactly the fixture's fields, in its order.
 */
class CodeWireFixturesIT {
  @RegisterExtension static final TestAgent agent = new TestAgent(b -> { });

  private static List<JsonNode> run(String id, String code) {
    try (SseReader sse = agent.stream("/api/execute/code", obj("context_id", id, "code", code))) {
      return sse.rest();
    }
  }

  private static void sameShapes(List<JsonNode> got, String fixture) throws Exception {
    List<JsonNode> golden = events(fixture);
    assertThat(got).extracting(e -> e.get("type").asText())
        .containsExactlyElementsOf(golden.stream().map(e -> e.get("type").asText()).toList());
    for (int i = 0; i < golden.size(); i++) {
      assertThat(shape(got.get(i))).as("%s event %d", fixture, i).isEqualTo(shape(golden.get(i)));
    }
  }

  @Test
  void contextRoutesAndRunEventsHaveTheFixturesFields() throws Exception {
    TestAgent.Response created = agent.post("/api/contexts", obj("language", "python", "env_vars",
        Map.of("PATH", "/usr/bin:/bin")));
    assertThat(shape(created.body())).isEqualTo(shape(fixture("context-create-response.json")));
    String id = created.body().get("contextId").asText();

    sameShapes(run(id, "x = 6 * 7\nprint('caf\u00e9')\nimport sys; print('warn', file=sys.stderr)\nx"),
        "code-run-events.jsonl");
    sameShapes(run(id, "def f():\n    return 1 / 0\nf()"), "code-run-error-events.jsonl");
    assertThat(shape(agent.get("/api/contexts").body())).isEqualTo(shape(fixture("context-list-response.json")));
    assertThat(shape(agent.post("/api/contexts/" + id + "/interrupt", "").body()))
        .isEqualTo(shape(fixture("context-interrupt-response.json")));
    TestAgent.Response missing = agent.post("/api/execute/code", obj("context_id", "ctx_nope", "code", "1"));
    assertThat(missing.status()).isEqualTo(404);
    assertThat(shape(missing.body())).isEqualTo(shape(fixture("context-error-response.json")));
    assertThat(shape(agent.delete("/api/contexts/" + id).body()))
        .isEqualTo(shape(fixture("context-delete-response.json")));
  }

  @Test
  void aFigureEventHasTheFixturesFields() throws Exception {
    Assumptions.assumeTrue(CodeContextIT.hasMatplotlib() || "true".equals(System.getenv("CI")),
        "matplotlib is not installed for /usr/bin/python3 (apt-get install python3-matplotlib): skipped");
    String id = agent.post("/api/contexts", obj("language", "python", "env_vars", Map.of("PATH", "/usr/bin:/bin")))
        .body().get("contextId").asText();
    sameShapes(run(id, "import matplotlib.pyplot as plt\nplt.figure(figsize=(1, 1), dpi=20)\nplt.plot([1, 2])\nNone"),
        "code-run-figure-events.jsonl");
    agent.delete("/api/contexts/" + id);
  }
}
