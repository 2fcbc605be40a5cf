package dev.sandboxsdk.agent;

import static dev.sandboxsdk.agent.TestAgent.obj;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Shell sessions against the real agent and real bash: what carries over between commands, what
 * does not, and how commands of one session take turns. Run once per isolation mode by its
 * subclasses.
 */
abstract class SessionSuite {
  abstract TestAgent agent();

  @AfterEach
  void deleteSessions() {
    for (JsonNode s : agent().get("/api/sessions").body().get("sessions")) {
      agent().delete("/api/sessions/" + s.get("id").asText());
    }
  }

  String create(Object... fields) {
    TestAgent.Response r = agent().post("/api/sessions", obj(fields));
    assertThat(r.status()).as(String.valueOf(r.body())).isEqualTo(200);
    return r.text("sessionId");
  }

  TestAgent.Response run(String session, String command) {
    return agent().post("/api/execute", obj("command", command, "sessionId", session, "timeoutMs", 20_000));
  }

  String out(String session, String command) {
    TestAgent.Response r = run(session, command);
    assertThat(r.status()).as(String.valueOf(r.body())).isEqualTo(200);
    assertThat(r.text("stderr")).isEmpty();
    assertThat(r.body().get("exitCode").asInt()).as(r.text("stderr")).isZero();
    return r.text("stdout");
  }

  @Test
  void directoryVariablesFunctionsAliasesAndOptionsCarryOver() {
    String s = create();
    out(s, "mkdir -p sub/dir && cd sub/dir; export A=1; B=plain; f() { echo \"hi $1\"; }; alias ll='echo LL';"
        + " set -o pipefail; shopt -s nullglob");

    assertThat(out(s, "pwd")).endsWith("/sub/dir\n");
    assertThat(out(s, "echo $A $B; printenv A; f there; ll; [[ -o pipefail ]] && echo pipefail;"
        + " shopt -q nullglob && echo nullglob")).isEqualTo("1 plain\n1\nhi there\nLL\npipefail\nnullglob\n");
    // the option works, not only reads as on: false | true fails under pipefail
    assertThat(run(s, "false | true").body().get("exitCode").asInt()).isEqualTo(1);
  }

  @Test
  void awkwardValuesSurviveExactly() {
    String s = create();
    out(s, "SP='two  words'; NL=$'line1\\nline2\\n'; Q=\"it's \\\"quoted\\\" \\\\ \\$HOME\"; U='héllo ✓ 日本';"
        + " ARR=(a 'b c' $'d\\ne'); declare -A M=([k 1]='v w' [x]=y); declare -i N=41; readonly R=fixed;"
        + " export E='exported value'");

    assertThat(out(s, "printf '[%s]' \"$SP\" \"$NL\" \"$Q\" \"$U\""))
        .isEqualTo("[two  words][line1\nline2\n][it's \"quoted\" \\ $HOME][héllo ✓ 日本]");
    assertThat(out(s, "printf '[%s]' \"${ARR[@]}\" \"${#ARR[@]}\" \"${M[k 1]}\" \"${M[x]}\"; N+=1; echo $N $R"))
        .isEqualTo("[a][b c][d\ne][3][v w][y]42 fixed\n");
    // a read-only variable is restored again and again without complaint, and stays read-only
    assertThat(run(s, "R=other").body().get("exitCode").asInt()).isNotZero();
    assertThat(out(s, "echo $R; printenv E")).isEqualTo("fixed\nexported value\n");
  }

  @Test
  void eachCommandKeepsItsOwnExitCodeAndOutputsAndExitStillSaves() {
    String s = create();
    TestAgent.Response r = run(s, "export AFTER=exit; echo out; echo err >&2; exit 3");

    assertThat(r.body().get("exitCode").asInt()).isEqualTo(3);
    assertThat(r.body().get("success").asBoolean()).isFalse();
    assertThat(r.text("stdout")).isEqualTo("out\n");
    assertThat(r.text("stderr")).isEqualTo("err\n");
    assertThat(r.text("command")).isEqualTo("export AFTER=exit; echo out; echo err >&2; exit 3");
    assertThat(out(s, "echo $AFTER")).isEqualTo("exit\n");
    TestAgent.Response failed = run(s, "UNDEF_CMD_xyz");
    assertThat(failed.body().get("exitCode").asInt()).isEqualTo(127);
    assertThat(out(s, "echo $?")).isEqualTo("0\n"); // $? is not state: a new command starts clean
  }

  @Test
  void aTimedOutCommandLeavesTheStateAsItWas() {
    String s = create();
    out(s, "export KEEP=before; cd /");
    TestAgent.Response r = agent().post("/api/execute", obj("command", "export KEEP=changed; cd /tmp; sleep 30",
        "sessionId", s, "timeoutMs", 500));

    assertThat(r.body().get("timedOut").asBoolean()).isTrue();
    assertThat(r.body().get("exitCode").asInt()).isEqualTo(124);
    assertThat(out(s, "echo $KEEP; pwd")).isEqualTo("before\n/\n");
  }

