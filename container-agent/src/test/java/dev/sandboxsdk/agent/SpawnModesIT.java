package dev.sandboxsdk.agent;

import static dev.sandboxsdk.agent.TestAgent.obj;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What a command gets from its start, through the native spawn ({@code --spawn native},
 * posix_spawn without setsid(1)) and the JDK's ({@code --spawn jdk}) alike: its own session and
 * process group, no descriptor of the agent's, default signal handling although the agent was
 * started with signals ignored, execvp's lookup and fallbacks. Each mode runs in an agent of its
 * own, started with SIGINT and SIGUSR1 ignored (the JVM takes SIGQUIT back for itself).
 */
class SpawnModesIT {
  private static final Map<String, ChildAgent> AGENTS = new HashMap<>();

  private static synchronized ChildAgent agent(String mode) throws IOException {
    ChildAgent a = AGENTS.get(mode);
    if (a == null) {
      a = ChildAgent.start(List.of("env", "--ignore-signal=INT,USR1"), "--spawn", mode);
      AGENTS.put(mode, a);
    }
    return a;
  }

  @AfterAll
  static void stopAgents() throws InterruptedException {
    for (ChildAgent a : AGENTS.values()) {
      a.close();
    }
  }

  private static JsonNode json(String response) throws IOException {
    return TestAgent.JSON.readTree(response.substring(response.indexOf("\r\n\r\n") + 4));
  }

  private static String statusField(long pid, String name) throws IOException {
    for (String l : Files.readAllLines(Path.of("/proc", String.valueOf(pid), "status"))) {
      if (l.startsWith(name + ":")) {
        return l.substring(name.length() + 1).strip();
      }
    }
    throw new AssertionError(name + " missing in /proc/" + pid + "/status");
  }

  private static String readQuietly(Path p) {
    try {
      return Files.readString(p);
    } catch (IOException e) {
      return "";
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"native", "jdk"})
  void versionNamesTheSpawnInForce(String mode) throws IOException {
    assertThat(json(agent(mode).call("GET", "/api/version", null)).get("spawn").asText()).isEqualTo(mode);
  }

  @ParameterizedTest
  @ValueSource(strings = {"native", "jdk"})
  void commandIsTheAgentsChildAndLeadsItsOwnSessionAndGroup(String mode) throws IOException {
    ChildAgent a = agent(mode);
    JsonNode r = json(a.call("POST", "/api/execute", obj("argv", List.of("cat", "/proc/self/stat"))));
    String stat = r.get("stdout").asText();
    long pid = Long.parseLong(stat.substring(0, stat.indexOf(' ')));
    // After "pid (comm) ": state ppid pgrp session ...
    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    assertThat(Long.parseLong(f[1])).as("ppid: started directly, setsid(1) (if any) exec'd in place").isEqualTo(a.pid);
    assertThat(Long.parseLong(f[2])).as("process group").isEqualTo(pid);
    assertThat(Long.parseLong(f[3])).as("session").isEqualTo(pid);
  }

