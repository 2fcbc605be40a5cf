package dev.sandboxsdk.agent;

import static dev.sandboxsdk.agent.TestAgent.obj;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sandboxsdk.testkit.Await;
import dev.sandboxsdk.testkit.Procs;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Processes on a pseudo-terminal ({@code "pty"} in process/start): a controlling terminal of the
 * requested size, typed input, resize with SIGWINCH, Ctrl-C, colours, a full-screen program,
 * kills that reach the shell's jobs, and many terminals at once without leaking descriptors.
 */
class TerminalIT {
  @RegisterExtension
  static final TestAgent agent = new TestAgent(b -> b.keepAliveMs(200).graceMs(1000).logWindowBytes(64 * 1024));

  @org.junit.jupiter.api.BeforeAll
  static void nativeSpawn() {
    // Terminals need the native spawn; TerminalIsolatedIT checks the refusal under --spawn jdk.
    org.junit.jupiter.api.Assumptions.assumeFalse("jdk".equals(System.getProperty("sandbox.test.spawn")));
  }

  @AfterEach
  void cleanUp() {
    agent.reset();
  }

  static TestAgent agent() {
    return agent;
  }

  /** Starts {@code argv} on a terminal of {@code cols} x {@code rows}; returns its id. */
  static String startTerminal(TestAgent a, String id, int cols, int rows, Map<String, String> env, String... argv) {
    var body = TestAgent.JSON.createObjectNode();
    body.set("argv", TestAgent.JSON.valueToTree(List.of(argv)));
    body.put("processId", id);
    body.set("pty", TestAgent.JSON.createObjectNode().put("cols", cols).put("rows", rows));
    if (!env.isEmpty()) {
      body.set("env", TestAgent.JSON.valueToTree(env));
    }
    TestAgent.Response r = a.post("/api/process/start", body.toString());
    assertThat(r.status()).as(String.valueOf(r.body())).isEqualTo(200);
    assertThat(r.body().path("pty").path("cols").asInt()).isEqualTo(cols);
    return r.text("processId");
  }

  /** The terminal's output so far, as raw bytes decoded as UTF-8 (base64 on the wire). */
  static String output(TestAgent a, String id) {
    TestAgent.Response r = a.get("/api/process/" + id + "/logs?encoding=base64");
    assertThat(r.status()).as(String.valueOf(r.body())).isEqualTo(200);
    return new String(Base64.getDecoder().decode(r.text("stdout")), StandardCharsets.UTF_8);
  }

  /** Waits up to 15 s for the output to satisfy {@code condition}; returns it either way. */
  static String awaitOutput(TestAgent a, String id, Predicate<String> condition) throws InterruptedException {
    String[] last = {""};
    Await.until(15_000, () -> condition.test(last[0] = output(a, id)));
    return last[0];
  }

  static void type(TestAgent a, String id, String text) {
    TestAgent.Response r = a.post("/api/process/" + id + "/stdin", obj("data",
        Base64.getEncoder().encodeToString(text.getBytes(StandardCharsets.UTF_8)), "encoding", "base64"));
    assertThat(r.status()).as(String.valueOf(r.body())).isEqualTo(200);
  }

  static JsonNode awaitExit(TestAgent a, String id) throws InterruptedException {
    assertThat(Await.until(15_000, () -> a.isFinished(id))).as("terminal %s ended", id).isTrue();
    return a.processInfo(id);
  }

  /** A shell that reads commands from the terminal, with job control and a fixed prompt. */
  static String shell(TestAgent a, String id) throws InterruptedException {
    startTerminal(a, id, 80, 24, Map.of("PS1", "$ "), "bash", "--norc", "--noprofile", "-i");
    assertThat(awaitOutput(a, id, s -> s.contains("$ "))).contains("$ ");
    return id;
  }

  @Test
  void inputLargerThanTheAgentsWriteChunkArrivesWholeAndInOrder() throws Exception {
    // 300,001 bytes: several 64 KiB chunks of native memory and a short last one.
    byte[] input = new byte[300_001];
    for (int i = 0; i < input.length; i++) {
      input[i] = (byte) ('a' + i % 26);
    }
    startTerminal(agent, "big-input", 80, 24, Map.of(), "sh", "-c",
        "stty raw -echo; echo ready; head -c 300001 | sha256sum");
    assertThat(awaitOutput(agent, "big-input", s -> s.contains("ready"))).contains("ready");
    TestAgent.Response r = agent.post("/api/process/big-input/stdin", obj("data",
        Base64.getEncoder().encodeToString(input), "encoding", "base64"));
    assertThat(r.status()).as(String.valueOf(r.body())).isEqualTo(200);
    String sha = java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256").digest(input));
    assertThat(awaitOutput(agent, "big-input", s -> s.contains(sha))).contains(sha);
  }

