package dev.sandboxsdk.agent;

import static dev.sandboxsdk.agent.TestAgent.obj;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;

/** Helpers of the code context tests: create a context, run code and read its events. */
final class CodeRuns {
  private CodeRuns() {
  }

  /** The events of one run, in order; the last is execution_complete. */
  static List<JsonNode> run(TestAgent agent, String contextId, String code, Object... extra) {
    Object[] kv = new Object[4 + extra.length];
    kv[0] = "context_id";
    kv[1] = contextId;
    kv[2] = "code";
    kv[3] = code;
    System.arraycopy(extra, 0, kv, 4, extra.length);
    try (SseReader sse = agent.stream("/api/execute/code", obj(kv))) {
      assertThat(sse.status()).isEqualTo(200);
      List<JsonNode> events = sse.rest();
      assertThat(events).isNotEmpty();
      assertThat(events.get(events.size() - 1).get("type").asText()).isEqualTo("execution_complete");
      return events;
    }
  }

  static String create(TestAgent agent, String language, Object... extra) {
    Object[] kv = new Object[2 + extra.length];
    kv[0] = "language";
    kv[1] = language;
    System.arraycopy(extra, 0, kv, 2, extra.length);
    TestAgent.Response r = agent.post("/api/contexts", obj(kv));
    assertThat(r.status()).as(String.valueOf(r.body())).isEqualTo(200);
    return r.body().get("contextId").asText();
  }

  static String text(List<JsonNode> events, String type) {
    StringBuilder sb = new StringBuilder();
    for (JsonNode e : events) {
      if (e.get("type").asText().equals(type)) {
        sb.append(e.get("text").asText());
      }
    }
    return sb.toString();
  }

  static JsonNode first(List<JsonNode> events, String type) {
    return events.stream().filter(e -> e.get("type").asText().equals(type)).findFirst().orElse(null);
  }

  static JsonNode complete(List<JsonNode> events) {
    return events.get(events.size() - 1);
  }

  static List<String> iter(JsonNode array) {
    List<String> out = new ArrayList<>();
    array.forEach(n -> out.add(n.asText()));
    return out;
  }
}
