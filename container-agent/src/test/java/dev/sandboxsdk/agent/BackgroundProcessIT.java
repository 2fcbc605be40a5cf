package dev.sandboxsdk.agent;

import static dev.sandboxsdk.agent.TestAgent.obj;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sandboxsdk.testkit.Await;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Background processes: start, list, get, logs from offsets, streams, stdin, cleanup. */
class BackgroundProcessIT {
  @RegisterExtension
  static final TestAgent agent = new TestAgent(b -> b.keepAliveMs(200).graceMs(1000)
      .logWindowBytes(64 * 1024).autoCleanupDelayMs(200));

  @AfterEach
  void cleanUp() {
    agent.reset();
  }

  static JsonNode startProcess(String json) {
    TestAgent.Response r = agent.post("/api/process/start", json);
    assertThat(r.status()).as(String.valueOf(r.body())).isEqualTo(200);
    return r.body();
  }

  @Test
  void startedProcessIsListedAndCanBeFetchedById() {
    JsonNode started = startProcess(obj("command", "sleep 30", "processId", "sleeper"));
    assertThat(started.get("processId").asText()).isEqualTo("sleeper");
    assertThat(started.get("pid").asLong()).isPositive();
    assertThat(started.get("command").asText()).isEqualTo("sleep 30");

    JsonNode list = agent.get("/api/process/list").body().get("processes");
    assertThat(list).hasSize(1);
    JsonNode p = list.get(0);
    assertThat(p.get("id").asText()).isEqualTo("sleeper");
    assertThat(p.get("status").asText()).isEqualTo("running");
    assertThat(p.get("pid").asLong()).isEqualTo(started.get("pid").asLong());
    assertThat(p.get("startTime").asText()).isNotEmpty();
    assertThat(p.has("exitCode")).isFalse();

    assertThat(agent.processInfo("sleeper").get("status").asText()).isEqualTo("running");
    assertThat(agent.get("/api/process/list?status=running").body().get("processes")).hasSize(1);
    assertThat(agent.get("/api/process/list?status=completed").body().get("processes")).isEmpty();
  }

  @Test
  void generatedIdsAreUniqueAndCustomIdsMayNotRepeat() {
    String a = startProcess(obj("command", "true")).get("processId").asText();
    String b = startProcess(obj("command", "true")).get("processId").asText();
    assertThat(a).isNotEqualTo(b);

    startProcess(obj("command", "sleep 30", "processId", "web"));
    TestAgent.Response again = agent.post("/api/process/start", obj("command", "sleep 30", "processId", "web"));
    assertThat(again.status()).isEqualTo(409);
    assertThat(again.text("code")).isEqualTo("PROCESS_ALREADY_EXISTS");
  }

  @Test
  void finishedProcessReportsExitCodeStatusAndEndTime() throws Exception {
    startProcess(obj("command", "echo done; exit 0", "processId", "ok"));
    startProcess(obj("command", "exit 5", "processId", "bad"));
    assertThat(Await.until(5000, () -> agent.isFinished("ok") && agent.isFinished("bad"))).isTrue();

    JsonNode ok = agent.processInfo("ok");
    assertThat(ok.get("status").asText()).isEqualTo("completed");
    assertThat(ok.get("exitCode").asInt()).isZero();
    assertThat(ok.get("endTime").asText()).isNotEmpty();
    assertThat(ok.get("stdoutBytes").asLong()).isEqualTo(5);
    JsonNode bad = agent.processInfo("bad");
    assertThat(bad.get("status").asText()).isEqualTo("failed");
    assertThat(bad.get("exitCode").asInt()).isEqualTo(5);
  }