  @Test
  void sessionsAreIsolatedFromEachOtherAndFromPlainExec() throws Exception {
    String one = create();
    String two = create("id", "second", "env", Map.of("WHO", "two"));
    assertThat(two).isEqualTo("second");
    out(one, "export WHO=one; cd /; g() { echo one; }");

    assertThat(out(two, "echo $WHO; type g >/dev/null 2>&1 || echo no-g")).isEqualTo("two\nno-g\n");
    assertThat(out(one, "echo $WHO; pwd; g")).isEqualTo("one\n/\none\n");
    TestAgent.Response plain = agent().post("/api/execute", obj("command", "echo ${WHO-none}; pwd"));
    assertThat(plain.text("stdout")).isEqualTo("none\n" + agent().workspace.toRealPath() + "\n");
  }

  @Test
  void createTakesCwdAndEnvAndARequestsOwnCwdAndEnvStayLikeCdAndExport() throws Exception {
    Files.createDirectories(agent().workspace.resolve("start/other"));
    String s = create("cwd", "start", "env", Map.of("GREETING", "hello world"));
    assertThat(out(s, "pwd; echo $GREETING")).endsWith("/start\nhello world\n");

    TestAgent.Response r = agent().post("/api/execute", obj("command", "pwd; echo $GREETING $EXTRA",
        "sessionId", s, "cwd", "start/other", "env", Map.of("GREETING", "bye", "EXTRA", "x")));
    assertThat(r.text("stdout")).endsWith("/start/other\nbye x\n");
    assertThat(out(s, "pwd; echo $GREETING $EXTRA")).endsWith("/start/other\nbye x\n");
  }

  @Test
  void commandsOfOneSessionTakeTurnsWhileOtherSessionsRunAlongside() throws Exception {
    String s = create();
    String other = create();
    String cmd = "echo start $(date +%s%N) >> turns.log; sleep 0.7; N=$((${N:-0}+1)); echo end $(date +%s%N)"
        + " >> turns.log";
    ExecutorService pool = Executors.newFixedThreadPool(3);
    try {
      long t0 = System.nanoTime();
      List<Future<TestAgent.Response>> both = new ArrayList<>();
      both.add(pool.submit(() -> run(s, cmd)));
      both.add(pool.submit(() -> run(s, cmd)));
      Future<TestAgent.Response> beside = pool.submit(() -> run(other, "sleep 0.7; echo beside"));
      for (Future<TestAgent.Response> f : both) {
        assertThat(f.get().body().get("exitCode").asInt()).isZero();
      }
      assertThat(beside.get().text("stdout")).isEqualTo("beside\n");
      assertThat(System.nanoTime() - t0).isGreaterThan(1_400_000_000L);
    } finally {
      pool.shutdownNow();
    }
    List<String> lines = Files.readAllLines(agent().workspace.resolve("turns.log"));
    assertThat(lines).extracting(l -> l.split(" ")[0]).containsExactly("start", "end", "start", "end");
    assertThat(out(s, "echo $N")).isEqualTo("2\n"); // the second saw the first's state
    Files.delete(agent().workspace.resolve("turns.log"));
  }

  @Test
  void streamingRunsInTheSessionToo() {
    String s = create();
    out(s, "export STREAMED=yes; cd /");
    try (SseReader sse = agent().stream("/api/execute/stream", obj("command", "echo $STREAMED; pwd; export AFTER=1",
        "sessionId", s))) {
      List<JsonNode> events = sse.rest();
      assertThat(events.get(0).get("type").asText()).isEqualTo("start");
      assertThat(events.get(0).get("command").asText()).isEqualTo("echo $STREAMED; pwd; export AFTER=1");
      StringBuilder text = new StringBuilder();
      events.stream().filter(e -> e.get("type").asText().equals("stdout")).forEach(e -> text.append(e.get("data").asText()));
      assertThat(text).hasToString("yes\n/\n");
      assertThat(events.get(events.size() - 1).get("exitCode").asInt()).isZero();
    }
    assertThat(out(s, "echo $AFTER")).isEqualTo("1\n");
  }

  @Test
  void argvInASessionIsQuotedNotInterpreted() {
    String s = create();
    out(s, "cd /");
    TestAgent.Response r = agent().post("/api/execute", obj("argv", List.of("printf", "%s|", "$HOME", "a b", "; pwd"),
        "sessionId", s));
    assertThat(r.text("stdout")).isEqualTo("$HOME|a b|; pwd|");
  }

