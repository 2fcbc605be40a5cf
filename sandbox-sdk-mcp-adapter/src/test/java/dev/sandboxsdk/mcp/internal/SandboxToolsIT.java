package dev.sandboxsdk.mcp.internal;

import static dev.sandboxsdk.mcp.internal.McpTestClient.args;
import static dev.sandboxsdk.mcp.internal.McpTestClient.sc;
import static dev.sandboxsdk.mcp.internal.McpTestClient.text;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/** Every tool against real local sandboxes: real agents, real processes. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SandboxToolsIT {
  private McpTestClient mcp;

  @BeforeAll
  void start() {
    mcp = McpTestClient.initialized(AdapterConfig.defaults());
  }

  @AfterAll
  void stop() {
    mcp.close();
  }

  // ---- exec

  @Test
  void execRunsAShellCommandAndReturnsItsOutput() {
    JsonNode r = mcp.call("exec", args("command", "echo hello; echo oops >&2"));
    assertThat(r.has("isError")).isFalse();
    assertThat(sc(r).get("exitCode").asInt()).isZero();
    assertThat(sc(r).get("success").asBoolean()).isTrue();
    assertThat(sc(r).get("stdout").asText()).isEqualTo("hello\n");
    assertThat(sc(r).get("stderr").asText()).isEqualTo("oops\n");
    assertThat(sc(r).get("pid").asLong()).isPositive();
    assertThat(sc(r).get("sandboxId").asText()).isEqualTo("default");
  }

  @Test
  void aNullArgumentMeansItsDefault() {
    ObjectNode a = args("command", "pwd");
    a.putNull("cwd");
    a.putNull("timeoutSeconds");
    a.putNull("argv");
    JsonNode r = mcp.call("exec", a);
    assertThat(r.has("isError")).as("%s", r).isFalse();
    assertThat(sc(r).get("stdout").asText()).contains("sandbox-workspace");
  }

  @Test
  void execRunsArgvWithoutAShell() {
    JsonNode r = mcp.call("exec", args("argv", List.of("printf", "%s|", "a b", "$HOME", ";")));
    assertThat(sc(r).get("stdout").asText()).isEqualTo("a b|$HOME|;|");
  }

  @Test
  void aFailedCommandIsAnErrorResultThatKeepsItsOutput() {
    JsonNode r = mcp.call("exec", args("command", "echo partial; echo broken >&2; exit 3"));
    assertThat(r.get("isError").asBoolean()).isTrue();
    assertThat(sc(r).get("exitCode").asInt()).isEqualTo(3);
    assertThat(sc(r).get("stdout").asText()).isEqualTo("partial\n");
    assertThat(sc(r).get("note").asText()).contains("exit code 3");
    JsonNode missing = mcp.call("exec", args("command", "no-such-program-xyz"));
    assertThat(sc(missing).get("exitCode").asInt()).isEqualTo(127);
    assertThat(sc(missing).get("note").asText()).contains("command not found");
  }

  @Test
  void execTakesStdinEnvAndCwd() {
    mcp.call("exec", args("command", "mkdir -p sub && echo inside > sub/f.txt"));
    JsonNode r = mcp.call("exec", args("command", "cat; echo \"$GREETING\"; cat f.txt", "stdin", "from stdin\n",
        "env", Map.of("GREETING", "hi there"), "cwd", "sub"));
    assertThat(sc(r).get("stdout").asText()).isEqualTo("from stdin\nhi there\ninside\n");
  }

  @Test
  void execTimeoutKillsTheCommandAndSaysWhatToDo() {
    long t0 = System.nanoTime();
    JsonNode r = mcp.call("exec", args("command", "echo before; sleep 30", "timeoutSeconds", 0.5));
    assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(10));
    assertThat(r.get("isError").asBoolean()).isTrue();
    assertThat(sc(r).get("timedOut").asBoolean()).isTrue();
    assertThat(sc(r).get("exitCode").asInt()).isEqualTo(124);
    assertThat(sc(r).get("stdout").asText()).isEqualTo("before\n");
    assertThat(sc(r).get("note").asText()).contains("timeoutSeconds").contains("startProcess");
  }

  @Test
  void outputOverTheCapIsCutWithTheOffsetToReadOnFrom() {
    JsonNode r = mcp.call("exec", args("command", "seq 1 20000", "maxOutputBytes", 1000));
    JsonNode s = sc(r);
    StringBuilder expected = new StringBuilder();
    for (int i = 1; expected.length() < 1000; i++) {
      expected.append(i).append('\n');
    }
    assertThat(s.get("stdout").asText()).isEqualTo(expected.substring(0, 1000));
    assertThat(s.get("truncated").asBoolean()).isTrue();
    assertThat(s.get("stdoutBytes").asLong()).isEqualTo(108_894);
    assertThat(s.get("note").asText()).contains("first 1000 of 108894 bytes").contains("tail -c +1001");
  }

  @Test
  void aRequestedCapAboveTheServersIsCappedToIt() {
    try (McpTestClient small = McpTestClient.initialized(AdapterConfig.defaults().withMaxOutputBytes(300))) {
      JsonNode r = small.call("exec", args("command", "head -c 5000 /dev/zero | tr '\\0' x", "maxOutputBytes", 100_000));
      assertThat(sc(r).get("stdout").asText()).hasSize(300);
      small.call("destroy", args("force", true));
    }
  }

  @Test
  void commandAndArgvTogetherOrNeitherIsAnErrorResult() {
    JsonNode both = mcp.call("exec", args("command", "ls", "argv", List.of("ls")));
    assertThat(both.get("isError").asBoolean()).isTrue();
    assertThat(text(both)).contains("not both");
    JsonNode neither = mcp.call("exec", args());
    assertThat(neither.get("isError").asBoolean()).isTrue();
    assertThat(text(neither)).contains("command (a shell string");
  }

  @Test
  void progressStreamsOutputChunksWithIncreasingProgress() {
    JsonNode r = mcp.call("exec", args("command", "for i in 1 2 3; do echo line$i; sleep 0.1; done; echo err >&2"),
        "tok-1");
    assertThat(sc(r).get("stdout").asText()).isEqualTo("line1\nline2\nline3\n");
    List<JsonNode> progress = mcp.progress("tok-1");
    assertThat(progress).hasSizeGreaterThanOrEqualTo(2);
    StringBuilder out = new StringBuilder();
    long last = 0;
    for (JsonNode p : progress) {
      assertThat(p.get("progress").asLong()).isGreaterThan(last);
      last = p.get("progress").asLong();
      if (p.path("_meta").path("dev.sandboxsdk/stream").asText("").equals("stderr")) {
        assertThat(p.get("message").asText()).isEqualTo("err\n");
      } else {
        out.append(p.get("message").asText());
      }
    }
    assertThat(out.toString()).isEqualTo("line1\nline2\nline3\n");
  }

  @Test
  void callsBeyondTheConcurrencyCapAreRefusedWithABusyErrorUntilOneEnds() throws Exception {
    AdapterConfig two = AdapterConfig.parse(new String[] {"--max-concurrent-calls", "2"}, java.util.Map.of());
    try (McpTestClient capped = McpTestClient.initialized(two)) {
      List<CompletableFuture<ObjectNode>> running = new java.util.ArrayList<>();
      for (int i = 0; i < 2; i++) {
        running.add(capped.sendAsync(McpTestClient.requestMessage("run-" + i, "tools/call", McpTestClient.callParams(
            "exec", args("command", "echo started; sleep 2"), "run-tok-" + i))));
      }
      for (int i = 0; i < 2; i++) {
        String token = "run-tok-" + i;
        await("call " + token + " running", 20, () -> !capped.progress(token).isEmpty());
      }

      JsonNode refused = capped.call("exec", args("command", "echo third"));

      assertThat(refused.path("isError").asBoolean()).isTrue();
      assertThat(text(refused)).contains("busy", "2 tool calls are already running");
      for (CompletableFuture<ObjectNode> r : running) {
        assertThat(r.get(20, TimeUnit.SECONDS).path("result").path("structuredContent").path("stdout").asText())
            .isEqualTo("started\n");
      }
      assertThat(sc(capped.call("exec", args("command", "echo fourth"))).path("stdout").asText())
          .as("accepted again once they ended").isEqualTo("fourth\n");
    }
  }

  @Test
  void concurrentCallsKeepTheirOwnOutputAndProgress() throws Exception {
    List<CompletableFuture<ObjectNode>> answers = new java.util.ArrayList<>();
    for (int i = 0; i < 8; i++) {
      answers.add(mcp.sendAsync(McpTestClient.requestMessage("par-" + i, "tools/call", McpTestClient.callParams("exec",
          args("command", "for j in 1 2 3; do echo call" + i + "-$j; sleep 0.4; done"), "par-tok-" + i))));
    }
    long t0 = System.nanoTime();
    for (int i = 0; i < 8; i++) {
      ObjectNode response = answers.get(i).get(20, TimeUnit.SECONDS);
      assertThat(response.get("id").asText()).isEqualTo("par-" + i);
      String expected = "call" + i + "-1\ncall" + i + "-2\ncall" + i + "-3\n";
      assertThat(response.get("result").get("structuredContent").get("stdout").asText()).isEqualTo(expected);
      StringBuilder streamed = new StringBuilder();
      mcp.progress("par-tok-" + i).forEach(p -> streamed.append(p.get("message").asText()));
      assertThat(streamed.toString()).isEqualTo(expected);
    }
    assertThat(Duration.ofNanos(System.nanoTime() - t0)).as("the calls ran side by side (one after another: 9.6 s)")
        .isLessThan(Duration.ofSeconds(5));
  }

  @Test
  void progressTextStopsAfterOneMebibyteButTheCountGoesOnToTheTotal() {
    JsonNode r = mcp.call("exec", args("command", "head -c 3000000 /dev/zero | tr '\\0' a"), "big");
    assertThat(sc(r).get("stdoutBytes").asLong()).isEqualTo(3_000_000);
    List<JsonNode> progress = mcp.progress("big");
    long text = progress.stream().filter(p -> p.has("message")).mapToLong(p -> p.get("message").asText().length()).sum();
    assertThat(text).isBetween(SandboxTools.PROGRESS_TEXT_LIMIT, SandboxTools.PROGRESS_TEXT_LIMIT + 200_000);
    assertThat(progress.get(progress.size() - 1).get("progress").asLong()).isEqualTo(3_000_000);
  }

  @Test
  void noProgressTokenNoProgress() {
    int before = mcp.notifications.size();
    mcp.call("exec", args("command", "echo quiet"));
    assertThat(mcp.notifications.subList(before, mcp.notifications.size()))
        .noneMatch(n -> n.get("method").asText().equals("notifications/progress"));
  }

  @Test
  void cancellingAnExecKillsItsProcessAndSendsNoResponse() throws Exception {
    // Looked for from the host by its unique argument: the default local sandbox is isolated, so
    // a pid the command prints is one of its own PID namespace, and a probe run as another command
    // would not see it.
    String seconds = "600." + (System.nanoTime() % 1_000_000);
    ObjectNode call = McpTestClient.requestMessage("cancel-me", "tools/call", McpTestClient.callParams("exec",
        args("command", "echo started; exec sleep " + seconds), "cancel-tok"));
    CompletableFuture<ObjectNode> answer = mcp.sendAsync(call);
    await("the command started", 20,
        () -> mcp.progress("cancel-tok").stream().anyMatch(p -> p.get("message").asText().contains("started")));
    await("sleep " + seconds + " runs", 20, () -> hostSleepRuns(seconds));
    String pid = "sleep " + seconds;
    ObjectNode cancel = Json.object().put("jsonrpc", "2.0").put("method", "notifications/cancelled");
    cancel.putObject("params").put("requestId", "cancel-me").put("reason", "test");
    long t0 = System.nanoTime();
    mcp.send(cancel);
    assertThat(answer.get(20, TimeUnit.SECONDS)).as("no response to a cancelled request").isNull();
    await("process " + pid + " is gone", 15, () -> !hostSleepRuns(seconds));
    long ms = (System.nanoTime() - t0) / 1_000_000;
    System.err.printf("cancelled exec: process gone %d ms after notifications/cancelled%n", ms);
    // Waiting for the agent to notice the closed stream would take at least one 2 s keep-alive.
    assertThat(ms).as("killed at once, not when the agent noticed the hang-up").isLessThan(1_800);
  }

  @Test
  void execAndRunCodeSkipTheWorkerOnlyWhenTheirSandboxIsReadyAndKeepCapsAndCancelThere() throws Exception {
    String secret = "sk-inline-0123456789abcdef";
    AdapterConfig config = AdapterConfig.parse(new String[] {"--pass-env", "API_KEY"}, Map.of("API_KEY", secret));
    try (McpTestClient own = McpTestClient.initialized(config)) {
      SandboxTools tools = own.server.tools();
      ObjectNode trueArgs = args("argv", List.of("true"));
      assertThat(tools.startsWithoutWaiting("exec", trueArgs)).as("no sandbox yet: starting it waits").isFalse();
      assertThat(sc(own.call("exec", trueArgs)).get("exitCode").asInt()).isZero(); // on a worker: starts it
      assertThat(tools.startsWithoutWaiting("exec", trueArgs)).isTrue();
      assertThat(tools.startsWithoutWaiting("runCode", args("language", "bash", "code", "true"))).isTrue();
      assertThat(tools.startsWithoutWaiting("startProcess", args("command", "true"))).as("a blocking tool").isFalse();
      assertThat(tools.startsWithoutWaiting("exec", args("argv", List.of("true"), "sandboxId", "nope"))).isFalse();

      // On the caller's thread: caps, truncation notes and redaction as on a worker.
      JsonNode capped = own.call("exec", args("command", "echo \"$API_KEY\"; seq 1 20000", "maxOutputBytes", 1000));
      assertThat(sc(capped).get("stdout").asText()).startsWith("[REDACTED:API_KEY]\n1\n2\n");
      assertThat(capped.toString()).doesNotContain(secret);
      assertThat(sc(capped).get("truncated").asBoolean()).isTrue();
      assertThat(sc(capped).get("stdoutBytes").asLong()).isEqualTo(secret.length() + 1 + 108_894);
      assertThat(sc(capped).get("note").asText()).contains("first 1000 of");
      JsonNode code = own.call("runCode", args("language", "bash", "code", "echo $((6 * 7))"));
      assertThat(sc(code).get("stdout").asText()).isEqualTo("42\n");

      // A call without a progressToken, cancelled on the caller's thread path: no answer, the command is killed.
      String seconds = "700." + (System.nanoTime() % 1_000_000);
      assertThat(tools.startsWithoutWaiting("exec", args("command", "sleep 1"))).isTrue();
      CompletableFuture<ObjectNode> answer = own.sendAsync(McpTestClient.requestMessage("inline-cancel", "tools/call",
          McpTestClient.callParams("exec", args("command", "exec sleep " + seconds), null)));
      await("sleep " + seconds + " runs", 20, () -> hostSleepRuns(seconds));
      ObjectNode cancel = Json.object().put("jsonrpc", "2.0").put("method", "notifications/cancelled");
      cancel.putObject("params").put("requestId", "inline-cancel");
      own.send(cancel);
      assertThat(answer.get(20, TimeUnit.SECONDS)).as("no response to a cancelled request").isNull();
      await("sleep " + seconds + " is gone", 15, () -> !hostSleepRuns(seconds));

      // A sandbox whose agent has gone must be noticed (and closed) by a worker, not the caller's thread.
      long agent = own.server.sandboxes().list().get(0).agentPid();
      ProcessHandle.of(agent).ifPresent(ProcessHandle::destroyForcibly);
      // The agent's exit is noticed through the JDK's wait for it (no /proc read per call): soon, not at once.
      await("the server noticed the agent's exit", 10, () -> !tools.startsWithoutWaiting("exec", trueArgs));
      assertThat(sc(own.call("exec", args("command", "echo again"))).get("stdout").asText()).isEqualTo("again\n");
    }
  }

  @Test
  void aPersistentLocalSandboxNotSeenLatelyIsCheckedWithItsProviderOnAWorker(@TempDir Path state) {
    AdapterConfig config = AdapterConfig.parse(new String[] {"--state-dir", state.toString()}, Map.of());
    try (McpTestClient own = McpTestClient.initialized(config)) {
      SandboxTools tools = own.server.tools();
      ObjectNode inKeep = args("argv", List.of("true"), "sandboxId", "keep");
      own.call("getSandbox", args("sandboxId", "keep", "persistent", true));
      assertThat(sc(own.call("exec", inKeep)).get("exitCode").asInt()).isZero();
      assertThat(tools.startsWithoutWaiting("exec", inKeep)).as("seen just now").isTrue();

      Sandboxes.Entry keep = own.server.sandboxes().list().stream().filter(e -> e.id().equals("keep")).findFirst()
          .orElseThrow();
      keep.seenAt().set(System.nanoTime() - 2 * Sandboxes.SEEN_FOR.toNanos());
      assertThat(tools.startsWithoutWaiting("exec", inKeep)).as("its LocalProvider is asked first").isFalse();
      assertThat(sc(own.call("exec", inKeep)).get("exitCode").asInt()).isZero();
      assertThat(tools.startsWithoutWaiting("exec", inKeep)).as("seen again").isTrue();
      own.call("destroy", args("sandboxId", "keep"));
    }
  }

  // ---- runCode

  @Test
  void runCodeFeedsPythonAndBashOnStdin() {
    JsonNode py = mcp.call("runCode", args("language", "python", "code", "import sys\nprint(sum(range(10)))\n"));
    assertThat(sc(py).get("stdout").asText()).isEqualTo("45\n");
    assertThat(sc(py).get("command").asText()).isEqualTo("python code on stdin");
    JsonNode sh = mcp.call("runCode", args("language", "bash", "code", "x=4; echo $((x * 2))"));
    assertThat(sc(sh).get("stdout").asText()).isEqualTo("8\n");
    JsonNode failing = mcp.call("runCode", args("language", "python", "code", "raise SystemExit(7)"));
    assertThat(failing.get("isError").asBoolean()).isTrue();
    assertThat(sc(failing).get("exitCode").asInt()).isEqualTo(7);
  }

  @Test
  void runCodeRunsJavaScriptWithNodeOrSaysItIsMissing() {
    boolean hasNode = sc(mcp.call("exec", args("command", "command -v node"))).get("exitCode").asInt() == 0;
    JsonNode r = mcp.call("runCode", args("language", "javascript", "code", "console.log([1, 2, 3].map(x => x * 2).join(','))"));
    if (hasNode) {
      assertThat(sc(r).get("stdout").asText()).isEqualTo("2,4,6\n");
    } else {
      assertThat(text(r)).contains("interpreter 'node' is not installed").contains("nodejs");
    }
  }

  @Test
  void aMissingInterpreterIsAClearError() {
    JsonNode r = mcp.call("runCode", args("language", "python", "code", "print(1)", "env", Map.of("PATH", "/nowhere")));
    assertThat(r.get("isError").asBoolean()).isTrue();
    assertThat(r.has("structuredContent")).isFalse();
    assertThat(text(r)).contains("interpreter 'python3' is not installed").contains("another language");
  }

  @Test
  void runCodeRejectsAnUnknownLanguage() {
    JsonNode r = mcp.call("runCode", args("language", "cobol", "code", "DISPLAY 'HI'."));
    assertThat(r.get("isError").asBoolean()).isTrue();
    assertThat(text(r)).contains("must be one of python, javascript, typescript, bash");
  }

  // ---- background processes

  @Test
  void startedProcessesAreListedReadAndKilled() throws Exception {
    JsonNode started = mcp.call("startProcess", args("command", "echo ready; exec sleep 300", "processId", "sleeper"));
    assertThat(sc(started).get("process").get("id").asText()).isEqualTo("sleeper");
    assertThat(sc(started).get("process").get("status").asText()).isIn("starting", "running");
    JsonNode listed = mcp.call("listProcesses", args("status", "running"));
    assertThat(listed.get("structuredContent").get("processes").findValuesAsText("id")).contains("sleeper");
    JsonNode got = mcp.call("getProcess", args("processId", "sleeper"));
    assertThat(sc(got).get("process").get("command").asText()).contains("sleep 300");
    awaitOutput("sleeper", "ready\n");
    JsonNode killed = mcp.call("killProcess", args("processId", "sleeper"));
    assertThat(sc(killed).get("exited").asBoolean()).isTrue();
    assertThat(sc(killed).get("process").get("status").asText()).isEqualTo("killed");
    assertThat(sc(killed).get("signal").asText()).isEqualTo("SIGTERM");
    JsonNode again = mcp.call("killProcess", args("processId", "sleeper", "signal", "SIGKILL"));
    assertThat(again.has("isError")).as("killing an ended process is fine").isFalse();
  }

  private void awaitOutput(String id, String expected) {
    await("output of " + id, 10,
        () -> sc(mcp.call("getProcessLogs", args("processId", id))).get("stdout").asText().equals(expected));
  }

  /** Polls {@code done} every 50 ms until it holds; fails naming {@code what} after {@code seconds}. */
  private static void await(String what, int seconds, java.util.function.BooleanSupplier done) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    while (!done.getAsBoolean()) {
      assertThat(System.nanoTime()).as("waited %d s for: %s", seconds, what).isLessThan(deadline);
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError(e);
      }
    }
  }

  /** Whether this machine runs {@code sleep SECONDS}, in any sandbox or none. */
  private static boolean hostSleepRuns(String seconds) {
    return ProcessHandle.allProcesses().anyMatch(p -> p.isAlive()
        && p.info().command().map(c -> c.endsWith("/sleep")).orElse(false)
        && p.info().arguments().map(a -> a.length == 1 && a[0].equals(seconds)).orElse(false));
  }

  @Test
  void anUnknownProcessIsAnErrorResultThatSaysWhereToLook() {
    for (String tool : List.of("getProcess", "killProcess", "getProcessLogs", "streamProcessLogs")) {
      JsonNode r = mcp.call(tool, args("processId", "ghost"));
      assertThat(r.get("isError").asBoolean()).as(tool).isTrue();
      assertThat(text(r)).as(tool).contains("ghost").contains("listProcesses");
    }
  }

  @Test
  void aTakenProcessIdIsAnErrorResult() {
    mcp.call("startProcess", args("command", "sleep 5", "processId", "dup"));
    JsonNode r = mcp.call("startProcess", args("command", "sleep 5", "processId", "dup"));
    assertThat(r.get("isError").asBoolean()).isTrue();
    assertThat(text(r)).contains("dup");
    mcp.call("killProcess", args("processId", "dup", "signal", "SIGKILL"));
  }

  @Test
  void getProcessLogsPagesThroughOutputWithOffsets() {
    mcp.call("startProcess", args("command", "seq 1 3000", "processId", "pager"));
    awaitExit("pager");
    JsonNode first = sc(mcp.call("getProcessLogs", args("processId", "pager", "maxBytes", 5000)));
    assertThat(first.get("stdout").asText()).hasSize(5000);
    assertThat(first.get("more").asBoolean()).isTrue();
    assertThat(first.get("complete").asBoolean()).isFalse();
    assertThat(first.get("note").asText()).contains("stdoutOffset 5000");
    StringBuilder all = new StringBuilder(first.get("stdout").asText());
    long next = first.get("stdoutNextOffset").asLong();
    JsonNode page;
    do {
      page = sc(mcp.call("getProcessLogs", args("processId", "pager", "stdoutOffset", next, "maxBytes", 5000)));
      assertThat(page.get("stdoutOffset").asLong()).isEqualTo(next);
      all.append(page.get("stdout").asText());
      next = page.get("stdoutNextOffset").asLong();
    } while (page.get("more").asBoolean());
    assertThat(page.get("complete").asBoolean()).isTrue();
    StringBuilder expected = new StringBuilder();
    for (int i = 1; i <= 3000; i++) {
      expected.append(i).append('\n');
    }
    assertThat(all.toString()).isEqualTo(expected.toString());
  }

  private void awaitExit(String id) {
    await(id + " ended", 10, () -> !Set.of("starting", "running")
        .contains(sc(mcp.call("getProcess", args("processId", id))).get("process").get("status").asText()));
  }

  @Test
  void streamProcessLogsFollowsUntilExitWithProgress() {
    mcp.call("startProcess", args("command", "for i in 1 2 3; do echo tick$i; sleep 0.2; done; exit 4",
        "processId", "ticker"));
    JsonNode r = mcp.call("streamProcessLogs", args("processId", "ticker", "timeoutSeconds", 20), "follow");
    JsonNode s = sc(r);
    assertThat(s.get("stdout").asText()).isEqualTo("tick1\ntick2\ntick3\n");
    assertThat(s.get("exited").asBoolean()).isTrue();
    assertThat(s.get("exitCode").asInt()).isEqualTo(4);
    assertThat(s.get("status").asText()).isEqualTo("failed");
    assertThat(s.get("timeLimitReached").asBoolean()).isFalse();
    assertThat(s.get("stdoutNextOffset").asLong()).isEqualTo(18);
    StringBuilder streamed = new StringBuilder();
    mcp.progress("follow").forEach(p -> streamed.append(p.get("message").asText()));
    assertThat(streamed.toString()).isEqualTo("tick1\ntick2\ntick3\n");
  }

  @Test
  void streamProcessLogsStopsAtItsTimeLimitAndSaysWhereToGoOn() {
    mcp.call("startProcess", args("command", "echo one; sleep 300", "processId", "slow"));
    long t0 = System.nanoTime();
    JsonNode s = sc(mcp.call("streamProcessLogs", args("processId", "slow", "timeoutSeconds", 1)));
    assertThat(Duration.ofNanos(System.nanoTime() - t0)).isBetween(Duration.ofMillis(900), Duration.ofSeconds(8));
    assertThat(s.get("timeLimitReached").asBoolean()).isTrue();
    assertThat(s.get("exited").asBoolean()).isFalse();
    assertThat(s.get("exitCode").isNull()).isTrue();
    assertThat(s.get("stdout").asText()).isEqualTo("one\n");
    assertThat(s.get("note").asText()).contains("still running").contains("stdoutOffset 4");
    JsonNode from = sc(mcp.call("streamProcessLogs", args("processId", "slow", "stdoutOffset", 4, "timeoutSeconds", 0.3)));
    assertThat(from.get("stdout").asText()).isEmpty();
    mcp.call("killProcess", args("processId", "slow", "signal", "SIGKILL"));
  }

  @Test
  void killAllAndCleanupReportCounts() {
    try (McpTestClient own = McpTestClient.initialized(AdapterConfig.defaults())) {
      own.call("getSandbox", args("sandboxId", "counts"));
      own.call("startProcess", args("command", "sleep 300", "sandboxId", "counts"));
      own.call("startProcess", args("command", "sleep 300", "sandboxId", "counts"));
      own.call("startProcess", args("command", "true", "sandboxId", "counts", "processId", "quick"));
      assertThat(sc(own.call("killAllProcesses", args("sandboxId", "counts"))).get("killed").asInt())
          .isBetween(2, 3);
      await("nothing runs in 'counts'", 10, () -> sc(own.call("listProcesses",
          args("sandboxId", "counts", "status", "running"))).get("processes").isEmpty());
      assertThat(sc(own.call("cleanupCompletedProcesses", args("sandboxId", "counts"))).get("removed").asInt())
          .isEqualTo(3);
      assertThat(sc(own.call("listProcesses", args("sandboxId", "counts"))).get("count").asInt()).isZero();
    }
  }

  // ---- sandboxes

  @Test
  void getSandboxCreatesOnceAndListSandboxesShowsIt() {
    try (McpTestClient own = McpTestClient.initialized(AdapterConfig.defaults())) {
      own.request("logging/setLevel", Json.object().put("level", "info"));
      JsonNode first = sc(own.call("getSandbox", args("sandboxId", "alpha", "idleTimeoutSeconds", 120)));
      assertThat(own.notifications).anySatisfy(n -> {
        assertThat(n.get("method").asText()).isEqualTo("notifications/message");
        assertThat(n.get("params").get("level").asText()).isEqualTo("info");
        assertThat(n.get("params").get("data").asText()).contains("created local sandbox 'alpha'");
      });
      assertThat(first.get("created").asBoolean()).isTrue();
      assertThat(first.get("sandbox").get("mode").asText()).isEqualTo("local");
      assertThat(first.get("sandbox").get("idleTimeoutSeconds").asInt()).isEqualTo(120);
      own.request("logging/setLevel", Json.object().put("level", "warning"));
      int logged = own.notifications.size();
      JsonNode second = sc(own.call("getSandbox", args("sandboxId", "alpha")));
      assertThat(second.get("created").asBoolean()).isFalse();
      JsonNode kept = sc(own.call("getSandbox", args("sandboxId", "beta", "keepAlive", true)));
      assertThat(own.notifications).as("info messages are below the warning level").hasSize(logged);
      assertThat(kept.get("sandbox").get("keepAlive").asBoolean()).isTrue();
      assertThat(kept.get("sandbox").get("idleTimeoutSeconds").isNull()).isTrue();
      JsonNode list = sc(own.call("listSandboxes", args()));
      assertThat(list.get("sandboxes").findValuesAsText("sandboxId")).containsExactly("alpha", "beta");
      // local sandboxes are isolated by default where bwrap works (CI installs it)
      assertThat(list.get("sandboxes").findValuesAsText("isolation")).containsExactly("bwrap", "bwrap");
      own.call("exec", args("command", "echo a > mine.txt", "sandboxId", "alpha"));
      JsonNode other = own.call("exec", args("command", "cat mine.txt", "sandboxId", "beta"));
      assertThat(other.get("isError").asBoolean()).as("sandboxes have separate workspaces").isTrue();
    }
  }

  @Test
  void anIdleSandboxIsDestroyedAndNoLongerListed() throws Exception {
    try (McpTestClient own = McpTestClient.initialized(AdapterConfig.defaults())) {
      // The tool's minimum idle timeout is 10 s; the registry takes 1 s, to keep the test short.
      own.server.sandboxes().getOrCreate("brief", false, 1);
      own.call("exec", args("command", "touch left-behind", "sandboxId", "brief"));
      own.call("exec", args("command", "touch default-file"));
      await("the idle sandbox went away", 25, () -> !sc(own.call("listSandboxes", args())).get("sandboxes")
          .findValuesAsText("sandboxId").contains("brief"));
      JsonNode gone = own.call("exec", args("command", "true", "sandboxId", "brief"));
      assertThat(text(gone)).contains("no sandbox 'brief'");
      assertThat(own.call("getSandbox", args("sandboxId", "brief")).get("structuredContent").get("created").asBoolean())
          .as("an expired sandbox is created anew").isTrue();
      own.call("destroy", args("sandboxId", "brief"));
      assertThat(sc(own.call("listSandboxes", args())).get("sandboxes").findValuesAsText("sandboxId"))
          .containsExactly("default");
      JsonNode again = sc(own.call("getSandbox", args("sandboxId", "brief")));
      assertThat(again.get("created").asBoolean()).isTrue();
      assertThat(own.call("exec", args("command", "ls left-behind", "sandboxId", "brief")).get("isError").asBoolean())
          .isTrue();
    }
  }

  @Test
  void anUnknownSandboxIdIsAnErrorResultThatSaysHowToCreateIt() {
    JsonNode r = mcp.call("exec", args("command", "true", "sandboxId", "nowhere"));
    assertThat(r.get("isError").asBoolean()).isTrue();
    assertThat(text(r)).contains("getSandbox").contains("nowhere");
  }

  @Test
  void destroyRefusesWhileProcessesRunUnlessForced() {
    try (McpTestClient own = McpTestClient.initialized(AdapterConfig.defaults())) {
      own.call("getSandbox", args("sandboxId", "doomed"));
      own.call("startProcess", args("command", "sleep 300", "sandboxId", "doomed", "processId", "web"));
      JsonNode refused = own.call("destroy", args("sandboxId", "doomed"));
      assertThat(refused.get("isError").asBoolean()).isTrue();
      assertThat(text(refused)).contains("web").contains("force");
      assertThat(sc(own.call("listSandboxes", args())).get("count").asInt()).isEqualTo(1);
      JsonNode done = sc(own.call("destroy", args("sandboxId", "doomed", "force", true)));
      assertThat(done.get("destroyed").asBoolean()).isTrue();
      assertThat(done.get("killedProcesses").asInt()).isEqualTo(1);
      assertThat(sc(own.call("listSandboxes", args())).get("count").asInt()).isZero();
      assertThat(own.call("destroy", args("sandboxId", "doomed")).get("isError").asBoolean()).isTrue();
      JsonNode gone = own.call("exec", args("command", "true", "sandboxId", "doomed"));
      assertThat(gone.get("isError").asBoolean()).isTrue();
    }
  }

  @Test
  void theDefaultSandboxComesBackAfterDestroy() {
    try (McpTestClient own = McpTestClient.initialized(AdapterConfig.defaults())) {
      own.call("exec", args("command", "touch marker"));
      own.call("destroy", args());
      JsonNode r = own.call("exec", args("command", "ls marker"));
      assertThat(r.get("isError").asBoolean()).as("a fresh default sandbox has a fresh workspace").isTrue();
    }
  }

  @Test
  void aSandboxWhoseAgentDiedIsForgottenAndCanBeCreatedAgain() throws Exception {
    try (McpTestClient own = McpTestClient.initialized(AdapterConfig.defaults())) {
      own.call("getSandbox", args("sandboxId", "fragile"));
      long agent = own.server.sandboxes().list().get(0).agentPid();
      ProcessHandle.of(agent).ifPresent(ProcessHandle::destroyForcibly);
      await("the agent died", 10, () -> !ProcessHandle.of(agent).map(ProcessHandle::isAlive).orElse(false));
      await("the server forgot the sandbox", 10, () -> sc(own.call("listSandboxes", args())).get("count").asInt() == 0);
      assertThat(sc(own.call("getSandbox", args("sandboxId", "fragile"))).get("created").asBoolean()).isTrue();
      assertThat(sc(own.call("exec", args("command", "echo back", "sandboxId", "fragile"))).get("stdout").asText())
          .isEqualTo("back\n");
    }
  }

  @Test
  void destroyRefusesWhileAToolCallRunsInTheSandbox() throws Exception {
    try (McpTestClient own = McpTestClient.initialized(AdapterConfig.defaults())) {
      own.call("getSandbox", args("sandboxId", "busy"));
      CompletableFuture<ObjectNode> running = own.sendAsync(McpTestClient.requestMessage("long", "tools/call",
          McpTestClient.callParams("exec", args("command", "echo started; sleep 1", "sandboxId", "busy"), "busy-tok")));
      await("the call started", 20, () -> !own.progress("busy-tok").isEmpty());
      JsonNode refused = own.call("destroy", args("sandboxId", "busy"));
      assertThat(refused.get("isError").asBoolean()).isTrue();
      assertThat(text(refused)).contains("1 tool call(s) still running");
      assertThat(running.get(20, TimeUnit.SECONDS).get("result").has("isError")).isFalse();
      assertThat(sc(own.call("destroy", args("sandboxId", "busy"))).get("destroyed").asBoolean()).isTrue();
    }
  }

  // ---- output that left the window, odd bytes, small pages

  @Test
  void streamProcessLogsSkipsOutputThatLeftTheWindowAndSaysWhere() {
    mcp.call("startProcess", args("command", "head -c 2000000 /dev/zero | tr '\\0' a; echo; echo TAIL; sleep 60",
        "processId", "flood"));
    awaitBytes("flood", 2_000_006);
    JsonNode s = sc(mcp.call("streamProcessLogs", args("processId", "flood", "timeoutSeconds", 1, "maxBytes", 100)));
    assertThat(s.get("truncated").asBoolean()).isTrue();
    assertThat(s.get("stdout").asText()).hasSize(100).matches("a+");
    long next = s.get("stdoutNextOffset").asLong();
    assertThat(next).as("past the lost bytes").isGreaterThan(900_000);
    assertThat(s.get("note").asText()).contains("lost").contains("stdoutOffset " + next);
    JsonNode page = sc(mcp.call("getProcessLogs", args("processId", "flood", "stdoutOffset", 2_000_000)));
    assertThat(page.get("stdout").asText()).isEqualTo("\nTAIL\n");
    mcp.call("killProcess", args("processId", "flood", "signal", "SIGKILL"));
  }

  private void awaitBytes(String id, long bytes) {
    await(id + " wrote " + bytes + " bytes", 15, () -> sc(mcp.call("getProcess", args("processId", id)))
        .get("process").get("stdoutBytes").asLong() >= bytes);
  }

  @Test
  void pagingWithATinyMaxBytesStillMovesOnAndReassemblesMultibyteText() {
    String text = "h\u00e9llo w\u00f6rld \ud83d\ude00 \u2603 end ".repeat(8);
    mcp.call("startProcess", args("argv", List.of("printf", "%s", text), "processId", "utf8pages"));
    awaitExit("utf8pages");
    StringBuilder all = new StringBuilder();
    long next = 0;
    JsonNode page;
    int pages = 0;
    do {
      page = sc(mcp.call("getProcessLogs", args("processId", "utf8pages", "stdoutOffset", next, "maxBytes", 1)));
      assertThat(page.get("stdoutNextOffset").asLong()).as("paging moves on").isGreaterThan(next);
      all.append(page.get("stdout").asText());
      next = page.get("stdoutNextOffset").asLong();
      assertThat(++pages).isLessThan(50);
    } while (page.get("more").asBoolean());
    assertThat(all.toString()).isEqualTo(text);
    assertThat(next).isEqualTo(text.getBytes(java.nio.charset.StandardCharsets.UTF_8).length);
  }

  @Test
  void invalidUtf8NeverPushesAnOffsetPastTheOutput() {
    JsonNode r = mcp.call("exec", args("command", "head -c 10000 /dev/zero | tr '\\0' '\\377'", "maxOutputBytes", 100));
    JsonNode s = sc(r);
    assertThat(s.get("stdoutBytes").asLong()).isEqualTo(10_000);
    assertThat(s.get("note").asText()).contains("of 10000 bytes");
    mcp.call("startProcess", args("command", "head -c 10000 /dev/zero | tr '\\0' '\\377'", "processId", "binary"));
    awaitExit("binary");
    JsonNode page = sc(mcp.call("getProcessLogs", args("processId", "binary")));
    assertThat(page.get("stdoutNextOffset").asLong()).isEqualTo(10_000);
    assertThat(page.get("complete").asBoolean()).isTrue();
  }

  @Test
  void aPatternDoesNotAcceptATrailingNewline() {
    JsonNode r = mcp.call("getProcess", args("processId", "web\n"));
    assertThat(r.get("isError").asBoolean()).isTrue();
    assertThat(text(r)).contains("does not match");
  }

  @Test
  void hugeNumbersAreRejectedNotWrapped() {
    ObjectNode a = args("command", "echo x");
    a.put("maxOutputBytes", new java.math.BigInteger("18446744073709551615"));
    JsonNode r = mcp.call("exec", a);
    assertThat(r.get("isError").asBoolean()).isTrue();
    assertThat(text(r)).contains("maxOutputBytes: must be at most 16777216");
  }

  // ---- secrets

  @Test
  void aSecretAcrossTheOutputCapIsRedactedWithAndWithoutAProgressToken() {
    String secret = "sk-cut-0123456789abcdef";
    AdapterConfig config = AdapterConfig.parse(new String[] {"--pass-env", "API_KEY"}, Map.of("API_KEY", secret));
    try (McpTestClient own = McpTestClient.initialized(config)) {
      // The secret starts 10 bytes before the 1,000-byte cap: the kept text would end in its first 10 characters.
      ObjectNode a = args("command", "head -c 990 /dev/zero | tr '\\0' x; printf '%s' \"$API_KEY\"; seq 1 5000",
          "maxOutputBytes", 1000);
      for (Object token : java.util.Arrays.asList(null, "cut")) { // without a token: the plain exec path
        JsonNode r = token == null ? own.call("exec", a) : own.call("exec", a, token);
        String out = sc(r).get("stdout").asText();
        assertThat(r.toString() + own.notifications).as("token " + token).doesNotContain("sk-cut-0123");
        assertThat(out).as("token " + token).startsWith("x".repeat(990)).doesNotContain("sk-");
        assertThat(sc(r).get("stdoutBytes").asLong()).as("token " + token).isEqualTo(990 + secret.length() + 23_893);
        assertThat(sc(r).get("truncated").asBoolean()).isTrue();
      }
    }
  }

  @Test
  void passedSecretsReachProcessesButNeverTheClient() {
    String secret = "sk-test-0123456789abcdef";
    AdapterConfig config = AdapterConfig.parse(new String[] {"--pass-env", "API_KEY"}, Map.of("API_KEY", secret));
    try (McpTestClient own = McpTestClient.initialized(config)) {
      JsonNode r = own.call("exec", args("command", "echo \"key=$API_KEY\"; echo \"$API_KEY\" >&2; "
          + "printf '%s' \"$API_KEY\" | wc -c"), "sec");
      String all = r.toString() + own.notifications;
      assertThat(all).doesNotContain(secret).doesNotContain("0123456789abcdef");
      assertThat(sc(r).get("stdout").asText()).isEqualTo("key=[REDACTED:API_KEY]\n24\n");
      assertThat(sc(r).get("stderr").asText()).isEqualTo("[REDACTED:API_KEY]\n");
      JsonNode override = own.call("exec", args("command", "printf '%s' \"$API_KEY\" | wc -c",
          "env", Map.of("API_KEY", "x")));
      assertThat(sc(override).get("stdout").asText()).as("a call cannot replace a passed secret").isEqualTo("24\n");
      // Printed slowly, one character at a time, the secret still never shows in progress chunks.
      JsonNode slow = own.call("exec", args("command",
          "for c in $(printf '%s' \"$API_KEY\" | fold -w1); do printf '%s' \"$c\"; sleep 0.01; done; echo"), "slow");
      assertThat(sc(slow).get("stdout").asText()).isEqualTo("[REDACTED:API_KEY]\n");
      StringBuilder streamed = new StringBuilder();
      own.progress("slow").forEach(p -> streamed.append(p.get("message").asText()));
      assertThat(streamed.toString()).isEqualTo("[REDACTED:API_KEY]\n");
      own.call("startProcess", args("command", "echo $API_KEY", "processId", "leak"));
      JsonNode[] page = new JsonNode[1];
      await("the process's output is complete", 10, () -> sc(page[0] = own.call("getProcessLogs",
          args("processId", "leak"))).get("complete").asBoolean());
      JsonNode logs = page[0];
      assertThat(sc(logs).get("stdout").asText()).isEqualTo("[REDACTED:API_KEY]\n");
      assertThat(logs.toString()).doesNotContain(secret);
      // A page that starts inside the secret shows no part of it.
      for (int from = 1; from < 24; from += 5) {
        JsonNode mid = own.call("getProcessLogs", args("processId", "leak", "stdoutOffset", from));
        assertThat(sc(mid).get("stdout").asText()).as("from %d", from).isEqualTo("[REDACTED:API_KEY]\n");
        JsonNode followed = own.call("streamProcessLogs", args("processId", "leak", "stdoutOffset", from), "mid" + from);
        assertThat(sc(followed).get("stdout").asText()).isEqualTo("[REDACTED:API_KEY]\n");
        assertThat(mid.toString() + followed + own.notifications).doesNotContain("0123456789abcdef").doesNotContain("cdef\n");
      }
    }
  }

  @Test
  void secretsThatLookLikeTheServersOwnWordsDoNotBreakResults() {
    AdapterConfig config = AdapterConfig.parse(new String[] {"--pass-env", "A", "B"},
        Map.of("A", "running", "B", "stdout"));
    try (McpTestClient own = McpTestClient.initialized(config)) {
      JsonNode r = own.call("exec", args("command", "echo stdout running"));
      assertThat(sc(r).get("stdout").asText()).isEqualTo("[REDACTED:B] [REDACTED:A]\n");
      JsonNode p = own.call("startProcess", args("command", "sleep 5"));
      assertThat(sc(p).get("process").get("status").asText()).isIn("starting", "running");
      own.call("killAllProcesses", args());
    }
  }
}
