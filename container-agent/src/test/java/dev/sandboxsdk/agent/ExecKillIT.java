package dev.sandboxsdk.agent;

import static dev.sandboxsdk.agent.TestAgent.obj;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sandboxsdk.testkit.Await;
import dev.sandboxsdk.testkit.Procs;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * DELETE /api/execute/{id}: a client that gives up on an exec kills it at once. The keep-alive
 * interval is 10 s, so an exec that ends within a few seconds of the kill was not ended by the
 * hang-up detection (which needs a failed keep-alive write).
 */
class ExecKillIT {
  private static final String HEADER = "X-Sandbox-Exec-Id";

  @RegisterExtension static final TestAgent agent = new TestAgent(b -> b.graceMs(1000).keepAliveMs(10_000));

  @AfterEach
  void cleanUp() {
    agent.reset();
  }

  private static HttpRequest execRequest(String path, String id, String command) {
    return agent.request(path).header(HEADER, id).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(obj("command", command))).build();
  }

  /** DELETEs until the exec is registered (404 while it spawns); returns the 200 answer. */
  private static TestAgent.Response killWhenRunning(String id) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    TestAgent.Response r;
    do {
      r = agent.delete("/api/execute/" + id);
      if (r.status() == 200) {
        return r;
      }
      Thread.sleep(20);
    } while (System.nanoTime() < deadline);
    return r;
  }

  @Test
  void killEndsABufferedExecAtOnceAndItsResultSaysSigterm() throws Exception {
    CompletableFuture<HttpResponse<String>> exec = agent.http.sendAsync(
        execRequest("/api/execute", "buffered-1", "sleep 300"), HttpResponse.BodyHandlers.ofString());

    TestAgent.Response kill = killWhenRunning("buffered-1");
    long killed = System.nanoTime();

    assertThat(kill.status()).as(String.valueOf(kill.body())).isEqualTo(200);
    assertThat(kill.text("processId")).isEqualTo("buffered-1");
    assertThat(kill.text("signal")).isEqualTo("SIGTERM");
    assertThat(kill.body().get("success").asBoolean()).isTrue();
    JsonNode result = TestAgent.JSON.readTree(exec.get(5, TimeUnit.SECONDS).body());
    long tookMs = (System.nanoTime() - killed) / 1_000_000;
    assertThat(result.get("exitCode").asInt()).isEqualTo(143);
    assertThat(result.get("signal").asText()).isEqualTo("SIGTERM");
    assertThat(tookMs).as("the exec ended without waiting for a 10 s keep-alive").isLessThan(5_000);
  }

  @Test
  void killEndsAStreamedExecWhoseStartEventCarriesTheChosenId() throws Exception {
    HttpResponse<java.io.InputStream> r = agent.http.send(execRequest("/api/execute/stream", "streamed-1",
        "echo $$; sleep 300"), HttpResponse.BodyHandlers.ofInputStream());
    try (SseReader events = new SseReader(r)) {
      JsonNode start = events.next();
      assertThat(start.get("type").asText()).isEqualTo("start");
      assertThat(start.get("processId").asText()).isEqualTo("streamed-1");
      long pgid = start.get("pid").asLong();

      TestAgent.Response kill = agent.delete("/api/execute/streamed-1");
      long killed = System.nanoTime();

      assertThat(kill.status()).as(String.valueOf(kill.body())).isEqualTo(200);
      assertThat(Await.until(5000, () -> Procs.groupMembers(pgid).isEmpty())).isTrue();
      assertThat((System.nanoTime() - killed) / 1_000_000).isLessThan(5_000);
      List<JsonNode> rest = events.rest();
      JsonNode complete = rest.get(rest.size() - 1);
      assertThat(complete.get("type").asText()).isEqualTo("complete");
      assertThat(complete.get("exitCode").asInt()).isEqualTo(143);
      assertThat(complete.get("signal").asText()).isEqualTo("SIGTERM");
    }
  }

  @Test
  void unknownAndFinishedExecsAre404AndAKillOfABackgroundIdDoesNotTouchIt() throws Exception {
    TestAgent.Response unknown = agent.delete("/api/execute/no-such-exec");
    assertThat(unknown.status()).isEqualTo(404);
    assertThat(unknown.text("code")).isEqualTo("PROCESS_NOT_FOUND");
    assertThat(unknown.body().path("context").path("processId").asText()).isEqualTo("no-such-exec");

    HttpResponse<String> done = agent.http.send(execRequest("/api/execute", "done-1", "echo hi"),
        HttpResponse.BodyHandlers.ofString());
    assertThat(done.statusCode()).isEqualTo(200);
    TestAgent.Response finished = agent.delete("/api/execute/done-1");
    assertThat(finished.status()).isEqualTo(404);
    assertThat(finished.text("code")).isEqualTo("PROCESS_NOT_FOUND");

    // The id is free again once its exec has finished.
    HttpResponse<String> again = agent.http.send(execRequest("/api/execute", "done-1", "echo again"),
        HttpResponse.BodyHandlers.ofString());
    assertThat(TestAgent.JSON.readTree(again.body()).get("stdout").asText()).isEqualTo("again\n");

    // Background processes have their own route; the exec route does not reach them.
    assertThat(agent.post("/api/process/start", obj("command", "sleep 300", "processId", "bg-1")).status()).isEqualTo(200);
    assertThat(agent.delete("/api/execute/bg-1").status()).isEqualTo(404);
    assertThat(agent.processInfo("bg-1").get("status").asText()).isEqualTo("running");
  }

  @Test
  void theKillNeedsTheTokenAndOnlyDeleteIsAllowed() throws Exception {
    CompletableFuture<HttpResponse<String>> exec = agent.http.sendAsync(
        execRequest("/api/execute", "guarded-1", "sleep 300"), HttpResponse.BodyHandlers.ofString());
    HttpResponse<String> anonymous = agent.http.send(HttpRequest.newBuilder(agent.uri("/api/execute/guarded-1"))
        .DELETE().build(), HttpResponse.BodyHandlers.ofString());
    HttpResponse<String> wrongToken = agent.http.send(HttpRequest.newBuilder(agent.uri("/api/execute/guarded-1"))
        .header("Authorization", "Bearer wrong").DELETE().build(), HttpResponse.BodyHandlers.ofString());
    TestAgent.Response get = agent.get("/api/execute/guarded-1");

    assertThat(anonymous.statusCode()).isEqualTo(401);
    assertThat(wrongToken.statusCode()).isEqualTo(401);
    assertThat(get.status()).isEqualTo(405);
    assertThat(get.header("Allow")).isEqualTo("DELETE");
    assertThat(exec).as("the exec still runs").isNotDone();

    TestAgent.Response first = killWhenRunning("guarded-1");
    assertThat(first.status()).isEqualTo(200);
    assertThat(exec.get(5, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
  }

  @Test
  void aChosenIdMustBeValidAndNotInUse() throws Exception {
    HttpResponse<java.io.InputStream> r = agent.http.send(execRequest("/api/execute/stream", "dup-1", "sleep 300"),
        HttpResponse.BodyHandlers.ofInputStream());
    try (SseReader events = new SseReader(r)) {
      assertThat(events.next().get("processId").asText()).isEqualTo("dup-1"); // registered by now

      TestAgent.Response twin = agent.send(execRequest("/api/execute", "dup-1", "echo twin"));
      TestAgent.Response invalid = agent.send(execRequest("/api/execute", "../x", "echo bad"));
      TestAgent.Response reserved = agent.send(execRequest("/api/execute/stream", "stream", "echo bad"));

      assertThat(twin.status()).isEqualTo(409);
      assertThat(twin.text("code")).isEqualTo("PROCESS_ALREADY_EXISTS");
      assertThat(invalid.status()).isEqualTo(400);
      assertThat(invalid.body().path("context").path("field").asText()).isEqualTo(HEADER);
      assertThat(reserved.status()).isEqualTo(400);
      assertThat(agent.delete("/api/execute/dup-1").status()).isEqualTo(200);
      assertThat(events.rest()).last().satisfies(e -> assertThat(e.get("type").asText()).isEqualTo("complete"));
    }
  }
}
