package dev.sandboxsdk.agent;

import static dev.sandboxsdk.agent.TestAgent.obj;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sandboxsdk.testkit.Await;
import dev.sandboxsdk.testkit.Procs;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code --command-user}: the agent runs as root with only the capabilities a container would give
 * it (CAP_SETUID, CAP_SETGID, CAP_SETPCAP, CAP_KILL: no CAP_DAC_READ_SEARCH, no CAP_SYS_PTRACE, no
 * CAP_CHOWN), and every command runs as an unused uid without a passwd entry. Needs root: skipped
 * otherwise (CI runs as root).
 */
class CommandUserIT {
  /** How a container runtime would start the agent: root, four capabilities. */
  static final List<String> CONTAINER_ROOT = List.of("setpriv", "--inh-caps=-all",
      "--bounding-set=-all,+setuid,+setgid,+setpcap,+kill", "--");
  /** The same plus CAP_CHOWN, which lets the agent give a workspace it made to the command user. */
  static final List<String> CONTAINER_ROOT_WITH_CHOWN = List.of("setpriv", "--inh-caps=-all",
      "--bounding-set=-all,+setuid,+setgid,+setpcap,+kill,+chown", "--");
  /** SIGTERM stops the JVM with 128 + 15 (the image's tini reports it as 0). */
  static final int STOPPED_BY_SIGTERM = 143;

  static long uid;
  static Path dir;
  static Path workspace;
  static LaunchedAgent agent;

  final String tag = "6" + (100_000 + ThreadLocalRandom.current().nextInt(800_000));

  @BeforeAll
  static void startAgent() throws Exception {
    assumeRootWithSetpriv();
    uid = unusedUid();
    dir = Files.createTempDirectory("command-user-it");
    // The command user must get through the path to its workspace.
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx--x--x"));
    workspace = workspaceOf(uid, "ws");
    agent = LaunchedAgent.start(CONTAINER_ROOT, Map.of(), dir.resolve("agent.log"),
        "--grace-ms", "1000", "--workspace", workspace.toString(), "--command-user", uid + ":" + uid);
  }

  /** A workspace in {@code dir} that the test (root with CAP_CHOWN) gives to {@code user}. */
  static Path workspaceOf(long user, String name) throws IOException {
    Path ws = Files.createDirectory(dir.resolve(name));
    Files.setAttribute(ws, "unix:uid", (int) user);
    Files.setAttribute(ws, "unix:gid", (int) user);
    return ws;
  }