  @Test
  void logsCanBeReadFromAnOffsetWhileRunningAndAfterExit() throws Exception {
    startProcess(obj("command", "for i in 1 2 3 4 5 6 7 8; do echo line$i; sleep 0.1; done; echo warn >&2",
        "processId", "counter"));
    assertThat(Await.until(5000, () -> agent.get("/api/process/counter/logs").body().get("stdoutNextOffset").asLong() >= 12)).isTrue();

    TestAgent.Response running = agent.get("/api/process/counter/logs?stdoutSince=6");
    assertThat(running.text("stdout")).startsWith("line2\n");
    assertThat(running.body().get("stdoutOffset").asLong()).isEqualTo(6);
    assertThat(running.body().get("complete").asBoolean()).isFalse();
    assertThat(running.text("status")).isEqualTo("running");

    assertThat(Await.until(5000, () -> agent.isFinished("counter"))).isTrue();
    TestAgent.Response all = agent.get("/api/process/counter/logs");
    assertThat(all.text("stdout")).isEqualTo("line1\nline2\nline3\nline4\nline5\nline6\nline7\nline8\n");
    assertThat(all.text("stderr")).isEqualTo("warn\n");
    assertThat(all.body().get("truncated").asBoolean()).isFalse();
    assertThat(all.body().get("complete").asBoolean()).isTrue();

    TestAgent.Response tail = agent.get("/api/process/counter/logs?stdoutSince=36&stderrSince=5");
    assertThat(tail.text("stdout")).isEqualTo("line7\nline8\n");
    assertThat(tail.text("stderr")).isEmpty();
    assertThat(tail.body().get("stdoutNextOffset").asLong()).isEqualTo(48);

    TestAgent.Response limited = agent.get("/api/process/counter/logs?stdoutSince=6&maxBytes=12");
    assertThat(limited.text("stdout")).isEqualTo("line2\nline3\n");
    assertThat(limited.body().get("stdoutNextOffset").asLong()).isEqualTo(18);
    assertThat(limited.body().get("complete").asBoolean()).isFalse();

    TestAgent.Response beyond = agent.get("/api/process/counter/logs?stdoutSince=49");
    assertThat(beyond.status()).isEqualTo(400);
    assertThat(beyond.body().get("context").get("field").asText()).isEqualTo("stdoutSince");
  }

  @Test
  void logsAreNotCompleteWhileALeftoverChildCanStillWrite() throws Exception {
    startProcess(obj("command", "(sleep 1; echo late) & echo parent", "processId", "parent"));
    assertThat(Await.until(5000, () -> agent.isFinished("parent"))).isTrue();
    TestAgent.Response early = agent.get("/api/process/parent/logs");
    assertThat(early.text("stdout")).isEqualTo("parent\n");
    assertThat(early.body().get("complete").asBoolean()).isFalse();

    assertThat(Await.until(5000, () -> agent.get("/api/process/parent/logs").body().get("complete").asBoolean())).isTrue();
    assertThat(agent.get("/api/process/parent/logs").text("stdout")).isEqualTo("parent\nlate\n");
  }

  @Test
  void aPageOfLogsNeverSplitsACharacterAChildMayStillFinish() throws Exception {
    startProcess(obj("command", "(sleep 1; printf '\\251\\n') & printf 'caf\\303'", "processId", "accent"));
    assertThat(Await.until(5000, () -> agent.isFinished("accent"))).isTrue();
    TestAgent.Response early = agent.get("/api/process/accent/logs");
    assertThat(early.text("stdout")).isEqualTo("caf");
    assertThat(early.body().get("stdoutNextOffset").asLong()).isEqualTo(3);

    assertThat(Await.until(5000, () -> agent.get("/api/process/accent/logs").body().get("complete").asBoolean())).isTrue();
    assertThat(agent.get("/api/process/accent/logs?stdoutSince=3").text("stdout")).isEqualTo("\u00e9\n");
  }