  @Test
  void theProgramHasAControllingTerminalOfTheRequestedSizeAndTerm() throws Exception {
    startTerminal(agent, "tty", 100, 30, Map.of(), "sh", "-c",
        "tty; stty size; echo TERM=$TERM; test -t 0 && test -t 1 && test -t 2 && echo all-ttys; echo ctty: $(ps -o tty= -p $$);"
            + " echo utf8: $(stty -a | grep -o -- '-*iutf8')");
    JsonNode info = awaitExit(agent, "tty");
    assertThat(info.get("exitCode").asInt()).isZero();
    assertThat(info.path("pty").path("cols").asInt()).isEqualTo(100);
    assertThat(info.path("pty").path("rows").asInt()).isEqualTo(30);
    String out = output(agent, "tty");
    assertThat(out).containsPattern("/dev/pts/\\d+\r\n").contains("30 100\r\n").contains("TERM=xterm-256color\r\n")
        .contains("all-ttys").containsPattern("ctty: pts/\\d+").contains("utf8: iutf8\r\n");
    // stdout and stderr are the one terminal: the text log is the same bytes, stderr stays empty
    TestAgent.Response logs = agent.get("/api/process/tty/logs");
    assertThat(logs.text("stderr")).isEmpty();
    assertThat(logs.text("stdout")).isEqualTo(out);
  }

  @Test
  void aResizeReachesTheProgramAsSigwinchWithTheNewSize() throws Exception {
    startTerminal(agent, "winch", 80, 24, Map.of(), "bash", "-c",
        "trap 'echo winch $(stty size)' WINCH; echo ready; for i in $(seq 300); do sleep 0.1; done");
    awaitOutput(agent, "winch", s -> s.contains("ready"));
    TestAgent.Response r = agent.post("/api/process/winch/resize", obj("cols", 132, "rows", 43));
    assertThat(r.status()).as(String.valueOf(r.body())).isEqualTo(200);
    assertThat(awaitOutput(agent, "winch", s -> s.contains("winch 43 132"))).contains("winch 43 132");
    assertThat(agent.processInfo("winch").path("pty").path("cols").asInt()).isEqualTo(132);
    assertThat(agent.processInfo("winch").path("pty").path("rows").asInt()).isEqualTo(43);
  }

  @Test
  void aProgramThatPromptsGetsTheTypedLineAndItIsEchoed() throws Exception {
    startTerminal(agent, "prompt", 80, 24, Map.of(), "sh", "-c", "printf 'name? '; read n; echo \"hello, $n!\"");
    awaitOutput(agent, "prompt", s -> s.contains("name? "));
    type(agent, "prompt", "wörld\r");
    JsonNode info = awaitExit(agent, "prompt");
    assertThat(info.get("exitCode").asInt()).isZero();
    // the terminal echoes what was typed, then the program answers
    assertThat(output(agent, "prompt")).isEqualTo("name? wörld\r\nhello, wörld!\r\n");
  }

  @Test
  void ctrlCInterruptsTheForegroundJobAndTheShellCarriesOn() throws Exception {
    shell(agent, "ctrlc");
    type(agent, "ctrlc", "echo sl''eeping; sleep 67\r");
    awaitOutput(agent, "ctrlc", s -> s.contains("sleeping"));
    assertThat(Await.until(5000, () -> !pidsOf("sleep 67").isEmpty())).isTrue();
    type(agent, "ctrlc", "\u0003");
    type(agent, "ctrlc", "echo $((40+2))-after\r");
    assertThat(awaitOutput(agent, "ctrlc", s -> s.contains("42-after"))).contains("42-after");
    assertThat(agent.processInfo("ctrlc").get("status").asText()).isEqualTo("running");
    type(agent, "ctrlc", "exit 7\r");
    assertThat(awaitExit(agent, "ctrlc").get("exitCode").asInt()).isEqualTo(7);
  }

  @Test
  void coloursAndOtherEscapeSequencesSurvive() throws Exception {
    // --color=auto: ls colours only when its output is a terminal
    startTerminal(agent, "ls", 80, 24, Map.of(), "ls", "--color=auto", "-d", "/", "/usr");
    awaitExit(agent, "ls");
    assertThat(output(agent, "ls")).contains("\u001b[").contains("/usr");
  }

