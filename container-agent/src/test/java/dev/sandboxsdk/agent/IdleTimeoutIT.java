package dev.sandboxsdk.agent;

import static dev.sandboxsdk.agent.TestAgent.obj;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sandboxsdk.testkit.Await;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code --idle-timeout-ms}: the agent stops itself, as on SIGTERM but with status 0, once no
 * authenticated request has been in progress or started for that long.
 *
 * <p>The idle clock runs from the agent's ready line, so each test's first request must arrive
 * within the timeout: the timeouts are seconds long so that a loaded machine (a cold JVM, a slow
 * first connection) cannot make a test's own first request late.
 */
class IdleTimeoutIT {
  @TempDir Path dir;
  LaunchedAgent agent;
  final String tag = "5" + (100_000 + ThreadLocalRandom.current().nextInt(800_000));

  @AfterEach
  void stop() throws InterruptedException {
    if (agent != null) {
      agent.close();
    }
    for (long pid : Tagged.pids(tag)) {
      ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
    }
  }

  LaunchedAgent start(long idleMs) throws Exception {
    agent = LaunchedAgent.start(List.of(), Map.of(), dir.resolve("agent.log"), "--workspace", dir.resolve("ws").toString(),
        "--grace-ms", "500", "--idle-timeout-ms", String.valueOf(idleMs));
    return agent;
  }

  @Test
  void withoutRequestsTheAgentStopsItselfAndEverythingItStartedWithStatusZero() throws Exception {
    start(3000);
    JsonNode version = agent.ok("GET", "/api/version", null);
    assertThat(version.get("limits").get("idleTimeoutMs").asLong()).isEqualTo(3000);
    agent.ok("POST", "/api/process/start", obj("command", "sleep " + tag + ".1 & sleep " + tag + ".2"));
    long lastRequest = System.nanoTime();
    assertThat(Await.until(5_000, () -> Tagged.sleeps(tag) == 2)).isTrue();

    int status = agent.awaitExit(20_000);
    long stoppedAfterMs = (System.nanoTime() - lastRequest) / 1_000_000;

    assertThat(status).as(LaunchedAgent.readQuietly(agent.log)).isZero();
    assertThat(stoppedAfterMs).isBetween(3000L, 15_000L);
    assertThat(Files.readString(agent.log)).contains("no request for 3000 ms (--idle-timeout-ms); stopping")
        .contains("sandbox agent stopped");
    assertThat(Await.until(5_000, () -> Tagged.sleeps(tag) == 0)).as("left: %s", Tagged.sleepPids(tag)).isTrue();
  }

  @Test
  void theVersionReportsTheLastActivityAndAskingForItIsNoActivity() throws Exception {
    start(3000);
    agent.ok("GET", "/api/process/list", null);
    java.time.Instant last = java.time.Instant.parse(agent.ok("GET", "/api/version", null).get("lastActivityAt").asText());
    long until = System.nanoTime() + 600_000_000L;
    while (System.nanoTime() < until) {
      JsonNode v = agent.ok("GET", "/api/version", null);
      assertThat(java.time.Instant.parse(v.get("lastActivityAt").asText())).as("unchanged by version requests")
          .isBetween(last.minusMillis(5), last.plusMillis(5));
      Thread.sleep(100);
    }
    agent.ok("GET", "/api/process/list", null);
    JsonNode after = agent.ok("GET", "/api/version", null);
    assertThat(java.time.Instant.parse(after.get("lastActivityAt").asText())).isAfter(last.plusMillis(500));
    // version requests every 100 ms do not keep it alive
    long deadline = System.nanoTime() + 20_000_000_000L;
    while (agent.process.isAlive() && System.nanoTime() < deadline) {
      try {
        agent.call("GET", "/api/version", null);
      } catch (java.io.UncheckedIOException stopping) {
        // the agent went away mid-request
      }
      Thread.sleep(100);
    }
    assertThat(agent.awaitExit(5_000)).isZero();
  }

  @Test
  void anOpenEventStreamKeepsTheAgentAliveUntilItEnds() throws Exception {
    start(3000);
    try (SseReader sse = agent.stream("/api/execute/stream", obj("command", "sleep 6; echo done"))) {
      List<JsonNode> events = sse.rest();
      assertThat(events.get(events.size() - 1).get("type").asText()).isEqualTo("complete");
    }
    assertThat(agent.process.isAlive()).as("alive when the 6 s stream ended").isTrue();

    assertThat(agent.awaitExit(20_000)).isZero();
  }

  @Test
  void requestsKeepTheAgentAliveButPingsAndRequestsWithoutAValidTokenDoNot() throws Exception {
    start(3000);
    long until = System.nanoTime() + 7_000_000_000L;
    while (System.nanoTime() < until) {
      try {
        agent.ok("GET", "/api/process/list", null);
      } catch (java.io.UncheckedIOException e) {
        throw new AssertionError("request failed; agent log:\n" + LaunchedAgent.readQuietly(agent.log), e);
      }
      Thread.sleep(200);
    }
    assertThat(agent.process.isAlive()).as("alive after 7 s of requests 200 ms apart").isTrue();

    long start = System.nanoTime();
    HttpRequest wrongToken = HttpRequest.newBuilder(agent.url.resolve("/api/version"))
        .header("Authorization", "Bearer wrong").build();
    while (agent.process.isAlive() && System.nanoTime() - start < 20_000_000_000L) {
      try {
        assertThat(agent.call("GET", "/api/ping", null).status()).isEqualTo(200);
        assertThat(agent.http.send(wrongToken, HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(401);
      } catch (java.io.UncheckedIOException | java.io.IOException stopping) {
        // the agent went away mid-request
      }
      Thread.sleep(100);
    }
    long stoppedAfterMs = (System.nanoTime() - start) / 1_000_000;

    assertThat(agent.awaitExit(5_000)).isZero();
    assertThat(stoppedAfterMs).isBetween(2_500L, 15_000L);
  }
}
