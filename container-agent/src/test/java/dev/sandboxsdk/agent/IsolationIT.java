package dev.sandboxsdk.agent;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code --isolation}: what the agent reports, and how it starts where bwrap cannot be used (a
 * PATH of its own without bwrap stands in for a machine without it). What isolated commands can
 * see and do is tested through the SDK (LocalSandboxIsolationIT, LocalSandboxIsolatedContractIT).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class IsolationIT {
  @TempDir
  Path dir;

  @Test
  void bwrapIsReportedInTheReadyLineAndVersionAndCommandsRunInIt() throws Exception {
    try (LaunchedAgent agent = LaunchedAgent.start(List.of(), Map.of(), dir.resolve("agent.log"),
        "--workspace", dir.resolve("ws").toString(), "--isolation", "bwrap")) {
      JsonNode version = agent.ok("GET", "/api/version", null);
      assertThat(version.path("isolation").path("mode").asText()).isEqualTo("bwrap");
      assertThat(version.path("isolation").path("network").asBoolean(true)).isFalse();
      JsonNode r = agent.exec("{\"command\":\"hostname; ls /proc | grep -c '^[0-9]'\"}");
      assertThat(r.path("stdout").asText()).startsWith("sandbox\n");
      assertThat(Integer.parseInt(r.path("stdout").asText().split("\n")[1])).isLessThanOrEqualTo(4);
    }
  }

  @Test
  void commandsShareOneLoopbackAndTmpAndBackgroundProcessesOutliveTheThreadThatStartedThem() throws Exception {
    try (LaunchedAgent agent = LaunchedAgent.start(List.of(), Map.of(), dir.resolve("agent.log"),
        "--workspace", dir.resolve("ws").toString(), "--isolation", "bwrap")) {
      sharedLoopbackAndTmp(agent, "0");
    }
  }

  /**
   * The same for an agent that is not root: bwrap then makes a user namespace with the shared
   * network's holder, which each command must enter first (nsenter --user --preserve-credentials).
   */
  @Test
  void anUnprivilegedAgentSharesTheLoopbackToo() throws Exception {
    org.junit.jupiter.api.Assumptions.assumeTrue("root".equals(System.getProperty("user.name")),
        "runs the agent as nobody through setpriv, which needs root; as another user the test above covers it");
    try (LaunchedAgent agent = LaunchedAgent.startAsNobody(dir, "--isolation", "bwrap")) {
      sharedLoopbackAndTmp(agent, "65534");
    }
  }

  private static void sharedLoopbackAndTmp(LaunchedAgent agent, String uid) throws Exception {
    String server = "import socket\n"
        + "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
        + "open('port', 'w').write(str(s.getsockname()[1]))\n"
        + "while True:\n    c, _ = s.accept(); c.sendall(b'hello from the server'); c.close()\n";
    JsonNode started = agent.ok("POST", "/api/process/start",
        "{\"command\":\"python3 -c \\\"$SERVER\\\"\",\"env\":{\"SERVER\":" + TestAgent.JSON.writeValueAsString(server) + "}}");
    String id = started.path("processId").asText();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    JsonNode r;
    do {
      Thread.sleep(100);
      r = agent.exec("{\"command\":\"python3 -c \\\"import socket; c = socket.create_connection(('127.0.0.1', int(open('port').read())), 5);"
          + " print(c.recv(100).decode())\\\"\"}");
    } while (r.path("exitCode").asInt() != 0 && System.nanoTime() < deadline);
    assertThat(r.path("stdout").asText()).as("%s", r).isEqualTo("hello from the server\n");
    JsonNode write = agent.exec("{\"command\":\"echo kept > /tmp/t && id -u && grep CapEff /proc/self/status"
        + " && (touch /usr/x 2>&1 || true)\"}");
    assertThat(write.path("stdout").asText()).startsWith(uid + "\nCapEff:\t0000000000000000\n")
        .contains("Read-only file system");
    assertThat(agent.exec("{\"command\":\"cat /tmp/t\"}").path("stdout").asText()).isEqualTo("kept\n");
    // The request threads that started the server ended after 5 idle seconds; a PR_SET_PDEATHSIG
    // set by bwrap --die-with-parent would have killed it with them.
    Thread.sleep(7_000);
    assertThat(agent.ok("GET", "/api/process/" + id, null).path("process").path("status").asText()).isEqualTo("running");
    JsonNode outside = agent.exec("{\"command\":\"python3 -c \\\"import socket; socket.create_connection(('1.1.1.1', 80), 3)\\\"\"}");
    assertThat(outside.path("exitCode").asInt()).isNotZero();
    assertThat(outside.path("stderr").asText()).contains("Network is unreachable");
  }

  @Test
  void aKilledNetworkHolderIsReplacedAndCommandsKeepRunning() throws Exception {
    Path log = dir.resolve("holder.log");
    try (LaunchedAgent agent = LaunchedAgent.start(List.of(), Map.of(), log,
        "--workspace", dir.resolve("ws").toString(), "--isolation", "bwrap")) {
      ProcessHandle holder = holder(agent.pid).orElseThrow();
      long inside = holder.descendants().reduce((a, b) -> b).orElseThrow().pid(); // the sleep that holds it
      String before = Files.readSymbolicLink(Path.of("/proc", Long.toString(inside), "ns", "net")).toString();
      // Only a host process can do this (commands cannot see the holder): kill it.
      holder.destroyForcibly();
      assertThat(holder.onExit().get(10, TimeUnit.SECONDS).isAlive()).isFalse();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      java.util.Optional<ProcessHandle> next = holder(agent.pid);
      while ((next.isEmpty() || next.get().pid() == holder.pid()) && System.nanoTime() < deadline) {
        Thread.sleep(50);
        next = holder(agent.pid);
      }
      assertThat(next).as("a new holder").isPresent();
      JsonNode r = agent.exec("{\"command\":\"readlink /proc/self/ns/net; python3 -c \\\"import socket; s = socket.socket();"
          + " s.bind(('127.0.0.1', 0)); s.listen(); socket.create_connection(s.getsockname(), 5); print('loopback up')\\\"\"}");
      assertThat(r.path("stdout").asText()).as("%s", r).doesNotContain(before).endsWith("\nloopback up\n")
          .startsWith("net:[");
      assertThat(Files.readString(log)).contains("the network namespace's holder (pid " + holder.pid() + ") ended");
    }
  }

  /** The agent's child that holds the sandbox's network namespace. */
  private static java.util.Optional<ProcessHandle> holder(long agentPid) {
    return ProcessHandle.of(agentPid).orElseThrow().children()
        .filter(p -> p.info().arguments().map(a -> List.of(a).contains("--unshare-net")).orElse(false))
        .findFirst();
  }

  /**
   * A cwd or program outside what the sandbox sees: the answer is the same whether the host has
   * it or not (bubblewrap, inside the sandbox's view, says it is not there), so exec is no oracle
   * for the host's hidden paths.
   */
  @Test
  void aCwdOrProgramHiddenFromTheSandboxIsAnsweredAlikeWhetherTheHostHasItOrNot() throws Exception {
    Path hidden = Files.createDirectories(dir.resolve("hidden/inner"));
    Path program = Files.writeString(hidden.resolve("prog"), "#!/bin/sh\necho ran\n");
    program.toFile().setExecutable(true);
    try (LaunchedAgent agent = LaunchedAgent.start(List.of(), Map.of(), dir.resolve("agent.log"),
        "--workspace", dir.resolve("ws").toString(), "--isolation", "bwrap")) {
      // Under the test's /tmp (the sandbox has its own /tmp) and outside everything it binds.
      String[][] pairs = {{hidden.toString(), dir.resolve("hidden/missing").toString()},
          {hidden.getParent().toString(), dir.resolve("nothing-here").toString()}, {"/root", "/no-such-dir-here"}};
      for (String[] pair : pairs) {
        TestAgent.Response there = agent.call("POST", "/api/execute",
            "{\"command\":\"echo ran\",\"cwd\":" + TestAgent.JSON.writeValueAsString(pair[0]) + "}");
        TestAgent.Response missing = agent.call("POST", "/api/execute",
            "{\"command\":\"echo ran\",\"cwd\":" + TestAgent.JSON.writeValueAsString(pair[1]) + "}");
        assertThat(there.status()).as("%s", there.body()).isEqualTo(200).isEqualTo(missing.status());
        assertThat(there.body().path("exitCode").asInt()).isNotZero().isEqualTo(missing.body().path("exitCode").asInt());
        assertThat(there.body().path("stdout").asText()).isEmpty();
      }
      TestAgent.Response there = agent.call("POST", "/api/execute",
          "{\"argv\":[" + TestAgent.JSON.writeValueAsString(program.toString()) + "]}");
      TestAgent.Response missing = agent.call("POST", "/api/execute",
          "{\"argv\":[" + TestAgent.JSON.writeValueAsString(hidden.resolve("nope").toString()) + "]}");
      assertThat(there.status()).as("%s", there.body()).isEqualTo(missing.status());
      assertThat(there.body().path("exitCode").asInt()).isEqualTo(missing.body().path("exitCode").asInt()).isNotZero();
      TestAgent.Response hostDir = agent.call("POST", "/api/execute", "{\"argv\":[\"/root\"]}");
      TestAgent.Response nowhere = agent.call("POST", "/api/execute", "{\"argv\":[\"/no-such-dir-here/prog\"]}");
      assertThat(hostDir.status()).as("a host path the sandbox lacks: %s", hostDir.body()).isEqualTo(404)
          .isEqualTo(nowhere.status());
      assertThat(agent.call("POST", "/api/execute", "{\"argv\":[\"no-such-program-here\"]}").status())
          .as("PATH entries the sandbox lacks are passed over; a program found nowhere is refused").isEqualTo(404);
      assertThat(agent.call("POST", "/api/execute", "{\"argv\":[\"/usr/bin/no-such-program\"]}").status())
          .as("where the sandbox sees the host's files, a missing program is still refused up front").isEqualTo(404);
    }
  }

  @Test
  void noneIsTheDefaultAndHasTheHostsNetwork() throws Exception {
    try (LaunchedAgent agent = LaunchedAgent.start(List.of(), Map.of(), dir.resolve("agent.log"),
        "--workspace", dir.resolve("ws").toString())) {
      JsonNode version = agent.ok("GET", "/api/version", null);
      assertThat(version.path("isolation").path("mode").asText()).isEqualTo("none");
      assertThat(version.path("isolation").path("network").asBoolean(false)).isTrue();
    }
  }

  @Test
  void withoutBwrapOnThePathBwrapRefusesToStartAndAutoFallsBackSayingWhy() throws Exception {
    Path bin = Files.createDirectories(dir.resolve("bin"));
    for (String tool : List.of("setsid", "kill", "env", "mkfifo", "grep", "sh")) {
      Path real = Path.of("/usr/bin", tool);
      Files.createSymbolicLink(bin.resolve(tool), Files.exists(real) ? real : Path.of("/bin", tool));
    }
    Map<String, String> env = Map.of("PATH", bin.toString());
    Path log = dir.resolve("refused.log");
    Process refused = LaunchedAgent.launch(List.of(), env, log, "--workspace", dir.resolve("ws").toString(),
        "--isolation", "bwrap");
    assertThat(refused.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(refused.exitValue()).isEqualTo(1);
    assertThat(Files.readString(log)).contains(
        "container-agent: cannot start: --isolation bwrap: bwrap is not on the agent's PATH"
            + " (Debian/Ubuntu: apt-get install bubblewrap)");

    Process auto = LaunchedAgent.launch(List.of(), env, dir.resolve("auto.log"), "--workspace",
        dir.resolve("ws").toString(), "--isolation", "auto");
    try {
      BufferedReader out = new BufferedReader(new InputStreamReader(auto.getInputStream(), StandardCharsets.UTF_8));
      String line = out.readLine();
      assertThat(line).as("ready line; log: %s", LaunchedAgent.readQuietly(dir.resolve("auto.log")))
          .startsWith(Main.READY_PREFIX);
      JsonNode ready = TestAgent.JSON.readTree(line.substring(Main.READY_PREFIX.length()));
      assertThat(ready.path("isolation").asText()).isEqualTo("none");
      assertThat(ready.path("isolationUnavailable").asText()).startsWith("bwrap is not on the agent's PATH");
      assertThat(Files.readString(dir.resolve("auto.log")))
          .containsOnlyOnce("--isolation auto: bwrap is not on the agent's PATH");
    } finally {
      auto.destroy();
      auto.waitFor(20, TimeUnit.SECONDS);
    }
  }

  /**
   * A bwrap that is there but does not start in time (a loaded machine, or a command loading it)
   * must not turn {@code auto} into no isolation: the start fails and says why.
   */
  @Test
  void autoDoesNotFallBackToNoIsolationWhenBwrapOnlyStartsTooSlowly() throws Exception {
    Path bin = Files.createDirectories(dir.resolve("slow-bin"));
    for (String tool : List.of("setsid", "kill", "env", "mkfifo", "grep", "sh", "sleep", "nsenter")) {
      Path real = Path.of("/usr/bin", tool);
      Files.createSymbolicLink(bin.resolve(tool), Files.exists(real) ? real : Path.of("/bin", tool));
    }
    Path fake = bin.resolve("bwrap");
    Files.writeString(fake, "#!/bin/sh\nexec sleep 20\n");
    Files.setPosixFilePermissions(fake, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
    Path log = dir.resolve("slow.log");
    Process auto = LaunchedAgent.launch(List.of(), Map.of("PATH", bin.toString()), log, "--workspace",
        dir.resolve("ws").toString(), "--isolation", "auto");
    try {
      assertThat(auto.waitFor(90, TimeUnit.SECONDS)).as("log: %s", LaunchedAgent.readQuietly(log)).isTrue();
      assertThat(auto.exitValue()).isEqualTo(1);
      assertThat(new String(auto.getInputStream().readAllBytes(), StandardCharsets.UTF_8))
          .as("no ready line").doesNotContain(Main.READY_PREFIX);
      assertThat(Files.readString(log)).contains("cannot start: --isolation auto: the network namespace's holder"
          + " did not start within").contains("started too slowly").doesNotContain("commands run without isolation");
    } finally {
      auto.destroyForcibly();
    }
  }

  @Test
  void isolationCannotBeCombinedWithACommandUser() throws IOException, InterruptedException {
    Path log = dir.resolve("agent.log");
    Process p = LaunchedAgent.launch(List.of(), Map.of(), log, "--isolation", "bwrap", "--command-user", "1000:1000");
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).isEqualTo(2);
    assertThat(Files.readString(log)).contains("--isolation bwrap cannot be combined with --command-user");
  }
}