  @Test
  void listGetAndDeleteAndTheStateStaysOutOfTheWorkspace() throws Exception {
    String s = create("id", "listed");
    out(s, "true");
    JsonNode got = agent().get("/api/sessions/listed").body().get("session");
    assertThat(got.get("id").asText()).isEqualTo("listed");
    assertThat(got.get("commandCount").asLong()).isEqualTo(1);
    assertThat(got.get("busy").asBoolean()).isFalse();
    assertThat(agent().get("/api/sessions").body().get("sessions")).extracting(n -> n.get("id").asText())
        .contains("listed");
    try (Stream<java.nio.file.Path> files = Files.list(agent().workspace)) {
      assertThat(files).isEmpty();
    }

    TestAgent.Response d = agent().delete("/api/sessions/listed");
    assertThat(d.status()).isEqualTo(200);
    assertThat(d.text("sessionId")).isEqualTo("listed");
    assertThat(agent().get("/api/sessions/listed").status()).isEqualTo(404);
    assertThat(agent().delete("/api/sessions/listed").text("code")).isEqualTo("SESSION_NOT_FOUND");
    TestAgent.Response gone = run("listed", "true");
    assertThat(gone.status()).isEqualTo(404);
    assertThat(gone.text("code")).isEqualTo("SESSION_NOT_FOUND");
  }

  @Test
  void deletingASessionStopsItsRunningCommand() throws Exception {
    String s = create();
    ExecutorService pool = Executors.newSingleThreadExecutor();
    try {
      long t0 = System.nanoTime();
      Future<TestAgent.Response> running = pool.submit(() -> run(s, "sleep 30"));
      assertThat(dev.sandboxsdk.testkit.Await.until(java.time.Duration.ofSeconds(10), () -> agent()
          .get("/api/sessions/" + s).body().path("session").path("busy").asBoolean())).isTrue();
      assertThat(agent().delete("/api/sessions/" + s).status()).isEqualTo(200);
      assertThat(running.get().body().get("exitCode").asInt()).isNotZero();
      assertThat(System.nanoTime() - t0).isLessThan(20_000_000_000L);
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void badRequestsAreClientErrorsThatSayWhy() {
    TestAgent.Response badId = agent().post("/api/sessions", obj("id", "../escape"));
    assertThat(badId.status()).isEqualTo(400);
    assertThat(badId.text("message")).contains("session id");
    TestAgent.Response badEnv = agent().post("/api/sessions", obj("env", Map.of("NOT-A-NAME", "x")));
    assertThat(badEnv.status()).isEqualTo(400);
    assertThat(badEnv.text("message")).contains("NOT-A-NAME");
    TestAgent.Response unknownField = agent().post("/api/sessions", obj("shell", "zsh"));
    assertThat(unknownField.status()).isEqualTo(400);
    assertThat(agent().post("/api/sessions", "{not json").status()).isEqualTo(400);
    assertThat(agent().post("/api/execute", obj("command", "true", "sessionId", "")).status()).isEqualTo(400);

    create("id", "dup");
    TestAgent.Response dup = agent().post("/api/sessions", obj("id", "dup"));
    assertThat(dup.status()).isEqualTo(409);
    assertThat(dup.text("code")).isEqualTo("SESSION_ALREADY_EXISTS");
    TestAgent.Response badExecEnv = agent().post("/api/execute", obj("command", "true", "sessionId", "dup",
        "env", Map.of("A B", "x")));
    assertThat(badExecEnv.status()).isEqualTo(400);
    TestAgent.Response unknown = agent().post("/api/execute", obj("command", "true", "sessionId", "nope"));
    assertThat(unknown.status()).isEqualTo(404);
    assertThat(unknown.text("code")).isEqualTo("SESSION_NOT_FOUND");
    assertThat(agent().post("/api/sessions", "").status()).isEqualTo(200); // every field is optional
  }

  @Test
  void theAgentHoldsAtMost64Sessions() {
    for (int i = 0; i < 64; i++) {
      create("id", "cap-" + i);
    }
    TestAgent.Response over = agent().post("/api/sessions", obj());
    assertThat(over.status()).isEqualTo(429);
    assertThat(over.text("code")).isEqualTo("TOO_MANY_SESSIONS");
    assertThat(over.text("message")).contains("64");
    agent().delete("/api/sessions/cap-0");
    create();
  }

  @Test
  void aStateOverTheLimitIsNotSavedAndTheCommandSaysSo() {
    String s = create();
    out(s, "SMALL=1");
    TestAgent.Response r = run(s, "BIG=$(head -c 1100000 /dev/zero | tr '\\0' x); SMALL=2");
    assertThat(r.body().get("exitCode").asInt()).isZero();
    assertThat(r.text("stderr")).contains("over the limit of 1048576 bytes; not saved");
    assertThat(out(s, "echo $SMALL ${#BIG}")).isEqualTo("1 0\n");
  }
}
