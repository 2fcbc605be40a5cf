package dev.sandboxsdk.agent;

import static dev.sandboxsdk.agent.TestAgent.obj;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sandboxsdk.testkit.Await;
import dev.sandboxsdk.testkit.Procs;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** POST /api/execute/stream: event order, byte exactness, pacing and disconnects. */
class ExecStreamIT {
  @RegisterExtension static final TestAgent agent = new TestAgent(b -> b.keepAliveMs(300).graceMs(1000));

  @Test
  void eventsArriveInOrderAndEndWithComplete() {
    try (SseReader sse = agent.stream("/api/execute/stream",
        obj("command", "echo one; sleep 0.1; echo two >&2; sleep 0.1; echo three; exit 4"))) {
      assertThat(sse.status()).isEqualTo(200);
      assertThat(sse.response.headers().firstValue("Content-Type")).hasValueSatisfying(v -> assertThat(v).startsWith("text/event-stream"));
      List<JsonNode> events = sse.rest();

      assertThat(events).extracting(e -> e.get("type").asText())
          .containsExactly("start", "stdout", "stderr", "stdout", "complete");
      JsonNode start = events.get(0);
      assertThat(start.get("pid").asLong()).isPositive();
      assertThat(start.get("processId").asText()).isNotEmpty();
      assertThat(start.get("command").asText()).startsWith("echo one");
      assertThat(events.get(1).get("data").asText()).isEqualTo("one\n");
      assertThat(events.get(1).get("offset").asLong()).isZero();
      assertThat(events.get(2).get("data").asText()).isEqualTo("two\n");
      assertThat(events.get(2).get("offset").asLong()).isZero();
      assertThat(events.get(3).get("data").asText()).isEqualTo("three\n");
      assertThat(events.get(3).get("offset").asLong()).isEqualTo(4);
      JsonNode complete = events.get(4);
      assertThat(complete.get("exitCode").asInt()).isEqualTo(4);
      assertThat(complete.get("timedOut").asBoolean()).isFalse();
      assertThat(complete.get("duration").asLong()).isGreaterThanOrEqualTo(200);
    }
  }

  @Test
  void aCodePointSplitAcrossTwoWritesArrivesWhole() {
    // printf writes the first two bytes of the euro sign, pauses, then the third.
    try (SseReader sse = agent.stream("/api/execute/stream",
        obj("command", "printf 'A\\342\\202'; sleep 0.3; printf '\\254B'"))) {
      List<JsonNode> out = new ArrayList<>();
      for (JsonNode e : sse.rest()) {
        if (e.get("type").asText().equals("stdout")) {
          out.add(e);
        }
      }
      StringBuilder text = new StringBuilder();
      out.forEach(e -> text.append(e.get("data").asText()));
      assertThat(text.toString()).isEqualTo("A\u20acB");
      assertThat(out).allSatisfy(e -> assertThat(e.get("data").asText()).doesNotContain("\uFFFD"));
      // offsets and byte counts tile the stream: 1 + 3 + 1 bytes
      long next = 0;
      for (JsonNode e : out) {
        assertThat(e.get("offset").asLong()).isEqualTo(next);
        next += e.get("bytes").asLong();
      }
      assertThat(next).isEqualTo(5);
    }
  }

  @Test
  void fiftyMegabytesArriveByteExact() throws Exception {
    Path file = agent.workspace.resolve("big.bin");
    MessageDigest expected = MessageDigest.getInstance("SHA-256");
    Random random = new Random(42);
    byte[] block = new byte[1 << 20];
    try (OutputStream out = Files.newOutputStream(file)) {
      for (int i = 0; i < 50; i++) {
        random.nextBytes(block);
        expected.update(block);
        out.write(block);
      }
    }
    MessageDigest actual = MessageDigest.getInstance("SHA-256");
    long total = 0;
    try (SseReader sse = agent.stream("/api/execute/stream", obj("argv", List.of("cat", "big.bin"), "encoding", "base64"))) {
      JsonNode complete = null;
      for (JsonNode e = sse.next(); e != null; e = sse.next()) {
        String type = e.get("type").asText();
        if (type.equals("stdout")) {
          assertThat(e.get("offset").asLong()).isEqualTo(total);
          byte[] chunk = Base64.getDecoder().decode(e.get("data").asText());
          assertThat(e.get("bytes").asLong()).isEqualTo(chunk.length);
          actual.update(chunk);
          total += chunk.length;
        } else if (type.equals("complete")) {
          complete = e;
        }
      }
      assertThat(complete).isNotNull();
      assertThat(complete.get("exitCode").asInt()).isZero();
    }
    assertThat(total).isEqualTo(50L << 20);
    assertThat(actual.digest()).isEqualTo(expected.digest());
  }

