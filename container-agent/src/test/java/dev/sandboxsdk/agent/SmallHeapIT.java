package dev.sandboxsdk.agent;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The packaged agent in a small heap (-Xmx64m), asked for as much output as it allows, several
 * times at once: every call gets a complete JSON answer (a result or a clear error), never a
 * 200 without a body, and the agent keeps serving.
 */
class SmallHeapIT {
  @TempDir Path dir;
  private Process agent;
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  @AfterEach
  void stop() throws InterruptedException {
    if (agent != null) {
      agent.destroy();
      if (!agent.waitFor(15, TimeUnit.SECONDS)) {
        agent.destroyForcibly();
      }
    }
  }

  private HttpResponse<String> call(URI base, String path, String body) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve(path)).timeout(Duration.ofSeconds(120))
        .header("Authorization", "Bearer " + AgentProcessIT.TOKEN);
    b = body == null ? b.GET() : b.POST(HttpRequest.BodyPublishers.ofString(body));
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void bigExecsInASmallHeapGetACompleteAnswerAndTheAgentKeepsServing() throws Exception {
    List<String> cmd = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-Xmx64m", "-XX:+UseSerialGC", "-jar", AgentProcessIT.JAR.toAbsolutePath().toString(),
        "--port", "0", "--bind", "127.0.0.1", "--workspace", dir.toString(), "--keep-alive-ms", "200");
    ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile()).redirectError(ProcessBuilder.Redirect.DISCARD);
    pb.environment().put(Main.TOKEN_ENV, AgentProcessIT.TOKEN);
    agent = pb.start();
    URI base = URI.create(AgentProcessIT.awaitReady(agent).get("url").asText() + "/");
    JsonNode limits = TestAgent.JSON.readTree(call(base, "api/version", null).body()).get("limits");
    long max = limits.get("maxOutputBytes").asLong();
    assertThat(max).as("half of a budget that is a quarter of a 64 MiB heap").isLessThanOrEqualTo(8L << 20);

    // Each call asks for the most it may and produces more on both streams, slowly enough that
    // the whitespace heartbeats start (the status is committed before the result exists).
    String exec = TestAgent.obj("command", "sleep 0.5; head -c " + (max + 100_000) + " /dev/zero | tr '\\0' a;"
        + " head -c " + (max + 100_000) + " /dev/zero | tr '\\0' b >&2", "maxOutputBytes", max);
    ExecutorService pool = Executors.newFixedThreadPool(6);
    List<Future<HttpResponse<String>>> calls = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      calls.add(pool.submit(() -> call(base, "api/execute", exec)));
    }
    int complete = 0;
    for (Future<HttpResponse<String>> f : calls) {
      HttpResponse<String> r = f.get(180, TimeUnit.SECONDS);
      assertThat(r.body()).as("status %d", r.statusCode()).isNotBlank();
      JsonNode body = TestAgent.JSON.readTree(r.body());
      if (r.statusCode() == 503) {
        assertThat(body.get("code").asText()).isEqualTo("OUTPUT_BUDGET_EXHAUSTED");
        continue;
      }
      assertThat(r.statusCode()).as(r.body().substring(0, Math.min(300, r.body().length()))).isEqualTo(200);
      assertThat(body.get("exitCode").asInt()).isZero();
      assertThat(body.get("truncated").asBoolean()).isTrue();
      assertThat(body.get("stdout").asText()).matches("a+").hasSizeLessThanOrEqualTo((int) max);
      assertThat(body.get("truncatedReason").asText()).isIn("maxOutputBytes", "outputBudget");
      complete++;
    }
    pool.shutdown();
    assertThat(complete).as("calls answered with a result").isPositive();

    assertThat(call(base, "api/ping", null).statusCode()).isEqualTo(200);
    JsonNode echo = TestAgent.JSON.readTree(call(base, "api/execute", TestAgent.obj("command", "echo still here")).body());
    assertThat(echo.get("stdout").asText()).isEqualTo("still here\n");
    // An exec gives its buffers back after writing its response, so the last one may still hold
    // them for a moment when this request arrives (more often with the faster native spawn).
    long[] buffered = {-1};
    boolean drained = ChildAgent.await(10_000, () -> {
      try {
        buffered[0] = TestAgent.JSON.readTree(call(base, "api/version", null).body()).get("output")
            .get("bufferedBytes").asLong();
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
      return buffered[0] == 0;
    });
    assertThat(drained).as("bufferedBytes back to 0, last %d", buffered[0]).isTrue();
  }
}
