package dev.sandboxsdk.agent;

import static dev.sandboxsdk.agent.TestAgent.obj;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sandboxsdk.testkit.Await;
import dev.sandboxsdk.testkit.Procs;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** POST /api/execute against the real agent and real processes. */
class ExecIT {
  @RegisterExtension static final TestAgent agent = new TestAgent(b -> { });

  @Test
  void shellCommandReturnsExitCodeAndBothStreams() {
    TestAgent.Response r = agent.post("/api/execute", obj("command", "echo out; echo err >&2; exit 3"));

    assertThat(r.status()).isEqualTo(200);
    JsonNode b = r.body();
    assertThat(b.get("exitCode").asInt()).isEqualTo(3);
    assertThat(b.get("success").asBoolean()).isFalse();
    assertThat(b.get("stdout").asText()).isEqualTo("out\n");
    assertThat(b.get("stderr").asText()).isEqualTo("err\n");
    assertThat(b.get("command").asText()).isEqualTo("echo out; echo err >&2; exit 3");
    assertThat(b.get("timedOut").asBoolean()).isFalse();
    assertThat(b.get("truncated").asBoolean()).isFalse();
    assertThat(b.get("pid").asLong()).isPositive();
    assertThat(b.get("duration").asLong()).isGreaterThanOrEqualTo(0);
    assertThat(b.get("timestamp").asText()).isNotEmpty();
    assertThat(b.has("signal")).isFalse();
  }

  /**
   * Cloudflare's client sends {@code origin} ("user", or "internal" for its Sandbox's own commands) on
   * the three routes that run commands; it is accepted and ignored, and only those two values are.
   */
  @Test
  void cloudflaresOriginTagIsAcceptedOnTheThreeCommandRoutes() {
    TestAgent.Response exec = agent.post("/api/execute", obj("command", "echo tagged", "origin", "internal"));
    assertThat(exec.status()).isEqualTo(200);
    assertThat(exec.text("stdout")).isEqualTo("tagged\n");

    try (SseReader sse = agent.stream("/api/execute/stream", obj("command", "echo streamed", "origin", "user"))) {
      assertThat(sse.status()).isEqualTo(200);
      List<JsonNode> events = sse.rest();
      assertThat(events.get(1).get("data").asText()).isEqualTo("streamed\n");
      assertThat(events.get(events.size() - 1).get("type").asText()).isEqualTo("complete");
    }

    TestAgent.Response start = agent.post("/api/process/start",
        obj("command", "echo started", "processId", "origin-tagged", "origin", "user"));
    assertThat(start.status()).isEqualTo(200);
    assertThat(start.text("processId")).isEqualTo("origin-tagged");

    TestAgent.Response bad = agent.post("/api/execute", obj("command", "echo no", "origin", "system"));
    assertThat(bad.status()).isEqualTo(400);
    assertThat(bad.text("code")).isEqualTo("VALIDATION_FAILED");
    assertThat(bad.body().get("context").get("field").asText()).isEqualTo("origin");
    assertThat(bad.text("message")).isEqualTo("'origin' must be \"user\" or \"internal\", got 'system'");
  }

  @Test
  void argvIsNeverInterpretedByAShell() {
    TestAgent.Response r = agent.post("/api/execute",
        obj("argv", List.of("printf", "%s|", "$HOME", "a b", "; echo injected", "`id`")));

    assertThat(r.body().get("exitCode").asInt()).isZero();
    assertThat(r.text("stdout")).isEqualTo("$HOME|a b|; echo injected|`id`|");
    assertThat(r.text("command")).isEqualTo("printf '%s|' '$HOME' 'a b' '; echo injected' '`id`'");
  }

  @Test
  void envAndCwdApplyToTheCommand() throws Exception {
    Files.createDirectories(agent.workspace.resolve("sub/dir"));
    TestAgent.Response r = agent.post("/api/execute",
        obj("command", "echo \"$GREETING\"; pwd; echo ${HOME:-unset}", "cwd", "sub/dir",
            "env", new java.util.HashMap<>(Map.of("GREETING", "hello there")) {{ put("HOME", null); }}));

    assertThat(r.text("stdout")).isEqualTo("hello there\n" + agent.workspace.resolve("sub/dir") + "\nunset\n");
  }

