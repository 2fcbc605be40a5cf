package dev.sandboxsdk.agent;

import static dev.sandboxsdk.agent.TestAgent.obj;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.InputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The agent's budget for buffered output (docs/protocol/semantics.md, "Memory"): execute results and the
 * windows of background processes share it; finished windows are evicted first, and a request
 * that cannot be honoured is told so.
 */
class OutputBudgetIT {
  private static final int MIB = 1024 * 1024;

  private TestAgent agent;

  @AfterEach
  void stop() {
    if (agent != null) {
      agent.close();
    }
  }

  private long buffered() {
    return agent.get("/api/version").body().get("output").get("bufferedBytes").asLong();
  }

  /** Starts a background process that fills both its 1 MiB windows and keeps running; waits for that. */
  private void startWindowFiller(String id) throws InterruptedException {
    agent.post("/api/process/start", obj("processId", id,
        "command", "head -c 1200000 /dev/zero; head -c 1200000 /dev/zero >&2; sleep 60"));
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (agent.processInfo(id).get("stderrBytes").asLong() < 1_200_000) {
      assertThat(System.nanoTime()).isLessThan(deadline);
      Thread.sleep(20);
    }
  }

  private void awaitBuffered(long expected) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (buffered() != expected && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    assertThat(buffered()).as("buffered output").isEqualTo(expected);
  }