  @Test
  void streamReplaysFromAnOffsetThenFollowsLiveOutputUntilExit() throws Exception {
    startProcess(obj("command", "echo first; sleep 0.5; echo second; sleep 0.3; exit 3", "processId", "live"));
    assertThat(Await.until(5000, () -> agent.processInfo("live").get("stdoutBytes").asLong() == 6)).isTrue();
    try (SseReader sse = agent.stream("/api/process/live/stream?stdoutSince=2", null)) {
      List<JsonNode> events = sse.rest();
      assertThat(events.get(0).get("type").asText()).isEqualTo("process_info");
      assertThat(events.get(0).get("processId").asText()).isEqualTo("live");
      StringBuilder out = new StringBuilder();
      for (JsonNode e : events) {
        if (e.get("type").asText().equals("stdout")) {
          out.append(e.get("data").asText());
        }
      }
      assertThat(out.toString()).isEqualTo("rst\nsecond\n");
      JsonNode exit = events.get(events.size() - 1);
      assertThat(exit.get("type").asText()).isEqualTo("exit");
      assertThat(exit.get("exitCode").asInt()).isEqualTo(3);
      assertThat(exit.get("status").asText()).isEqualTo("failed");
      assertThat(exit.get("data").asText()).contains("3");
    }
  }

  @Test
  void streamOfAFinishedProcessReplaysEverythingThenExit() throws Exception {
    startProcess(obj("command", "printf abc; printf xyz >&2", "processId", "quick"));
    assertThat(Await.until(5000, () -> agent.isFinished("quick"))).isTrue();
    try (SseReader sse = agent.stream("/api/process/quick/stream?since=1", null)) {
      List<JsonNode> events = sse.rest();
      assertThat(events).extracting(e -> e.get("type").asText())
          .containsExactly("process_info", "stdout", "stderr", "exit");
      assertThat(events.get(1).get("data").asText()).isEqualTo("bc");
      assertThat(events.get(1).get("offset").asLong()).isEqualTo(1);
      assertThat(events.get(2).get("data").asText()).isEqualTo("yz");
    }
  }

  @Test
  void aSlowStreamReaderNeverStallsTheProcessAndIsToldWhatItMissed() throws Exception {
    // 64 MB of output against a 64 KiB window: the process must finish while the reader sleeps.
    // (More than loopback's socket buffers can hold: with tcp_rmem up to 32 MiB, 1 MB could all
    // sit in them, and the reader then missed nothing.)
    startProcess(obj("command", "head -c 64000000 /dev/zero | tr '\\0' x", "processId", "flood"));
    try (SseReader sse = agent.stream("/api/process/flood/stream", null)) {
      assertThat(sse.next().get("type").asText()).isEqualTo("process_info");
      assertThat(Await.until(5000, () -> agent.isFinished("flood")))
          .as("the process finishes although its only reader is not reading").isTrue();
      long delivered = 0;
      long dropped = 0;
      JsonNode last = null;
      for (JsonNode e = sse.next(); e != null; e = sse.next()) {
        switch (e.get("type").asText()) {
          case "stdout":
            assertThat(e.get("offset").asLong()).isEqualTo(delivered + dropped);
            delivered += e.get("bytes").asLong();
            break;
          case "truncated":
            dropped += e.get("droppedBytes").asLong();
            assertThat(e.get("stream").asText()).isEqualTo("stdout");
            break;
          default:
            last = e;
        }
      }
      System.out.printf("[it] slow stream reader: %d bytes delivered, %d dropped%n", delivered, dropped);
      assertThat(dropped).as("bytes the reader was told it missed (truncated events)").isPositive();
      assertThat(delivered + dropped).isEqualTo(64_000_000);
      assertThat(last.get("type").asText()).isEqualTo("exit");
    }
    TestAgent.Response logs = agent.get("/api/process/flood/logs");
    assertThat(logs.body().get("truncated").asBoolean()).isTrue();
    assertThat(logs.text("stdout")).hasSize(64 * 1024);
    assertThat(logs.body().get("stdoutOffset").asLong()).isEqualTo(64_000_000 - 64 * 1024);
  }

  @Test
  void stdinPipeFeedsTheProcess() throws Exception {
    startProcess(obj("command", "tr a-z A-Z", "processId", "upper", "stdin", "pipe"));
    TestAgent.Response w = agent.post("/api/process/upper/stdin", obj("data", "hello "));
    assertThat(w.status()).isEqualTo(200);
    assertThat(w.body().get("bytesWritten").asInt()).isEqualTo(6);
    agent.post("/api/process/upper/stdin", obj("data", Base64.getEncoder().encodeToString("world".getBytes()), "encoding", "base64", "eof", true));

    assertThat(Await.until(5000, () -> agent.isFinished("upper"))).isTrue();
    assertThat(agent.get("/api/process/upper/logs").text("stdout")).isEqualTo("HELLO WORLD");
    TestAgent.Response late = agent.post("/api/process/upper/stdin", obj("data", "x"));
    assertThat(late.status()).isEqualTo(409);
    assertThat(late.text("code")).isEqualTo("PROCESS_NOT_RUNNING");
  }