  @Test
  void defaultWorkingDirectoryIsTheWorkspace() {
    assertThat(agent.post("/api/execute", obj("argv", List.of("pwd"))).text("stdout"))
        .isEqualTo(agent.workspace + "\n");
  }

  @Test
  void stdinIsFedToTheCommand() {
    TestAgent.Response r = agent.post("/api/execute", obj("command", "tr a-z A-Z", "stdin", "hello\nworld"));

    assertThat(r.text("stdout")).isEqualTo("HELLO\nWORLD");
  }

  @Test
  void withoutStdinTheCommandReadsEndOfFileImmediately() {
    TestAgent.Response r = agent.post("/api/execute", obj("command", "cat; echo done", "timeoutMs", 5000));

    assertThat(r.text("stdout")).isEqualTo("done\n");
    assertThat(r.body().get("timedOut").asBoolean()).isFalse();
  }

  @Test
  void outputOverMaxOutputBytesIsCutAndFlagged() {
    TestAgent.Response r = agent.post("/api/execute",
        obj("command", "head -c 100000 /dev/zero | tr '\\0' a; echo tail >&2", "maxOutputBytes", 1000));

    assertThat(r.body().get("exitCode").asInt()).isZero();
    assertThat(r.text("stdout")).hasSize(1000).matches("a+");
    assertThat(r.text("stderr")).isEqualTo("tail\n");
    assertThat(r.body().get("truncated").asBoolean()).isTrue();
  }

  @Test
  void timeoutKillsTheCommandAndKeepsPartialOutput() throws Exception {
    long start = System.nanoTime();
    TestAgent.Response r = agent.post("/api/execute",
        obj("command", "echo partial; echo to-stderr >&2; sleep 30; echo never", "timeoutMs", 300));
    long tookMs = (System.nanoTime() - start) / 1_000_000;

    JsonNode b = r.body();
    assertThat(b.get("exitCode").asInt()).isEqualTo(124);
    assertThat(b.get("timedOut").asBoolean()).isTrue();
    assertThat(b.get("success").asBoolean()).isFalse();
    assertThat(b.get("stdout").asText()).isEqualTo("partial\n");
    assertThat(b.get("stderr").asText()).isEqualTo("to-stderr\n");
    assertThat(tookMs).isLessThan(10_000);
    long pid = b.get("pid").asLong();
    assertThat(Await.until(5000, () -> Procs.groupMembers(pid).isEmpty()))
        .as("the timed-out command's whole process group is gone").isTrue();
  }

  @Test
  void invalidUtf8BecomesReplacementCharacters() {
    TestAgent.Response r = agent.post("/api/execute", obj("command", "printf 'a\\377b\\342\\202'"));

    assertThat(r.text("stdout")).isEqualTo("a\uFFFDb\uFFFD");
  }

  @Test
  void base64EncodingReturnsTheExactBytes() {
    TestAgent.Response r = agent.post("/api/execute",
        obj("command", "printf '\\000\\001\\377\\376'", "encoding", "base64"));

    assertThat(Base64.getDecoder().decode(r.text("stdout"))).containsExactly(0, 1, 0xFF, 0xFE);
    assertThat(r.text("encoding")).isEqualTo("base64");
  }

  @Test
  void aCommandTheShellCannotFindExitsWith127() {
    TestAgent.Response r = agent.post("/api/execute", obj("command", "definitely-not-a-command-xyz"));

    assertThat(r.status()).isEqualTo(200);
    assertThat(r.body().get("exitCode").asInt()).isEqualTo(127);
    assertThat(r.text("stderr")).contains("not found");
  }

  @Test
  void leftoverBackgroundChildDoesNotHoldTheResponse() {
    // The child keeps stdout open; the agent must answer once the command itself exits.
    long start = System.nanoTime();
    TestAgent.Response r = agent.post("/api/execute", obj("command", "sleep 5 & echo started"));

    assertThat(r.text("stdout")).isEqualTo("started\n");
    assertThat((System.nanoTime() - start) / 1_000_000).isLessThan(3000);
  }

  @Test
  void aBackgroundChildThatWritesAfterTheExecReturnedIsNotKilledBySigpipe() throws Exception {
    // The JDK closes its own pipe ends when the direct child exits; a child still writing would
    // die of SIGPIPE. Run it several times: the window used to be a race.
    for (int i = 0; i < 5; i++) {
      java.nio.file.Path marker = agent.workspace.resolve("survived-" + i);
      TestAgent.Response r = agent.post("/api/execute",
          obj("command", "(sleep 0.3; echo late; echo late >&2; touch " + marker + ") & echo now"));
      assertThat(r.text("stdout")).isEqualTo("now\n");
      assertThat(Await.until(5000, () -> Files.exists(marker))).as("the child lived to write and finish").isTrue();
    }
  }

