package dev.sandboxsdk.agent;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sandboxsdk.testkit.Await;
import dev.sandboxsdk.testkit.Procs;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The packaged agent started with a known environment, the way an operator or the SDK starts it:
 * what commands see of that environment, and that no command outlives the agent, however the
 * agent ends and however the command tries to leave its process group.
 */
class ProcessLifetimeIT {
  static final String TOKEN = "lifetime-token-0123456789";

  @TempDir Path dir;
  final List<Process> started = new ArrayList<>();
  final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  /** Every sleep a test starts carries this in its argument, so the test finds exactly its own. */
  final String tag = "8" + (100_000 + ThreadLocalRandom.current().nextInt(800_000));

  @AfterEach
  void cleanUp() throws Exception {
    for (Process p : started) {
      p.destroyForcibly();
      p.waitFor(10, TimeUnit.SECONDS);
    }
    for (long pid : tagged()) { // whatever a failed test left behind
      ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
    }
  }

  /** Starts the agent jar with exactly {@code env} (plus the token) and waits for its ready line. */
  URI launch(Map<String, String> env, String... args) throws IOException {
    List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-jar", AgentProcessIT.JAR.toAbsolutePath().toString(), "--port", "0", "--bind", "127.0.0.1"));
    cmd.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile())
        .redirectError(dir.resolve("agent-" + started.size() + ".log").toFile());
    pb.environment().clear();
    pb.environment().putAll(env);
    pb.environment().put(Main.TOKEN_ENV, TOKEN);
    Process p = pb.start();
    started.add(p);
    return URI.create(AgentProcessIT.awaitReady(p).get("url").asText());
  }

  JsonNode call(String method, URI base, String path, String body) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve(path)).header("Authorization", "Bearer " + TOKEN)
        .timeout(Duration.ofSeconds(30));
    b = body == null ? b.method(method, HttpRequest.BodyPublishers.noBody())
        : b.method(method, HttpRequest.BodyPublishers.ofString(body));
    HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return TestAgent.JSON.readTree(r.body());
  }

  static Map<String, String> baseEnv() {
    Map<String, String> env = new LinkedHashMap<>();
    env.put("PATH", System.getenv().getOrDefault("PATH", "/usr/bin:/bin"));
    env.put("HOSTSECRET", "s3cret-db-password");
    env.put("SANDBOX_MCP_TOKEN", "mcp-token-value");
    env.put("KEEP_ME", "kept");
    return env;
  }

  /** Names and values of the environment of {@code env} run without a shell (which adds PWD). */
  Map<String, String> commandEnv(URI agent, String requestEnv) throws Exception {
    JsonNode r = call("POST", agent, "/api/execute", "{\"argv\":[\"env\"]" + requestEnv + "}");
    Map<String, String> vars = new LinkedHashMap<>();
    for (String line : r.get("stdout").asText().split("\n")) {
      int eq = line.indexOf('=');
      if (eq > 0) {
        vars.put(line.substring(0, eq), line.substring(eq + 1));
      }
    }
    return vars;
  }

  @Test
  void commandsGetOnlyTheDocumentedVariablesPlusNamedOnesAndTheRequestsOwn() throws Exception {
    Path ws = dir.resolve("ws");
    URI agent = launch(baseEnv(), "--workspace", ws.toString(), "--inherit-env", "KEEP_ME,NOT_SET",
        "--inherit-env=SANDBOX_MCP_TOKEN");

    Map<String, String> env = commandEnv(agent, "");
    assertThat(new TreeSet<>(env.keySet())).containsExactly("HOME", "KEEP_ME", "LANG", "PATH",
        "SANDBOX_AGENT_RUN", "SANDBOX_MCP_TOKEN", "SANDBOX_WORKSPACE", "TERM", "TMPDIR");
    assertThat(env).containsEntry("PATH", baseEnv().get("PATH")).containsEntry("KEEP_ME", "kept")
        .containsEntry("LANG", "C.UTF-8").containsEntry("TERM", "dumb").containsEntry("TMPDIR", "/tmp")
        .containsEntry("SANDBOX_WORKSPACE", ws.toString());
    assertThat(env.get("SANDBOX_AGENT_RUN")).matches("[0-9a-f]{16}\\.[0-9]+");

    // The request's own variables win, a null removes, and the marker cannot be changed.
    Map<String, String> mine = commandEnv(agent,
        ",\"env\":{\"EXTRA\":\"1\",\"HOME\":null,\"LANG\":\"de_DE.UTF-8\",\"SANDBOX_AGENT_RUN\":\"x\"}");
    assertThat(mine).containsEntry("EXTRA", "1").containsEntry("LANG", "de_DE.UTF-8").doesNotContainKey("HOME");
    assertThat(mine.get("SANDBOX_AGENT_RUN")).startsWith(env.get("SANDBOX_AGENT_RUN").split("\\.")[0] + ".");
  }

  @Test
  void withoutInheritEnvNothingOfTheAgentsEnvironmentButTheBaseReachesACommand() throws Exception {
    Map<String, String> agentEnv = baseEnv();
    agentEnv.put("HOME", dir.toString());
    agentEnv.put("LC_ALL", "C.UTF-8");
    URI agent = launch(agentEnv, "--workspace", dir.resolve("ws").toString());

    JsonNode r = call("POST", agent, "/api/execute", "{\"command\":\"env; cat /proc/$$/environ | tr '\\\\0' '\\\\n'\"}");
    String out = r.get("stdout").asText();
    assertThat(out).doesNotContain("HOSTSECRET", "s3cret", "SANDBOX_MCP_TOKEN", "KEEP_ME", Main.TOKEN_ENV, TOKEN)
        .contains("HOME=" + dir, "LC_ALL=C.UTF-8");
  }

  @Test
  void theTokenVariableCannotBeInherited() throws Exception {
    ProcessBuilder pb = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-jar", AgentProcessIT.JAR.toAbsolutePath().toString(), "--inherit-env", "PATH," + Main.TOKEN_ENV)
        .directory(dir.toFile());
    pb.environment().put(Main.TOKEN_ENV, TOKEN);
    Process p = pb.start();
    started.add(p);
    assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).isEqualTo(2);
    assertThat(new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8))
        .contains("--inherit-env: " + Main.TOKEN_ENV + " holds the agent's token");
  }

  @Test
  void withoutWorkspaceOptionCommandsRunInAFreshEmptyDirectoryNotTheCurrentOne() throws Exception {
    Files.writeString(dir.resolve("checkout-file.txt"), "not for commands");
    URI agent = launch(baseEnv());

    JsonNode r = call("POST", agent, "/api/execute", "{\"command\":\"pwd; ls -A\"}");
    String[] lines = r.get("stdout").asText().split("\n");
    Path cwd = Path.of(lines[0]);
    assertThat(cwd).isNotEqualTo(dir.toRealPath()).isNotEqualTo(dir);
    assertThat(lines).hasSize(1); // nothing in it
    assertThat(cwd.getFileName().toString()).startsWith("sandbox-agent-workspace-");
    assertThat(Files.readString(dir.resolve("agent-0.log"))).contains(cwd.toString());
    Files.deleteIfExists(cwd);
  }

  /**
   * 17 commands, several with children, one with children that left the group with setsid and
   * with job control; foreground execs among them. The kernel's OOM killer SIGKILLs the agent.
   */
  @Test
  void noCommandOutlivesAnAgentThatIsKilled() throws Exception {
    URI agent = launch(baseEnv(), "--workspace", dir.resolve("ws").toString());
    int expected = startSeventeenCommands(agent);
    assertThat(Await.until(10_000, () -> sleeps() == expected)).as("all started: " + tagged()).isTrue();

    long watchdog = watchdogOf(started.get(0).pid());
    long before = System.nanoTime();
    started.get(0).destroyForcibly(); // SIGKILL: no shutdown hook runs
    assertThat(started.get(0).waitFor(10, TimeUnit.SECONDS)).isTrue();

    boolean gone = Await.until(5_000, () -> tagged().isEmpty());
    long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - before);
    assertThat(gone).as("survivors %s after %d ms", tagged(), ms).isTrue();
    assertThat(Await.until(5_000, () -> !Procs.alive(watchdog))).as("the watchdog exits after its sweep").isTrue();
  }

  @Test
  void shutdownStopsProcessesThatLeftTheirGroup() throws Exception {
    URI agent = launch(baseEnv(), "--workspace", dir.resolve("ws").toString(), "--grace-ms", "1000");
    call("POST", agent, "/api/process/start", "{\"command\":\"setsid sleep " + tag + ".1 & set -m; sleep " + tag
        + ".2 & sleep " + tag + ".3\"}");
    assertThat(Await.until(10_000, () -> sleeps() == 3)).as("started: " + tagged()).isTrue();

    long watchdog = watchdogOf(started.get(0).pid());

    started.get(0).destroy(); // SIGTERM: orderly shutdown
    assertThat(started.get(0).waitFor(20, TimeUnit.SECONDS)).isTrue();

    assertThat(tagged()).as("left after shutdown").isEmpty();
    assertThat(Procs.alive(watchdog)).as("the agent's watchdog is gone with it").isFalse();
  }

  /** The pid of the agent's watchdog: its child running the watchdog script. */
  static long watchdogOf(long agentPid) {
    List<Long> found = ProcessHandle.of(agentPid).orElseThrow().children()
        .filter(c -> Tagged.cmdline(c.pid()).contains("sandbox-agent-watchdog")).map(ProcessHandle::pid).toList();
    assertThat(found).as("the agent's watchdog").hasSize(1);
    return found.get(0);
  }

  private int startSeventeenCommands(URI agent) throws Exception {
    int n = 0;
    for (int i = 0; i < 10; i++) { // 10 background: leader + a child each
      call("POST", agent, "/api/process/start", "{\"command\":\"sleep " + tag + "." + i + "1 & sleep " + tag + "." + i
          + "2\"}");
      n += 2;
    }
    for (int i = 0; i < 2; i++) { // 2 that leave their group
      call("POST", agent, "/api/process/start", "{\"command\":\"setsid sleep " + tag + ".5" + i + " & set -m; sleep "
          + tag + ".6" + i + " & (sleep " + tag + ".7" + i + " &) ; sleep " + tag + ".8" + i + "\"}");
      n += 4;
    }
    for (int i = 0; i < 5; i++) { // 5 foreground execs, still running
      HttpRequest req = HttpRequest.newBuilder(agent.resolve("/api/execute")).header("Authorization", "Bearer " + TOKEN)
          .POST(HttpRequest.BodyPublishers.ofString("{\"command\":\"sleep " + tag + ".9" + i + " & wait\"}")).build();
      http.sendAsync(req, HttpResponse.BodyHandlers.discarding());
      n += 2; // sh and sleep
    }
    return n - 5; // n counted the execs' shells too
  }

  long sleeps() {
    return Tagged.sleeps(tag);
  }

  List<Long> tagged() {
    return Tagged.pids(tag);
  }
}