  private void awaitFinished(List<String> ids) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    for (String id : ids) {
      while (!agent.isFinished(id)) {
        assertThat(System.nanoTime()).as("%s still running", id).isLessThan(deadline);
        Thread.sleep(20);
      }
    }
  }

  @Test
  void versionPublishesTheBudgetAndCapsMaxOutputBytesAtHalfOfIt() {
    agent = TestAgent.start(b -> b.outputBudgetBytes(4 * MIB));

    JsonNode v = agent.get("/api/version").body();
    assertThat(v.get("limits").get("outputBudgetBytes").asLong()).isEqualTo(4 * MIB);
    assertThat(v.get("limits").get("maxOutputBytes").asLong()).isEqualTo(2 * MIB);
    assertThat(v.get("limits").get("defaultMaxOutputBytes").asLong()).isEqualTo(2 * MIB);
    assertThat(v.get("output").get("bufferedBytes").asLong()).isZero();

    TestAgent.Response tooMuch = agent.post("/api/execute", obj("command", "true", "maxOutputBytes", 2 * MIB + 1));
    assertThat(tooMuch.status()).isEqualTo(400);
    assertThat(tooMuch.text("code")).isEqualTo("VALIDATION_FAILED");
    assertThat(tooMuch.text("message")).contains("maxOutputBytes", String.valueOf(2 * MIB));
  }

  @Test
  void finishedWindowsAreEvictedOldestFirstAndReadersAreToldWhatWasDropped() throws Exception {
    int window = 256 * 1024;
    int each = 300 * 1024;
    agent = TestAgent.start(b -> b.outputBudgetBytes(4 * MIB).logWindowBytes(window));
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 30; i++) { // 30 x ~260 KiB of windows: twice the budget
      String id = "p" + i;
      agent.post("/api/process/start", obj("processId", id, "command", "head -c " + each + " /dev/zero | tr '\\0' x"));
      ids.add(id);
      awaitFinished(List.of(id)); // one at a time, so "oldest finished" is p0, p1, ...
    }

    assertThat(buffered()).isLessThanOrEqualTo(4 * MIB);

    // The oldest was evicted: logs jump to the end and say truncated; the stream says how much.
    JsonNode first = agent.get("/api/process/p0/logs").body();
    assertThat(first.get("truncated").asBoolean()).isTrue();
    assertThat(first.get("stdout").asText()).isEmpty();
    assertThat(first.get("stdoutOffset").asLong()).isEqualTo(each);
    assertThat(first.get("complete").asBoolean()).isTrue();
    try (SseReader events = agent.stream("/api/process/p0/stream", null)) {
      JsonNode truncated = events.next();
      while (!truncated.get("type").asText().equals("truncated")) {
        truncated = events.next();
      }
      assertThat(truncated.get("stream").asText()).isEqualTo("stdout");
      assertThat(truncated.get("droppedBytes").asLong()).isEqualTo(each);
      assertThat(truncated.get("offset").asLong()).isEqualTo(each);
    }
    // The newest still has its whole window.
    JsonNode last = agent.get("/api/process/p29/logs").body();
    assertThat(last.get("stdoutOffset").asLong()).isEqualTo(each - window);
    assertThat(last.get("stdout").asText()).hasSize(window).matches("x+");
    // Its record is intact: the count of bytes the process wrote does not change.
    assertThat(agent.processInfo("p0").get("stdoutBytes").asLong()).isEqualTo(each);
    assertThat(agent.get("/api/version").body().get("output").get("evictedBytes").asLong()).isPositive();

    // Dropping the records gives the rest back.
    agent.post("/api/process/cleanup", "");
    assertThat(buffered()).isZero();
  }

  @Test
  void anExecThatOutgrowsTheBudgetStopsBufferingAndSaysWhy() throws Exception {
    agent = TestAgent.start(b -> b.outputBudgetBytes(4 * MIB).logWindowBytes(MIB));
    // A running background process holds two full 1 MiB windows: 2 MiB that cannot be evicted.
    startWindowFiller("holder");
    long held = buffered();
    assertThat(held).isEqualTo(2 * MIB);

    TestAgent.Response r = agent.post("/api/execute",
        obj("command", "head -c 3000000 /dev/zero | tr '\\0' y", "maxOutputBytes", 2 * MIB));

    assertThat(r.status()).isEqualTo(200);
    assertThat(r.body().get("exitCode").asInt()).isZero();
    assertThat(r.body().get("truncated").asBoolean()).isTrue();
    assertThat(r.body().get("truncatedReason").asText()).isEqualTo("outputBudget");
    String stdout = r.text("stdout");
    assertThat(stdout.length()).isLessThan(2 * MIB).isGreaterThan(MIB / 2);
    assertThat(stdout).matches("y+");
    awaitBuffered(held); // the agent releases the buffers just after the body is out

    // Within maxOutputBytes the reason is the request's own cap.
    TestAgent.Response capped = agent.post("/api/execute", obj("command", "seq 1 1000", "maxOutputBytes", 10));
    assertThat(capped.text("stdout")).isEqualTo("1\n2\n3\n4\n5\n");
    assertThat(capped.text("truncatedReason")).isEqualTo("maxOutputBytes");
    TestAgent.Response plain = agent.post("/api/execute", obj("command", "echo hi"));
    assertThat(plain.text("stdout")).isEqualTo("hi\n");
    assertThat(plain.body().has("truncatedReason")).isFalse();
  }

  @Test
  void anExecIsRefusedWith503WhenNoBufferIsLeft() throws Exception {
    agent = TestAgent.start(b -> b.outputBudgetBytes(2 * MIB).logWindowBytes(MIB));
    startWindowFiller("hog");
    assertThat(buffered()).isEqualTo(2 * MIB);

    TestAgent.Response r = agent.post("/api/execute", obj("command", "echo hi"));

    assertThat(r.status()).isEqualTo(503);
    assertThat(r.text("code")).isEqualTo("OUTPUT_BUDGET_EXHAUSTED");
    assertThat(r.body().get("httpStatus").asInt()).isEqualTo(503);
    assertThat(r.body().get("context").get("budget").asLong()).isEqualTo(2 * MIB);
    // The stream needs no buffer and still works; so does exec once the hog is gone.
    try (SseReader events = agent.stream("/api/execute/stream", obj("command", "echo streamed"))) {
      StringBuilder out = new StringBuilder();
      for (JsonNode e : events.rest()) {
        if (e.get("type").asText().equals("stdout")) {
          out.append(e.get("data").asText());
        }
      }
      assertThat(out.toString()).isEqualTo("streamed\n");
    }
    agent.delete("/api/process/hog?signal=SIGKILL");
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!agent.isFinished("hog")) {
      assertThat(System.nanoTime()).isLessThan(deadline);
      Thread.sleep(20);
    }
    assertThat(agent.post("/api/execute", obj("command", "echo hi")).text("stdout")).isEqualTo("hi\n");
  }

  @Test
  void largeResultsAreWrittenExactlyFromTheBuffers() throws Exception {
    agent = TestAgent.start(b -> { });
    // Bytes that cross every block and frame boundary, in both encodings.
    Files.write(agent.workspace.resolve("random.bin"), randomBytes(3 * MIB + 1));
    TestAgent.Response b64 = agent.post("/api/execute",
        obj("command", "cat random.bin; head -c 100001 random.bin >&2", "encoding", "base64"));
    byte[] expected = Files.readAllBytes(agent.workspace.resolve("random.bin"));
    assertThat(sha(Base64.getDecoder().decode(b64.text("stdout")))).isEqualTo(sha(expected));
    assertThat(Base64.getDecoder().decode(b64.text("stderr"))).hasSize(100_001);
    assertThat(b64.body().get("truncated").asBoolean()).isFalse();

    // Text: a 3-byte character split by every 16 KiB slice, control characters that need
    // escaping, quotes, and an invalid byte at the very end.
    String text = "€\"\\\t\u0001x".repeat(40_000);
    Files.write(agent.workspace.resolve("text.bin"), concat(text.getBytes(StandardCharsets.UTF_8), new byte[] {(byte) 0xC3}));
    TestAgent.Response utf8 = agent.post("/api/execute", obj("command", "cat text.bin"));
    assertThat(utf8.text("stdout")).isEqualTo(text + "\uFFFD");
    assertThat(utf8.raw().headers().firstValueAsLong("Content-Length").orElse(-1))
        .isEqualTo(utf8.raw().body().getBytes(StandardCharsets.UTF_8).length);

    TestAgent.Response empty = agent.post("/api/execute", obj("command", "true", "encoding", "base64"));
    assertThat(empty.text("stdout")).isEmpty();
    awaitBuffered(0);
  }

  private static byte[] randomBytes(int n) {
    byte[] b = new byte[n];
    new java.util.Random(42).nextBytes(b);
    return b;
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] c = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, c, a.length, b.length);
    return c;
  }

  private static String sha(byte[] b) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
  }

  @Test
  @org.junit.jupiter.api.Timeout(60) // before the 3 s linger cap this exec never finished
  void aChildThatOutlivesTheCommandCannotChangeTheResultWhileASlowClientReadsIt() throws Exception {
    agent = TestAgent.start(b -> b.keepAliveMs(15_000)); // no heartbeats: the result goes out with a Content-Length
    // The command exits after 3 MB of stdout; the loop it leaves behind writes to stderr every
    // 50 ms while the response goes out. Before the buffers were sealed, those bytes were counted
    // into the body after its Content-Length was sent, and the connection was cut short.
    String body = "{\"command\":\"head -c 3000000 /dev/zero | tr '\\\\0' a;"
        + " (trap 'exit 0' TERM; while :; do sleep 0.05; echo late >&2; done) &\"}";
    URI uri = agent.uri("/api/execute");
    try (Socket s = new Socket(uri.getHost(), uri.getPort())) {
      s.setSoTimeout(30_000);
      String request = "POST /api/execute HTTP/1.1\r\nHost: agent\r\nAuthorization: Bearer " + TestAgent.TOKEN
          + "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: "
          + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + body;
      s.getOutputStream().write(request.getBytes(StandardCharsets.UTF_8));
      InputStream in = s.getInputStream();
      java.io.ByteArrayOutputStream got = new java.io.ByteArrayOutputStream();
      byte[] buf = new byte[64 * 1024];
      int n;
      while ((n = in.read(buf)) >= 0) {
        got.write(buf, 0, n);
        Thread.sleep(20); // a slow client: about 3 MB/s, so the response takes a second or more
      }
      String response = got.toString(StandardCharsets.ISO_8859_1);
      int headerEnd = response.indexOf("\r\n\r\n");
      assertThat(response).startsWith("HTTP/1.1 200");
      java.util.regex.Matcher length = java.util.regex.Pattern.compile("(?i)content-length: (\\d+)").matcher(response);
      assertThat(length.find()).as("a Content-Length header").isTrue();
      String json = response.substring(headerEnd + 4);
      assertThat((long) json.length()).as("body bytes against Content-Length").isEqualTo(Long.parseLong(length.group(1)));
      JsonNode result = new com.fasterxml.jackson.databind.ObjectMapper().readTree(json);
      assertThat(result.get("stdout").asText()).hasSize(3_000_000);
    } finally {
      agent.delete("/api/process/kill-all");
    }
  }

  @Test
  void largeRequestBodiesAreChargedToTheBudgetAndRefusedWhenItHasNoRoom() throws Exception {
    agent = TestAgent.start(b -> b.outputBudgetBytes(4 * MIB));
    String big = "x".repeat(3 * MIB); // read and parsed, it would take about twice that

    TestAgent.Response refused = agent.post("/api/execute", obj("command", "wc -c", "stdin", big));

    assertThat(refused.status()).isEqualTo(503);
    assertThat(refused.text("code")).isEqualTo("OUTPUT_BUDGET_EXHAUSTED");
    assertThat(refused.text("message")).contains("request body");
    TestAgent.Response fits = agent.post("/api/execute", obj("command", "wc -c", "stdin", "y".repeat(MIB)));
    assertThat(fits.status()).isEqualTo(200);
    assertThat(fits.text("stdout").trim()).isEqualTo(String.valueOf(MIB));
    awaitBuffered(0);
  }
}