  @Test
  void theAgentTokenIsNotInTheCommandsEnvironment() {
    TestAgent.Response r = agent.post("/api/execute",
        obj("command", "echo ${SANDBOX_AGENT_TOKEN:-unset}", "env", Map.of()));

    assertThat(r.text("stdout")).isEqualTo("unset\n");
  }

  @Test
  void anArgumentTooLargeForTheKernelIsAClientError() {
    TestAgent.Response r = agent.post("/api/execute", obj("argv", List.of("echo", "x".repeat(200_000))));

    assertThat(r.status()).isEqualTo(400);
    assertThat(r.text("code")).isEqualTo("INVALID_COMMAND");
    assertThat(r.text("message")).contains("stdin").doesNotContain("setsid");
    assertThat(r.body().get("context").get("field").asText()).isEqualTo("argv");

    TestAgent.Response env = agent.post("/api/execute", obj("command", "true", "env", Map.of("BIG", "y".repeat(200_000))));
    assertThat(env.status()).isEqualTo(400);
    assertThat(env.body().get("context").get("field").asText()).isEqualTo("env");
  }

  @Test
  void aLongExecSendsWhitespaceHeartbeatsBeforeItsJson() {
    TestAgent.Response r = agent.post("/api/execute", obj("command", "sleep 2.5; echo done"));

    assertThat(r.status()).isEqualTo(200);
    assertThat(r.raw().body()).startsWith(" ");
    assertThat(r.text("stdout")).isEqualTo("done\n");
  }

  @Test
  void aClientThatHangsUpOnAnExecGetsItsCommandKilled() throws Exception {
    String marker = "hangup-" + System.nanoTime();
    String body = obj("command", "sleep 300; echo " + marker);
    try (java.net.Socket socket = new java.net.Socket("127.0.0.1", agent.server.port())) {
      byte[] bytes = body.getBytes(java.nio.charset.StandardCharsets.UTF_8);
      String head = "POST /api/execute HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + TestAgent.TOKEN
          + "\r\nContent-Type: application/json\r\nContent-Length: " + bytes.length + "\r\n\r\n";
      socket.getOutputStream().write(head.getBytes(java.nio.charset.StandardCharsets.US_ASCII));
      socket.getOutputStream().write(bytes);
      socket.getOutputStream().flush();
      assertThat(Await.until(5000, () -> !pidsRunning(marker).isEmpty())).isTrue();
    }
    assertThat(Await.until(15_000, () -> pidsRunning(marker).isEmpty()))
        .as("the command of a call whose client went away is killed").isTrue();
  }

  /** Pids whose command line contains {@code marker}. */
  static List<Long> pidsRunning(String marker) {
    List<Long> pids = new ArrayList<>();
    try (var dirs = Files.newDirectoryStream(java.nio.file.Path.of("/proc"), "[0-9]*")) {
      for (var dir : dirs) {
        try {
          String cmdline = new String(Files.readAllBytes(dir.resolve("cmdline")), java.nio.charset.StandardCharsets.UTF_8);
          if (cmdline.contains(marker) && Procs.alive(Long.parseLong(dir.getFileName().toString()))) {
            pids.add(Long.parseLong(dir.getFileName().toString()));
          }
        } catch (java.io.IOException gone) {
          // exited while we looked
        }
      }
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    return pids;
  }

  @Test
  void sixtyFourConcurrentExecsAllSucceedWithTheirOwnOutput() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(64);
    try {
      List<Future<TestAgent.Response>> results = new ArrayList<>();
      for (int i = 0; i < 64; i++) {
        String cmd = "sleep 0.2; echo run-" + i;
        results.add(pool.submit(() -> agent.post("/api/execute", obj("command", cmd))));
      }
      for (int i = 0; i < 64; i++) {
        TestAgent.Response r = results.get(i).get();
        assertThat(r.status()).isEqualTo(200);
        assertThat(r.text("stdout")).isEqualTo("run-" + i + "\n");
      }
    } finally {
      pool.shutdownNow();
    }
  }
}