  @Test
  void aFullScreenProgramDrawsAndExits() throws Exception {
    startTerminal(agent, "vi", 80, 24, Map.of(), "vi", "-u", "NONE", "-N");
    assertThat(awaitOutput(agent, "vi", s -> s.contains("~"))).contains("\u001b[");
    type(agent, "vi", "ihello\u001b:wq! drawn.txt\r");
    assertThat(awaitExit(agent, "vi").get("exitCode").asInt()).isZero();
    assertThat(Files.readString(agent.workspace.resolve("drawn.txt"))).isEqualTo("hello\n");
  }

  @Test
  void killingATerminalKillsTheJobsItsShellStarted() throws Exception {
    shell(agent, "jobs");
    type(agent, "jobs", "sleep 1234 & sleep 1235 & sleep 1236\r");
    assertThat(Await.until(5000, () -> pidsOf("sleep 123").size() == 3)).isTrue();
    List<Long> sleepers = pidsOf("sleep 123");
    assertThat(agent.delete("/api/process/jobs").status()).isEqualTo(200);
    assertThat(awaitExit(agent, "jobs").get("status").asText()).isEqualTo("killed");
    assertThat(Await.until(10_000, () -> sleepers.stream().noneMatch(Procs::alive))).as("the shell's jobs are gone")
        .isTrue();
  }

  @Test
  void badSizesAndMisusedRoutesGetClearErrors() {
    for (String size : List.of("0", "-1", "100000", "\"80\"", "1.5", "null")) {
      TestAgent.Response r = agent.post("/api/process/start",
          "{\"argv\":[\"true\"],\"pty\":{\"cols\":" + size + ",\"rows\":24}}");
      assertThat(r.status()).as(size).isEqualTo(400);
      assertThat(r.text("code")).isEqualTo("VALIDATION_FAILED");
      assertThat(r.text("message")).contains("pty.cols");
    }
    assertThat(agent.post("/api/process/start", "{\"argv\":[\"true\"],\"pty\":{\"cols\":80,\"rows\":24,\"x\":1}}")
        .status()).isEqualTo(400);
    assertThat(agent.post("/api/process/start", "{\"argv\":[\"true\"],\"pty\":{\"cols\":80,\"rows\":24,\"term\":\"a b\"}}")
        .text("code")).isEqualTo("VALIDATION_FAILED");
    assertThat(agent.post("/api/process/start", "{\"argv\":[\"true\"],\"pty\":[80,24]}").status()).isEqualTo(400);
    assertThat(agent.post("/api/execute", "{\"command\":\"true\",\"pty\":{\"cols\":80,\"rows\":24}}").status())
        .isEqualTo(400);

    startTerminal(agent, "sized", 80, 24, Map.of(), "sleep", "30");
    for (String size : List.of("0", "-5", "100000", "\"80\"", "1e3")) {
      TestAgent.Response r = agent.post("/api/process/sized/resize", "{\"cols\":" + size + ",\"rows\":24}");
      assertThat(r.status()).as(size).isEqualTo(400);
      assertThat(r.text("code")).isEqualTo("VALIDATION_FAILED");
    }
    assertThat(agent.post("/api/process/sized/resize", "{\"cols\":80}").text("code")).isEqualTo("VALIDATION_FAILED");
    assertThat(agent.post("/api/process/sized/resize", "not json").status()).isEqualTo(400);
    TestAgent.Response eof = agent.post("/api/process/sized/stdin", obj("data", "x", "eof", true));
    assertThat(eof.status()).isEqualTo(400);
    assertThat(eof.text("message")).contains("terminal");

    agent.post("/api/process/start", obj("command", "sleep 30", "processId", "piped"));
    TestAgent.Response notTty = agent.post("/api/process/piped/resize", obj("cols", 80, "rows", 24));
    assertThat(notTty.status()).isEqualTo(409);
    assertThat(notTty.text("code")).isEqualTo("NOT_A_TERMINAL");
    assertThat(agent.post("/api/process/nobody/resize", obj("cols", 80, "rows", 24)).status()).isEqualTo(404);
    assertThat(agent.get("/api/process/sized/resize").status()).isEqualTo(405);
  }