  @ParameterizedTest
  @ValueSource(strings = {"native", "jdk"})
  void commandHasOnlyStdioAndDefaultSignals(String mode) throws Exception {
    ChildAgent a = agent(mode);
    long intAndUsr1 = 1L << (2 - 1) | 1L << (10 - 1);
    assertThat(Long.parseLong(statusField(a.pid, "SigIgn"), 16) & intAndUsr1)
        .as("the agent itself ignores SIGINT and SIGUSR1 (else this test proves nothing)")
        .isEqualTo(intAndUsr1);
    JsonNode started = json(a.call("POST", "/api/process/start",
        obj("argv", List.of("sleep", "30"), "processId", "fds-" + mode)));
    long pid = started.get("pid").asLong();
    try {
      // The JDK's start returns once setsid(1) runs; it still has to exec env and sleep.
      Path comm = Path.of("/proc", String.valueOf(pid), "comm");
      assertThat(ChildAgent.await(10_000, () -> readQuietly(comm).equals("sleep\n"))).as("runs sleep").isTrue();
      // Right after the exec the dynamic loader may still hold a library open for a moment; a
      // descriptor leaked from the agent would stay for good.
      Path fdDir = Path.of("/proc", String.valueOf(pid), "fd");
      List<List<String>> fds = new ArrayList<>(List.of(List.of()));
      ChildAgent.await(10_000, () -> {
        try (Stream<Path> s = Files.list(fdDir)) {
          fds.set(0, s.map(p -> p.getFileName().toString()).sorted().collect(Collectors.toList()));
        } catch (IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
        return fds.get(0).equals(List.of("0", "1", "2"));
      });
      assertThat(fds.get(0)).as("descriptors of the command").containsExactly("0", "1", "2");
      // Signals 1-31; glibc's spawn leaves its own two real-time signals (32, 33) ignored, which
      // glibc in the command takes back when it needs them.
      assertThat(Long.parseLong(statusField(pid, "SigIgn"), 16) & 0x7FFFFFFFL).as("ignored signals").isZero();
      assertThat(Long.parseLong(statusField(pid, "SigBlk"), 16)).as("blocked signals").isZero();
    } finally {
      a.call("DELETE", "/api/process/fds-" + mode, null);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"native", "jdk"})
  void programIsLookedUpInTheCommandsPathAndScriptsWithoutInterpreterLineRunInSh(String mode) throws Exception {
    ChildAgent a = agent(mode);
    Path bin = Files.createDirectories(a.dir.resolve("ws").resolve("bin-" + mode));
    Path tool = bin.resolve("only-here");
    Files.writeString(tool, "echo ran \"$1\" in sh\n"); // no #! line: execvp runs it with /bin/sh
    Files.setPosixFilePermissions(tool, PosixFilePermissions.fromString("rwxr-xr-x"));
    JsonNode r = json(a.call("POST", "/api/execute", obj("argv", List.of("only-here", "x"),
        "env", Map.of("PATH", bin + ":/usr/bin:/bin"))));
    assertThat(r.get("stdout").asText()).isEqualTo("ran x in sh\n");
    assertThat(r.get("exitCode").asInt()).isZero();
  }

  @ParameterizedTest
  @ValueSource(strings = {"native", "jdk"})
  void missingProgramIsCommandNotFound(String mode) throws IOException {
    String response = agent(mode).call(ChildAgent.request("POST", "/api/execute",
        obj("argv", List.of("no-such-program-anywhere"))), 30_000);
    assertThat(response).startsWith("HTTP/1.1 404").contains("\"COMMAND_NOT_FOUND\"");
  }

  @ParameterizedTest
  @ValueSource(strings = {"native", "jdk"})
  void deathBySignalIsExitCode128PlusN(String mode) throws IOException {
    JsonNode r = json(agent(mode).call("POST", "/api/execute", obj("argv", List.of("sh", "-c", "kill -TERM $$"))));
    assertThat(r.get("exitCode").asInt()).isEqualTo(128 + 15);
  }

  @ParameterizedTest
  @ValueSource(strings = {"native", "jdk"})
  void stdinTextReachesTheCommand(String mode) throws IOException {
    JsonNode r = json(agent(mode).call("POST", "/api/execute", obj("argv", List.of("cat"), "stdin", "fed through stdin")));
    assertThat(r.get("stdout").asText()).isEqualTo("fed through stdin");
  }

  /**
   * A background process whose stdin pipe a child keeps (unread) while a client's write to it is
   * blocked: the process's end must not hold up the ends of other processes (with the native
   * spawn both are noticed on the one event loop thread).
   */
  @ParameterizedTest
  @ValueSource(strings = {"native", "jdk"})
  void blockedStdinWriteDoesNotHoldUpOtherProcesses(String mode) throws Exception {
    ChildAgent a = agent(mode);
    String id = "stdin-held-" + mode;
    a.call("POST", "/api/process/start", obj("argv", List.of("sh", "-c",
        "exec 3<&0; sleep 600 <&3 >/dev/null 2>&1 3<&- & sleep 2"), "processId", id, "stdin", "pipe"));
    Thread writer = new Thread(() -> {
      try { // more than a pipe holds: blocks until the sleep dies
        a.call(ChildAgent.request("POST", "/api/process/" + id + "/stdin", obj("data", "x".repeat(256 * 1024))),
            120_000);
      } catch (IOException e) {
        // the agent closed the connection
      }
    });
    writer.setDaemon(true);
    writer.start();
    try {
      assertThat(ChildAgent.await(20_000, () -> {
        try {
          return json(a.call("GET", "/api/process/" + id, null)).toString().contains("\"completed\"");
        } catch (IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      })).as("the process ended").isTrue();
      // The agent keeps a waiting exec's connection alive, so a read timeout would not notice a
      // hang: the whole answer gets a deadline (before the fix, it came when the sleep ended).
      java.util.concurrent.CompletableFuture<String> exec = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
        try {
          return a.call("POST", "/api/execute", obj("argv", List.of("echo", "after")));
        } catch (IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      });
      assertThat(json(exec.get(60, java.util.concurrent.TimeUnit.SECONDS)).get("stdout").asText()).isEqualTo("after\n");
    } finally {
      a.call("DELETE", "/api/process/kill-all", null);
      writer.join(30_000);
    }
  }

  /** The native spawn watches exits and background output on one thread: no thread per process. */
  @Test
  void backgroundProcessesCostNoThreadWithTheNativeSpawn() throws Exception {
    ChildAgent a = agent("native");
    int before = a.threads();
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      String id = "many-" + i;
      a.call("POST", "/api/process/start", obj("argv", List.of("sleep", "30"), "processId", id));
      ids.add(id);
    }
    try {
      assertThat(a.threads() - before).as("threads added by 40 background processes: %s", a.threadNames())
          .isLessThan(10);
      JsonNode list = json(a.call("GET", "/api/process/list?status=running", null));
      assertThat(list.get("processes")).hasSize(40);
    } finally {
      a.call("DELETE", "/api/process/kill-all", null);
    }
  }
}
