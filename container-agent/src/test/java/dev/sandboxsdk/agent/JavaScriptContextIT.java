package dev.sandboxsdk.agent;

import static dev.sandboxsdk.agent.CodeRuns.complete;
import static dev.sandboxsdk.agent.CodeRuns.first;
import static dev.sandboxsdk.agent.CodeRuns.iter;
import static dev.sandboxsdk.agent.CodeRuns.text;
import static dev.sandboxsdk.agent.TestAgent.obj;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sandboxsdk.testkit.ProcStats;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** JavaScript code contexts on the real agent with the real node: the Python suite's cases that apply. */
class JavaScriptContextIT {
  @RegisterExtension static final TestAgent agent = new TestAgent(b -> b.keepAliveMs(300).graceMs(1000));

  static List<JsonNode> run(String contextId, String code, Object... extra) {
    return CodeRuns.run(agent, contextId, code, extra);
  }

  static String create() {
    return CodeRuns.create(agent, "javascript");
  }

  @Test
  void topLevelDeclarationsPersistAndTheLastExpressionIsTheValue() {
    String id = create();
    List<JsonNode> one = run(id, "let x = 40; const m = require('path'); function add(a, b) { return a + b }\n"
        + "console.log('set', {a: 1})");
    assertThat(text(one, "stdout")).isEqualTo("set { a: 1 }\n");
    JsonNode r = first(run(id, "add(x, 2) + m.basename('/a/b').length"), "result");
    assertThat(r.get("text").asText()).isEqualTo("43");
    JsonNode obj = first(run(id, "({list: [1, 2], name: 'n'})"), "result");
    assertThat(obj.get("json").get("list").get(1).asInt()).isEqualTo(2);
    assertThat(agent.delete("/api/contexts/" + id).status()).isEqualTo(200);
  }

  @Test
  void aPromiseValueIsAwaited() {
    String id = create();
    JsonNode r = first(run(id, "new Promise(resolve => setTimeout(() => resolve(6 * 7), 50))"), "result");
    assertThat(r.get("text").asText()).isEqualTo("42");
    agent.delete("/api/contexts/" + id);
  }

  @Test
  void anErrorIsDataWithNameMessageAndStack() {
    String id = create();
    JsonNode error = first(run(id, "function f() { throw new TypeError('bad input') }\nf()"), "error");
    assertThat(error.get("ename").asText()).isEqualTo("TypeError");
    assertThat(error.get("evalue").asText()).isEqualTo("bad input");
    assertThat(String.join("\n", iter(error.get("traceback")))).contains("at f (cell-");
    assertThat(first(run(id, "let ("), "error").get("ename").asText()).isEqualTo("SyntaxError");
    assertThat(first(run(id, "1 + 1"), "result").get("text").asText()).isEqualTo("2");
    agent.delete("/api/contexts/" + id);
  }

  @Test
  void unicodeSurvivesBothWays() {
    String id = create();
    List<JsonNode> events = run(id, "const s = 'héllo ✓ 😀 日本'; process.stdout.write(s + '\\n'); s");
    assertThat(text(events, "stdout")).isEqualTo("héllo ✓ 😀 日本\n");
    assertThat(first(events, "result").get("text").asText()).isEqualTo("'héllo ✓ 😀 日本'");
    agent.delete("/api/contexts/" + id);
  }

  @Test
  void interruptStopsAnEndlessLoopWithin100msAndKeepsTheVariables() throws Exception {
    String id = create();
    run(id, "var kept = 'still here'; var n = 0");
    try (SseReader sse = agent.stream("/api/execute/code", obj("context_id", id,
        "code", "console.log('looping'); while (true) { n++ }"))) {
      assertThat(sse.next().get("type").asText()).isEqualTo("stdout");
      Thread.sleep(200);
      long t0 = System.nanoTime();
      CompletableFuture<List<JsonNode>> rest = CompletableFuture.supplyAsync(sse::rest);
      assertThat(agent.post("/api/contexts/" + id + "/interrupt", "").body().get("interrupted").asBoolean()).isTrue();
      List<JsonNode> events = rest.get(10, TimeUnit.SECONDS);
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      System.out.println("javascript: interrupt of while (true) took " + ms + " ms from request to execution_complete");
      assertThat(first(events, "error").get("ename").asText()).isEqualTo("KeyboardInterrupt");
      assertThat(complete(events).get("restarted").asBoolean()).isFalse();
    }
    assertThat(first(run(id, "[kept, n > 0]"), "result").get("text").asText()).isEqualTo("[ 'still here', true ]");
    agent.delete("/api/contexts/" + id);
  }

  @Test
  void aTimeoutInterruptsAndKeepsState() {
    String id = create();
    run(id, "var a = 1");
    List<JsonNode> events = run(id, "while (true) {}", "timeout_ms", 300);
    JsonNode done = complete(events);
    assertThat(done.get("timedOut").asBoolean()).isTrue();
    assertThat(done.get("restarted").asBoolean()).isFalse();
    assertThat(first(run(id, "a + 1"), "result").get("text").asText()).isEqualTo("2");
    agent.delete("/api/contexts/" + id);
  }

  @Test
  void anAwaitedPromiseThatNeverSettlesEndsInARestartAfterTheGrace() {
    String id = create();
    List<JsonNode> events = run(id, "new Promise(() => {})", "timeout_ms", 200);
    JsonNode done = complete(events);
    assertThat(done.get("timedOut").asBoolean()).isTrue();
    assertThat(done.get("restarted").asBoolean()).isTrue();
    assertThat(first(run(id, "typeof a"), "result").get("text").asText()).isEqualTo("'undefined'");
    agent.delete("/api/contexts/" + id);
  }

  @Test
  void outputOverTheLimitIsTruncatedWithAMarker() {
    String id = create();
    List<JsonNode> events = run(id, "for (let i = 0; i < 3000; i++) console.log('x'.repeat(1023))");
    String out = text(events, "stdout");
    assertThat(out).endsWith("[output truncated: this run wrote more than 1048576 bytes]\n");
    assertThat(out.length()).isBetween(1 << 20, (1 << 20) + 100);
    assertThat(complete(events).get("truncated").asBoolean()).isTrue();
    agent.delete("/api/contexts/" + id);
  }

  @Test
  void fiftyContextsStayOpenWithMemoryReported() {
    List<String> ids = new ArrayList<>();
    long t0 = System.nanoTime();
    for (int i = 0; i < 50; i++) {
      ids.add(create());
    }
    long createMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    long kib = 0;
    for (JsonNode c : agent.get("/api/contexts").body().get("contexts")) {
      kib += ProcStats.rssKib(c.get("pid").asLong());
    }
    run(ids.get(12), "var me = 12");
    assertThat(first(run(ids.get(12), "me"), "result").get("text").asText()).isEqualTo("12");
    System.out.printf("50 javascript contexts: created in %d ms (%.1f ms each); interpreters' RSS %d MiB in all"
        + " (%.1f MiB each)%n", createMs, createMs / 50.0, kib / 1024, kib / 1024.0 / 50);
    ids.forEach(id -> assertThat(agent.delete("/api/contexts/" + id).status()).isEqualTo(200));
  }

  @Test
  void aMissingNodeIsAClearClientError() {
    TestAgent.Response r = agent.post("/api/contexts", obj("language", "javascript", "env_vars",
        Map.of("PATH", "/nonexistent")));
    assertThat(r.status()).isEqualTo(422);
    assertThat(r.body().get("message").asText()).contains("node", "not installed");
  }
}