  @Test
  void aTerminalsOutputIsKeptInTheSameBoundedWindowAsAnyProcesss() throws Exception {
    startTerminal(agent, "flood", 80, 24, Map.of(), "sh", "-c", "head -c 300000 /dev/zero | tr '\\0' x; echo; echo end");
    awaitExit(agent, "flood");
    JsonNode info = agent.processInfo("flood");
    assertThat(info.get("stdoutBytes").asLong()).isGreaterThan(300_000);
    TestAgent.Response logs = agent.get("/api/process/flood/logs");
    assertThat(logs.body().get("truncated").asBoolean()).isTrue();
    assertThat(logs.body().get("stdoutOffset").asLong()).isEqualTo(info.get("stdoutBytes").asLong() - 64 * 1024);
    assertThat(logs.text("stdout")).endsWith("x\r\nend\r\n").hasSize(64 * 1024);
    try (SseReader events = agent.stream("/api/process/flood/stream", null)) {
      List<JsonNode> all = events.rest();
      assertThat(all.get(1).path("type").asText()).isEqualTo("truncated");
      assertThat(all.get(all.size() - 1).path("type").asText()).isEqualTo("exit");
    }
  }

  @Test
  void anEndedTerminalRefusesInputAndResize() throws Exception {
    startTerminal(agent, "short", 80, 24, Map.of(), "true");
    awaitExit(agent, "short");
    assertThat(agent.post("/api/process/short/resize", obj("cols", 90, "rows", 20)).text("code"))
        .isEqualTo("PROCESS_NOT_RUNNING");
    assertThat(agent.post("/api/process/short/stdin", obj("data", "x")).text("code")).isEqualTo("PROCESS_NOT_RUNNING");
  }

  @Test
  void rawBytesOfTheStreamSurviveSplitCharacters() throws Exception {
    startTerminal(agent, "split", 80, 24, Map.of(), "sh", "-c", "printf 'a\\342\\202'; sleep 0.3; printf '\\254b'");
    awaitExit(agent, "split");
    try (SseReader events = agent.stream("/api/process/split/stream?encoding=base64", null)) {
      java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
      for (JsonNode e : events.rest()) {
        if (e.path("type").asText().equals("stdout")) {
          assertThat(e.path("offset").asLong()).isEqualTo(bytes.size());
          bytes.writeBytes(Base64.getDecoder().decode(e.path("data").asText()));
        }
      }
      assertThat(bytes.toString(StandardCharsets.UTF_8)).isEqualTo("a\u20acb");
    }
    assertThat(agent.get("/api/process/split/logs?since=1").text("stdout")).isEqualTo("\u20acb");
  }

  @Test
  void fiftyTerminalsAtOnceStayResponsiveAndLeaveNoDescriptorsBehind() throws Exception {
    int before = fds();
    int n = 50;
    for (int i = 0; i < n; i++) {
      startTerminal(agent, "t" + i, 80, 24, Map.of(), "cat");
    }
    for (int i = 0; i < n; i++) {
      type(agent, "t" + i, "ping " + i + "\r");
    }
    for (int i = 0; i < n; i++) {
      String want = "ping " + i + "\r\nping " + i + "\r\n"; // the echo, then cat's copy
      assertThat(awaitOutput(agent, "t" + i, s -> s.equals(want))).isEqualTo(want);
    }
    TestAgent.Response exec = agent.post("/api/execute", obj("command", "echo still-here"));
    assertThat(exec.text("stdout")).isEqualTo("still-here\n");
    assertThat(agent.get("/api/process/list?status=running").body().get("processes")).hasSize(n);
    agent.delete("/api/process/kill-all");
    agent.post("/api/process/cleanup", "");
    // A little slack for pooled HTTP connections; a leaked master per terminal would be 50.
    assertThat(Await.until(10_000, () -> fds() <= before + 4)).as("descriptors back to %d, now %d", before, fds()).isTrue();
  }

  /** Descriptors open in this JVM, which runs the agent. */
  static int fds() {
    try (DirectoryStream<Path> d = Files.newDirectoryStream(Path.of("/proc/self/fd"))) {
      int n = 0;
      for (Path ignored : d) {
        n++;
      }
      return n;
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Live processes whose command line starts with {@code prefix} (words joined by spaces). */
  static List<Long> pidsOf(String prefix) {
    List<Long> pids = new ArrayList<>();
    try (DirectoryStream<Path> dirs = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
      for (Path dir : dirs) {
        try {
          String cmd = new String(Files.readAllBytes(dir.resolve("cmdline")), StandardCharsets.UTF_8).replace('\0', ' ');
          long pid = Long.parseLong(dir.getFileName().toString());
          if (cmd.startsWith(prefix) && Procs.alive(pid)) {
            pids.add(pid);
          }
        } catch (IOException | RuntimeException e) {
          // gone meanwhile
        }
      }
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    return pids;
  }
}