  @Test
  void closingTheConnectionKillsTheProcess() throws Exception {
    long pid;
    try (SseReader sse = agent.stream("/api/execute/stream", obj("command", "sleep 300"))) {
      JsonNode start = sse.next();
      pid = start.get("pid").asLong();
      assertThat(Procs.alive(pid)).isTrue();
    }
    assertThat(Await.until(10_000, () -> !Procs.alive(pid)))
        .as("process of a closed execute/stream connection is killed").isTrue();
  }

  @Test
  void closingTheConnectionKillsAChattyProcessToo() throws Exception {
    long pid;
    try (SseReader sse = agent.stream("/api/execute/stream", obj("command", "yes"))) {
      pid = sse.next().get("pid").asLong();
      assertThat(sse.next().get("type").asText()).isEqualTo("stdout");
    }
    assertThat(Await.until(10_000, () -> !Procs.alive(pid))).isTrue();
  }

  @Test
  void theReaderPacesTheProcess() throws Exception {
    // The command would write 200 MB; a reader that stops reading must stall it, not buffer it.
    long before = liveHeap();
    try (SseReader sse = agent.stream("/api/execute/stream",
        obj("command", "head -c 200000000 /dev/zero", "encoding", "base64"))) {
      long pid = sse.next().get("pid").asLong();
      sse.next();
      Thread.sleep(1500);
      assertThat(Procs.alive(pid)).as("writer is blocked by the unread stream, not finished").isTrue();
      // The agent runs in this JVM: its buffers would show up here.
      assertThat(liveHeap() - before).isLessThan(32L << 20);
    }
  }

  @Test
  void timeoutEndsTheStreamWithATimedOutComplete() {
    try (SseReader sse = agent.stream("/api/execute/stream",
        obj("command", "echo before; sleep 30", "timeoutMs", 300))) {
      List<JsonNode> events = sse.rest();
      JsonNode last = events.get(events.size() - 1);
      assertThat(last.get("type").asText()).isEqualTo("complete");
      assertThat(last.get("exitCode").asInt()).isEqualTo(124);
      assertThat(last.get("timedOut").asBoolean()).isTrue();
      assertThat(events).anySatisfy(e -> assertThat(e.path("data").asText()).isEqualTo("before\n"));
    }
  }

  @Test
  void idleStreamsGetKeepAliveComments() {
    // 1.5 s of silence at a 300 ms interval: five are due; a timer that waits a full interval
    // after the last write before it even looks would manage only two.
    try (SseReader sse = agent.stream("/api/execute/stream", obj("command", "echo early; sleep 1.5; echo late"))) {
      List<JsonNode> events = sse.rest();
      assertThat(events.get(events.size() - 1).get("type").asText()).isEqualTo("complete");
      assertThat(sse.comments).isGreaterThanOrEqualTo(3);
    }
  }

  @Test
  void badRequestsAreRefusedBeforeTheStreamStarts() {
    try (SseReader sse = agent.stream("/api/execute/stream", obj("argv", List.of("no-such-binary-xyz")))) {
      assertThat(sse.status()).isEqualTo(404);
      assertThat(sse.errorBody().get("code").asText()).isEqualTo("COMMAND_NOT_FOUND");
    }
    try (SseReader sse = agent.stream("/api/execute/stream", obj("command", "true", "maxOutputBytes", 10))) {
      assertThat(sse.status()).isEqualTo(400);
      assertThat(sse.errorBody().get("context").get("field").asText()).isEqualTo("maxOutputBytes");
    }
  }

  @Test
  void textModeStreamsPlainUtf8() throws Exception {
    try (SseReader sse = agent.stream("/api/execute/stream", obj("command", "printf 'h\\303\\251 \"q\" \\\\ \\t\\001'"))) {
      StringBuilder text = new StringBuilder();
      for (JsonNode e : sse.rest()) {
        if (e.get("type").asText().equals("stdout")) {
          text.append(e.get("data").asText());
        }
      }
      assertThat(text.toString()).isEqualTo("h\u00e9 \"q\" \\ \t\u0001");
    }
  }

  /** Heap in use after a full collection, so garbage from earlier tests does not count. */
  static long liveHeap() throws InterruptedException {
    for (int i = 0; i < 3; i++) {
      System.gc();
      Thread.sleep(50);
    }
    Runtime rt = Runtime.getRuntime();
    return rt.totalMemory() - rt.freeMemory();
  }
}