  @Test
  void stdinIsRefusedForAProcessWithoutAPipe() {
    startProcess(obj("command", "sleep 30", "processId", "nopipe"));
    TestAgent.Response r = agent.post("/api/process/nopipe/stdin", obj("data", "x"));
    assertThat(r.status()).isEqualTo(400);
    assertThat(r.text("message")).contains("stdin");
  }

  @Test
  void cleanupDropsOnlyFinishedProcesses() throws Exception {
    startProcess(obj("command", "true", "processId", "done1"));
    startProcess(obj("command", "sleep 30", "processId", "busy"));
    assertThat(Await.until(5000, () -> agent.isFinished("done1"))).isTrue();

    TestAgent.Response r = agent.post("/api/process/cleanup", "");
    assertThat(r.body().get("cleanedCount").asInt()).isEqualTo(1);
    assertThat(agent.get("/api/process/done1").status()).isEqualTo(404);
    assertThat(agent.get("/api/process/busy").status()).isEqualTo(200);
  }

  @Test
  void autoCleanupDropsTheRecordAfterExit() throws Exception {
    startProcess(obj("command", "true", "processId", "ephemeral", "autoCleanup", true));
    assertThat(Await.until(5000, () -> agent.get("/api/process/ephemeral").status() == 404)).isTrue();
  }

  @Test
  void base64LogsAndStreamsCarryRawBytes() throws Exception {
    startProcess(obj("command", "printf '\\377\\000\\342'", "processId", "binary", "encoding", "base64"));
    assertThat(Await.until(5000, () -> agent.isFinished("binary"))).isTrue();
    assertThat(Base64.getDecoder().decode(agent.get("/api/process/binary/logs").text("stdout")))
        .containsExactly(0xFF, 0x00, 0xE2);
    List<Byte> streamed = new ArrayList<>();
    try (SseReader sse = agent.stream("/api/process/binary/stream", null)) {
      for (JsonNode e : sse.rest()) {
        if (e.get("type").asText().equals("stdout")) {
          for (byte b : Base64.getDecoder().decode(e.get("data").asText())) {
            streamed.add(b);
          }
        }
      }
    }
    assertThat(streamed).containsExactly((byte) 0xFF, (byte) 0x00, (byte) 0xE2);
    // The text view of the same bytes replaces what is not UTF-8.
    assertThat(agent.get("/api/process/binary/logs?encoding=utf-8").text("stdout")).isEqualTo("\uFFFD\u0000\uFFFD");
  }

  @Test
  void processStreamSurvivesIdlePeriodsWithKeepAlives() {
    startProcess(obj("command", "sleep 1; echo awake", "processId", "napper"));
    try (SseReader sse = agent.stream("/api/process/napper/stream", null)) {
      List<JsonNode> events = sse.rest();
      assertThat(events.get(events.size() - 1).get("type").asText()).isEqualTo("exit");
      assertThat(sse.comments).isGreaterThanOrEqualTo(2);
    }
  }

  @Test
  void timeoutOfABackgroundProcessIsEnforcedByTheAgent() throws Exception {
    startProcess(obj("command", "echo begun; sleep 30", "processId", "limited", "timeoutMs", 300));
    assertThat(Await.until(5000, () -> agent.isFinished("limited"))).isTrue();
    JsonNode p = agent.processInfo("limited");
    assertThat(p.get("exitCode").asInt()).isEqualTo(124);
    assertThat(p.get("timedOut").asBoolean()).isTrue();
    assertThat(p.get("status").asText()).isEqualTo("killed");
    assertThat(agent.get("/api/process/limited/logs").text("stdout")).isEqualTo("begun\n");
  }
}
