package dev.sandboxsdk;

import dev.sandboxsdk.local.LocalSandbox;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.sandboxsdk.testkit.Await;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The disk fills up: the workspace is a 2 MiB tmpfs, and the agent's own temporary directory
 * (where it makes the FIFOs that carry command output) is a tmpfs with few inodes. Commands see
 * ENOSPC and fail as commands; SDK calls end normally with that failure; nothing hangs; the
 * agent keeps serving and its file descriptors and threads go back to where they were. When the
 * agent itself cannot make its pipes, the caller gets an error that says so.
 *
 * <p>Needs root to mount; skipped otherwise.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class DiskFullIT {
  private static Path root;
  private static Path workspace;
  private static Path agentTmp;
  private static LocalSandbox sandbox;
  private static long baselineFds;
  private static long baselineThreads;

  @BeforeAll
  static void mountAndStart() throws Exception {
    assumeTrue("root".equals(System.getProperty("user.name")),
        "DiskFullIT mounts small tmpfs file systems and needs root (runs as " + System.getProperty("user.name") + ")");
    root = Files.createTempDirectory("disk-full-it-");
    workspace = Files.createDirectory(root.resolve("ws"));
    agentTmp = Files.createDirectory(root.resolve("tmp"));
    String mounted = run("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", workspace.toString());
    assumeTrue(mounted == null, "cannot mount a tmpfs here: " + mounted);
    // Room for the agent's pipe directory and its first 64 FIFOs, and a few more inodes.
    mounted = run("mount", "-t", "tmpfs", "-o", "size=1m,nr_inodes=80", "tmpfs", agentTmp.toString());
    assumeTrue(mounted == null, "cannot mount a tmpfs here: " + mounted);
    sandbox = LocalSandbox.builder().workspace(workspace).keepAlive(true).gracePeriod(Duration.ofMillis(500))
        .jvmArgument("-Djava.io.tmpdir=" + agentTmp).start();
    assertThat(sandbox.exec("echo warm").stdout()).isEqualTo("warm\n");
    Thread.sleep(500);
    baselineFds = count(Path.of("/proc", Long.toString(sandbox.agentPid()), "fd"));
    baselineThreads = threadsBesidesIdleIo();
  }

  @AfterAll
  static void stopAndUnmount() throws Exception {
    if (sandbox != null) {
      sandbox.close();
    }
    if (root != null) {
      for (Path p : new Path[] {workspace, agentTmp}) {
        String failed = run("umount", p.toString());
        if (failed != null && !failed.contains("not mounted")) {
          System.out.println("[it] umount " + p + ": " + failed);
        }
      }
      try (Stream<Path> files = Files.walk(root)) {
        files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }

  @AfterEach
  void emptyTheWorkspaceAndCheckTheAgentIsBackToNormal() throws Exception {
    sandbox.exec("rm -rf -- * .[!.]*").requireSuccess();
    long t0 = System.nanoTime();
    assertThat(sandbox.exec("echo still serving").stdout()).isEqualTo("still serving\n");
    Path proc = Path.of("/proc", Long.toString(sandbox.agentPid()));
    // The agent-io pool and the JDK's process reapers keep idle threads for 60 s after a burst of
    // processes (by design); every other thread and every descriptor must be back now.
    boolean settled = Await.until(Duration.ofSeconds(15),
        () -> count(proc.resolve("fd")) <= baselineFds + 2 && threadsBesidesIdleIo() <= baselineThreads + 4);
    System.out.printf("[it] after the full disk: agent fds %d (baseline %d), threads besides the idle pools %d (baseline"
        + " %d; %d in all), %d ms%n", count(proc.resolve("fd")), baselineFds, threadsBesidesIdleIo(), baselineThreads,
        count(proc.resolve("task")), (System.nanoTime() - t0) / 1_000_000);
    assertThat(settled).as("the agent's fds and threads are back to their baseline; threads now: %s", threadNames())
        .isTrue();
  }

  @Test
  void aCommandWhoseOutputFillsTheDiskFailsWithEnospcAndExecReturnsThatFailure() {
    long t0 = System.nanoTime();
    ExecResult r = sandbox.exec("yes 0123456789abcdef | head -c 8000000 > out.txt");
    long millis = (System.nanoTime() - t0) / 1_000_000;

    System.out.printf("[it] output to a full disk: exec returned exit %d in %d ms: %s", r.exitCode(), millis, r.stderr());
    assertThat(r.exitCode()).isNotZero();
    assertThat(r.stderr()).contains("No space left on device");
  }

  @Test
  void aBackgroundProcessWhoseOutputFillsTheDiskEndsAsFailed() throws Exception {
    SandboxProcess p = sandbox.startProcess("yes 0123456789abcdef | head -c 8000000 > bg.txt");
    ProcessInfo info = p.waitForExit(Duration.ofSeconds(30));

    assertThat(info.status()).isEqualTo(ProcessStatus.FAILED);
    assertThat(sandbox.getProcessLogs(p.id()).stderr()).contains("No space left on device");
  }

  @Test
  void aCommandWritingAFileFromStdinFailsWithEnospcAndExecStreamCompletesWithThatExitCode() throws Exception {
    String data = "x".repeat(3 << 20); // 3 MiB into a 2 MiB file system
    ExecResult r = sandbox.exec(Command.of("sh", "-c", "cat > from-stdin.bin"),
        ExecOptions.builder().stdin(data).build());
    assertThat(r.exitCode()).isNotZero();
    assertThat(r.stderr()).contains("No space left on device");

    var s = dev.sandboxsdk.contract.ItSubscriber.<ExecEvent>unbounded();
    sandbox.execStream("dd if=/dev/zero of=dd.bin bs=64k count=64").subscribe(s);
    List<ExecEvent> events = s.awaitComplete(Duration.ofSeconds(30));
    assertThat(events.get(events.size() - 1)).isInstanceOfSatisfying(ExecEvent.Complete.class,
        done -> assertThat(done.exitCode()).isNotZero());
    String stderr = events.stream().filter(e -> e instanceof ExecEvent.Stderr)
        .map(e -> ((ExecEvent.Stderr) e).text()).collect(java.util.stream.Collectors.joining());
    assertThat(stderr).contains("No space left on device");
  }

  @Test
  void whenTheAgentCannotMakeItsOutputPipesTheCallFailsWithAClearServerErrorAndTheAgentRecovers() throws Exception {
    // Use up the inodes of the agent's temporary directory, then run more commands at once than
    // the pipes it made in advance (64, two per command) can carry.
    String fill = "i=0; while touch " + agentTmp + "/fill-$i 2>/dev/null; do i=$((i+1)); done; echo $i";
    int filled = Integer.parseInt(sandbox.exec(fill).stdout().strip());
    List<SandboxProcess> started = new java.util.ArrayList<>();
    SandboxServerException error = null;
    try {
      for (int i = 0; i < 40 && error == null; i++) {
        try {
          started.add(sandbox.startProcess("sleep 30"));
        } catch (SandboxServerException e) {
          error = e;
        }
      }
      System.out.printf("[it] agent tmp full (%d inodes taken): %d processes started, then %s%n", filled,
          started.size(), error);
      assertThat(error).as("a process beyond the pipes made in advance fails").isNotNull();
      assertThat(error.getMessage()).contains("pipe").contains("No space left on device");
    } finally {
      for (SandboxProcess p : started) {
        p.kill();
      }
      sandbox.exec("rm -f " + agentTmp + "/fill-*");
    }
    assertThat(sandbox.exec("echo pipes again").stdout()).isEqualTo("pipes again\n");
  }

  /**
   * The agent's threads, not counting its agent-io pool and the JDK's process reaper pool, whose
   * idle threads live on for 60 s after a burst of processes.
   */
  private static long threadsBesidesIdleIo() {
    try (Stream<Path> tasks = Files.list(Path.of("/proc", Long.toString(sandbox.agentPid()), "task"))) {
      return tasks.filter(t -> {
        try {
          String name = Files.readString(t.resolve("comm"));
          return !name.startsWith("agent-io-") && !name.startsWith("process reaper");
        } catch (IOException gone) {
          return false;
        }
      }).count();
    } catch (IOException e) {
      return Long.MAX_VALUE;
    }
  }

  /** How many threads of each name (digits dropped), for a failure message. */
  private static java.util.Map<String, Long> threadNames() {
    try (Stream<Path> tasks = Files.list(Path.of("/proc", Long.toString(sandbox.agentPid()), "task"))) {
      return tasks.map(t -> {
        try {
          return Files.readString(t.resolve("comm")).strip().replaceAll("[0-9]+", "N");
        } catch (IOException gone) {
          return "(gone)";
        }
      }).collect(java.util.stream.Collectors.groupingBy(n -> n, java.util.TreeMap::new,
          java.util.stream.Collectors.counting()));
    } catch (IOException e) {
      return java.util.Map.of();
    }
  }

  private static long count(Path dir) {
    try (Stream<Path> s = Files.list(dir)) {
      return s.count();
    } catch (IOException e) {
      return Long.MAX_VALUE;
    }
  }

  /** Runs a command; null if it succeeded, else its output. */
  private static String run(String... cmd) throws Exception {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes());
    return p.waitFor() == 0 ? null : (out.isBlank() ? "exit " + p.exitValue() : out.strip());
  }
}