  static void assumeRootWithSetpriv() throws Exception {
    Process id = new ProcessBuilder("id", "-u").start();
    String me = new String(id.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
    assumeTrue(me.equals("0"), "command-user mode needs the agent to run as root; `id -u` is " + me
        + " (CI runs these tests as root)");
    assumeTrue(Stream.of(System.getenv("PATH").split(":")).anyMatch(d -> Files.isExecutable(Path.of(d, "setpriv"))),
        "command-user mode needs util-linux setpriv on the PATH");
  }

  /** A uid in no passwd entry and used by no process, so the test can kill all of its processes. */
  static long unusedUid() throws IOException {
    Set<Long> used = new HashSet<>();
    for (String line : Files.readAllLines(Path.of("/etc/passwd"))) {
      String[] f = line.split(":");
      if (f.length > 3) {
        used.add(Long.parseLong(f[2]));
        used.add(Long.parseLong(f[3]));
      }
    }
    used.addAll(processUids());
    long candidate = 40_000 + ThreadLocalRandom.current().nextInt(20_000);
    while (used.contains(candidate)) {
      candidate++;
    }
    return candidate;
  }

  static Set<Long> processUids() throws IOException {
    Set<Long> uids = new HashSet<>();
    try (DirectoryStream<Path> dirs = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
      for (Path d : dirs) {
        Long u = realUid(d);
        if (u != null) {
          uids.add(u);
        }
      }
    }
    return uids;
  }

  static Long realUid(Path procDir) {
    try {
      for (String line : Files.readAllLines(procDir.resolve("status"))) {
        if (line.startsWith("Uid:")) {
          return Long.parseLong(line.substring(4).trim().split("\\s+")[0]);
        }
      }
    } catch (IOException | RuntimeException gone) {
      // exited while we looked
    }
    return null;
  }

  /** Live processes of {@code user}. */
  static List<Long> processesOf(long user) throws IOException {
    List<Long> pids = new ArrayList<>();
    try (DirectoryStream<Path> dirs = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
      for (Path d : dirs) {
        long pid = Long.parseLong(d.getFileName().toString());
        Long u = realUid(d);
        if (u != null && u == user && Procs.alive(pid)) {
          pids.add(pid);
        }
      }
    }
    return pids;
  }

  @AfterEach
  void reset() {
    if (agent != null) {
      agent.ok("DELETE", "/api/process/kill-all", null);
      agent.ok("POST", "/api/process/cleanup", null);
    }
    for (long pid : Tagged.pids(tag)) {
      ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
    }
  }

  @AfterAll
  static void stopAgent() throws Exception {
    if (agent != null) {
      agent.close();
      assertThat(agent.process.exitValue()).as(LaunchedAgent.readQuietly(agent.log)).isEqualTo(STOPPED_BY_SIGTERM);
    }
    if (dir != null) {
      try (Stream<Path> files = Files.walk(dir)) {
        files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
      }
    }
  }

  @Test
  void commandsRunAsTheUserWithoutAnyCapabilityAndWithNoNewPrivs() {
    JsonNode r = agent.exec(obj("command", "id -u; id -g; id -G; echo HOME=$HOME;"
        + " grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status"));

    assertThat(r.get("exitCode").asInt()).as(r.toString()).isZero();
    List<String> lines = List.of(r.get("stdout").asText().split("\n"));
    assertThat(lines.subList(0, 4)).containsExactly(String.valueOf(uid), String.valueOf(uid), String.valueOf(uid), "HOME=/");
    assertThat(lines.subList(4, lines.size())).containsExactly(
        "CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000",
        "CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1");
  }

  @Test
  void commandsCanNeitherReadTheAgentsEnvironmentNorSignalIt() {
    JsonNode r = agent.exec(obj("command", "cat /proc/" + agent.pid + "/environ; echo read=$?;"
        + " kill -0 " + agent.pid + "; echo signal=$?; kill -STOP " + agent.pid + "; echo stop=$?"));

    assertThat(r.get("stdout").asText()).doesNotContain(LaunchedAgent.TOKEN)
        .contains("read=1").contains("signal=1").contains("stop=1");
    assertThat(r.get("stderr").asText()).contains("Permission denied").contains("Operation not permitted");
    assertThat(agent.ok("GET", "/api/ping", null).get("status").asText()).isEqualTo("healthy");
  }

  @Test
  void commandsReopenTheirOwnStdinStdoutAndStderrByNameAndOwnWhatTheyWrite() throws IOException {
    JsonNode r = agent.exec(obj("command", "cat /dev/stdin | tr a-z A-Z; echo out > /dev/stdout; echo err > /dev/stderr;"
        + " cat /dev/stdin; echo again=$?; touch made-here", "stdin", "hello\n"));

    assertThat(r.get("stdout").asText()).isEqualTo("HELLO\nout\nagain=0\n");
    assertThat(r.get("stderr").asText()).isEqualTo("err\n");
    assertThat(r.get("exitCode").asInt()).isZero();
    assertThat(Files.getAttribute(workspace.resolve("made-here"), "unix:uid")).isEqualTo((int) uid);
  }

  @Test
  void aDirectoryOnlyTheUserMayEnterWorksAsTheWorkingDirectory() {
    // The root agent has no CAP_DAC_READ_SEARCH: it cannot look into 'private', the user can.
    agent.exec(obj("command", "mkdir private && printf '#!/bin/sh\\necho ran in $(pwd)\\n' > private/run.sh"
        + " && chmod 700 private/run.sh private"));

    JsonNode r = agent.exec(obj("argv", List.of("./run.sh"), "cwd", "private"));

    assertThat(r.get("stdout").asText()).as(r.toString()).isEqualTo("ran in " + workspace.resolve("private") + "\n");
  }

  @Test
  void anExecStreamRunsAsTheUser() {
    try (SseReader sse = agent.stream("/api/execute/stream", obj("command", "id -u; sleep 0.1; echo e >&2; exit 3"))) {
      List<JsonNode> events = sse.rest();
      assertThat(events).extracting(e -> e.get("type").asText()).containsExactly("start", "stdout", "stderr", "complete");
      assertThat(events.get(1).get("data").asText()).isEqualTo(uid + "\n");
      assertThat(events.get(3).get("exitCode").asInt()).isEqualTo(3);
    }
  }

  @Test
  void aBackgroundProcessTakesStdinAndIsKilledWithItsGroup() throws Exception {
    JsonNode started = agent.ok("POST", "/api/process/start", obj("command", "id -u; cat /dev/stdin; sleep " + tag + ".1 & wait",
        "processId", "bg", "stdin", "pipe"));
    long pgid = started.get("pid").asLong();
    agent.ok("POST", "/api/process/bg/stdin", obj("data", "via pipe\n", "eof", true));
    assertThat(Await.until(5_000, () -> agent.ok("GET", "/api/process/bg/logs", null).get("stdout").asText()
        .equals(uid + "\nvia pipe\n"))).as(agent.ok("GET", "/api/process/bg/logs", null).toString()).isTrue();
    assertThat(Await.until(5_000, () -> Tagged.sleeps(tag) == 1)).isTrue();

    JsonNode killed = agent.ok("DELETE", "/api/process/bg", null);

    assertThat(killed.get("signal").asText()).isEqualTo("SIGTERM");
    assertThat(Await.until(5_000, () -> Procs.groupMembers(pgid).isEmpty())).isTrue();
    assertThat(Await.until(5_000, () -> agent.ok("GET", "/api/process/bg", null).get("process").get("status").asText()
        .equals("killed"))).isTrue();
  }

  @Test
  void aTimeoutStopsTheCommand() {
    JsonNode r = agent.exec(obj("command", "sleep " + tag + ".2", "timeoutMs", 300));

    assertThat(r.get("timedOut").asBoolean()).isTrue();
    assertThat(r.get("exitCode").asInt()).isEqualTo(124);
    assertThat(r.get("duration").asLong()).isLessThan(5_000);
    assertThat(Tagged.sleeps(tag)).isZero();
  }

  @Test
  void processesThatLeftTheirGroupAreFoundAsTheUserAndKilled() throws Exception {
    String escaping = "setsid sleep " + tag + ".11 & set -m; sleep " + tag + ".12 & (sleep " + tag + ".13 &); sleep " + tag + ".14";
    agent.ok("POST", "/api/process/start", obj("command", escaping, "processId", "target"));
    agent.ok("POST", "/api/process/start", obj("command", escaping.replace(tag + ".1", tag + ".2"), "processId", "bystander"));
    assertThat(Await.until(10_000, () -> Tagged.sleeps(tag) == 8)).as("started: %s", Tagged.pids(tag)).isTrue();

    agent.ok("DELETE", "/api/process/target", null);

    assertThat(Await.until(5_000, () -> Tagged.sleeps(tag) == 4)).as("left: %s", Tagged.sleepPids(tag)).isTrue();
    for (long pid : Tagged.sleepPids(tag)) {
      assertThat(Tagged.cmdline(pid)).contains(tag + ".2");
    }

    agent.ok("DELETE", "/api/process/kill-all", null);

    assertThat(Await.until(5_000, () -> Tagged.sleeps(tag) == 0)).as("left: %s", Tagged.sleepPids(tag)).isTrue();
  }

  @Test
  void versionReportsTheCommandUser() {
    JsonNode v = agent.ok("GET", "/api/version", null);

    assertThat(v.get("commandUser").get("uid").asLong()).isEqualTo(uid);
    assertThat(v.get("commandUser").get("gid").asLong()).isEqualTo(uid);
    assertThat(v.get("commandUser").get("home").asText()).isEqualTo("/");
    assertThat(v.get("commandUser").has("name")).isFalse();
    assertThat(v.get("limits").get("idleTimeoutMs").asLong()).isZero();
  }

  @Test
  void shutdownStopsEveryProcessOfTheUserAndANewWorkspaceIsGivenToTheUser() throws Exception {
    long other = unusedUid();
    Path ws = dir.resolve("made-by-agent-" + other);
    LaunchedAgent own = LaunchedAgent.start(CONTAINER_ROOT_WITH_CHOWN, Map.of(), dir.resolve("own.log"),
        "--grace-ms", "500", "--workspace", ws.toString(), "--command-user", other + ":" + other);
    try {
      assertThat(own.exec(obj("command", "touch mine && echo ok")).get("stdout").asText()).isEqualTo("ok\n");
      assertThat(Files.getAttribute(ws, "unix:uid")).isEqualTo((int) other);
      // One without the marker (env -i) that left its group, one that ignores SIGTERM.
      own.ok("POST", "/api/process/start", obj("command", "setsid env -i sleep " + tag + ".31 &"
          + " (trap '' TERM; exec setsid sleep " + tag + ".32) & sleep " + tag + ".33"));
      assertThat(Await.until(10_000, () -> Tagged.sleeps(tag) == 3)).isTrue();
      assertThat(processesOf(other)).hasSizeGreaterThanOrEqualTo(4);
    } finally {
      own.process.destroy(); // SIGTERM
    }

    assertThat(own.awaitExit(20_000)).as(LaunchedAgent.readQuietly(own.log)).isEqualTo(STOPPED_BY_SIGTERM);
    assertThat(Tagged.sleeps(tag)).isZero();
    assertThat(processesOf(other)).isEmpty();
  }

  @Test
  void theWatchdogStopsTheUsersProcessesWhenTheAgentIsKilled() throws Exception {
    long other = unusedUid();
    Path ws = workspaceOf(other, "watchdog-" + other);
    LaunchedAgent own = LaunchedAgent.start(CONTAINER_ROOT, Map.of(), dir.resolve("watchdog.log"),
        "--workspace", ws.toString(), "--command-user", other + ":" + other);
    own.ok("POST", "/api/process/start", obj("command", "setsid env -i sleep " + tag + ".41 & sleep " + tag + ".42"));
    own.exec(obj("command", "(setsid sleep " + tag + ".43 &); echo left behind"));
    assertThat(Await.until(10_000, () -> Tagged.sleeps(tag) == 3)).isTrue();

    own.process.destroyForcibly(); // SIGKILL: no shutdown hook

    assertThat(own.awaitExit(10_000)).isEqualTo(137);
    assertThat(Await.until(5_000, () -> Tagged.sleeps(tag) == 0)).as("left: %s", Tagged.sleepPids(tag)).isTrue();
    assertThat(processesOf(other)).isEmpty();
  }

  @Test
  void anUnknownUserOrOneWithoutItsGroupIsRefusedWithOneLine() throws Exception {
    assertRefused(CONTAINER_ROOT, Map.of(), "no-such-user-x1",
        "container-agent: cannot start: --command-user no-such-user-x1: no such user in /etc/passwd");
    long free = unusedUid();
    assertRefused(CONTAINER_ROOT, Map.of(), String.valueOf(free), "container-agent: cannot start: --command-user " + free
        + ": uid " + free + " has no entry in /etc/passwd; give its group as well (--command-user " + free + ":GID)");
  }

  @Test
  void anAgentThatCannotSwitchUsersIsRefusedWithOneLine() throws Exception {
    long agentUid = unusedUid();
    // Not root: setpriv cannot change the groups or the uid.
    String line = assertRefused(List.of("setpriv", "--reuid=" + agentUid, "--regid=" + agentUid, "--clear-groups", "--"),
        Map.of(), unusedUid() + ":" + agentUid, null);
    assertThat(line).startsWith("container-agent: cannot start: --command-user ")
        .contains("the agent cannot switch to uid").contains("setpriv: ")
        .endsWith("the agent must run as root with CAP_SETUID, CAP_SETGID and CAP_SETPCAP");
    // Root, but without CAP_SETPCAP it cannot empty the commands' bounding set.
    line = assertRefused(List.of("setpriv", "--inh-caps=-all", "--bounding-set=-all,+setuid,+setgid,+kill", "--"),
        Map.of(), agentUid + ":" + agentUid, null);
    assertThat(line).contains("the agent cannot switch to uid " + agentUid + " (it would keep CapBnd 00000000000000e0)");
  }

  @Test
  void aWorkspaceTheAgentMustMakeButCannotGiveAwayIsRefusedWithOneLine() throws Exception {
    long other = unusedUid();
    Path ws = dir.resolve("cannot-chown-" + other);
    Path log = dir.resolve("cannot-chown.log");
    Process p = LaunchedAgent.launch(CONTAINER_ROOT, Map.of(), log, "--workspace", ws.toString(),
        "--command-user", other + ":" + other);
    assertThat(p.waitFor(30, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).isEqualTo(1);
    assertThat(Files.readString(log).strip()).isEqualTo("container-agent: cannot start: --command-user: cannot give the new"
        + " workspace " + ws + " to uid " + other + " (" + ws + ": Operation not permitted); pass --workspace with a"
        + " directory that user owns");
  }

  @Test
  void anAgentWithoutSetprivIsRefusedWithOneLine() throws Exception {
    Path bin = Files.createDirectories(dir.resolve("bin-without-setpriv"));
    for (String tool : List.of("setsid", "kill", "env", "grep", "mkfifo", "sh", "tr", "sleep", "true", "test")) {
      for (String d : System.getenv("PATH").split(":")) {
        Path p = Path.of(d, tool);
        if (Files.isExecutable(p) && Files.notExists(bin.resolve(tool))) {
          Files.createSymbolicLink(bin.resolve(tool), p);
        }
      }
    }
    assertRefused(CONTAINER_ROOT, Map.of("PATH", bin.toString()), unusedUid() + ":1",
        "container-agent: cannot start: --command-user needs setpriv(1) on the agent's PATH (Debian/Ubuntu: util-linux)");
  }

  /** Starts an agent that must refuse to start; checks its whole stderr is one line (equal to {@code expected} if given). */
  static String assertRefused(List<String> prefix, Map<String, String> env, String user, String expected) throws Exception {
    Path log = Files.createTempFile(dir, "refused", ".log");
    // Open to all, so that an agent that is not root gets as far as switching users.
    Path ws = Files.createTempDirectory(dir, "refused-ws");
    Files.setPosixFilePermissions(ws, PosixFilePermissions.fromString("rwxrwxrwx"));
    Process p = LaunchedAgent.launch(prefix, env, log, "--workspace", ws.toString(), "--command-user", user);
    assertThat(p.waitFor(30, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
    String err = Files.readString(log);
    assertThat(p.exitValue()).as(err).isEqualTo(1);
    assertThat(p.getInputStream().readAllBytes()).as("nothing on stdout").isEmpty();
    assertThat(err.lines()).as(err).hasSize(1);
    if (expected != null) {
      assertThat(err.strip()).isEqualTo(expected);
    }
    return err.strip();
  }
}
