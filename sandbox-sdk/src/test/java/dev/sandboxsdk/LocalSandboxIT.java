package dev.sandboxsdk;

import dev.sandboxsdk.local.LocalSandbox;
import dev.sandboxsdk.local.Isolation;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.SoftAssertions.assertSoftly;

import dev.sandboxsdk.contract.ItSubscriber;
import dev.sandboxsdk.testkit.Await;
import dev.sandboxsdk.testkit.Procs;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The life of a {@link LocalSandbox}: start, close, destroy, idle timeout, finding the agent and
 * java, and what happens to the agent and its processes when the JVM that started them goes away.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class LocalSandboxIT {
  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final Pattern ORPHAN = Pattern.compile("ORPHAN agentPid=(\\d+) sleepPid=(\\d+) workspace=(.+)");

  @TempDir
  Path tmp;

  @Test
  void closeKillsEverythingTheSandboxStartedDeletesItsWorkspaceAndIsIdempotent() throws Exception {
    long t0 = System.nanoTime();
    // Unisolated: this test reads host pids that commands print ($!, $$); isolated commands print
    // pids of their own namespaces (LocalSandboxIsolatedContractIT covers close() there).
    LocalSandbox sandbox = fast().isolation(Isolation.NONE).keepAlive(true).start();
    System.out.printf("[it] LocalSandbox.start() took %d ms%n", millisSince(t0));
    Path ws = sandbox.workspace();
    long agentPid = sandbox.agentPid();
    assertThat(ws).isDirectory();
    assertThat(Procs.alive(agentPid)).isTrue();
    SandboxProcess family = sandbox.startProcess("sleep 300 & sleep 300 & wait");
    assertThat(Await.until(WAIT, () -> Procs.groupMembers(family.pid()).size() == 3)).isTrue();
    List<Long> pids = new ArrayList<>(Procs.groupMembers(family.pid()));
    pids.add(Long.parseLong(sandbox.exec("sleep 300 > /dev/null 2>&1 & echo $!").stdout().strip()));
    CompletableFuture<ExecResult> pending = sandbox.execAsync("echo $$ > pending.pid; sleep 300");
    pids.add(Procs.readPid(ws.resolve("pending.pid"), WAIT));
    ItSubscriber<ExecEvent> stalled = ItSubscriber.manual();
    sandbox.execStream("yes").subscribe(stalled);
    stalled.request(2); // the start and one chunk, then it stops reading while `yes` keeps writing
    pids.add(((ExecEvent.Start) stalled.awaitCount(2, WAIT).get(0)).pid());
    assertThat(Procs.aliveAmong(pids)).containsExactlyElementsOf(pids);
    long t1 = System.nanoTime();

    sandbox.close();

    long closing = millisSince(t1);
    System.out.printf("[it] LocalSandbox.close() with running processes and a stalled stream took %d ms%n", closing);
    assertThat(closing).as("close() does not block on a subscriber that stopped reading").isLessThan(10_000);
    assertThat(Await.until(Duration.ofSeconds(2), () -> Procs.aliveAmong(pids).isEmpty()))
        .as("every process the sandbox started is gone: %s", Procs.aliveAmong(pids))
        .isTrue();
    assertThat(Procs.alive(agentPid)).as("the agent is gone").isFalse();
    assertThat(ws).as("the temporary workspace is deleted").doesNotExist();
    assertThatThrownBy(() -> pending.get(10, TimeUnit.SECONDS))
        .isInstanceOf(ExecutionException.class)
        .cause()
        .isInstanceOf(SandboxConnectionException.class);

    assertThatCode(sandbox::close).as("close is idempotent").doesNotThrowAnyException();
    assertThatCode(sandbox::destroy).doesNotThrowAnyException();
    assertThatThrownBy(() -> sandbox.exec("true")).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("closed");
    assertThatThrownBy(() -> sandbox.execAsync("true")).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> sandbox.startProcess("true")).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(sandbox::listProcesses).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> sandbox.getProcess(family.id())).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(sandbox::killAllProcesses).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(sandbox::cleanupCompletedProcesses).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(family::info).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(family::onExit).isInstanceOf(IllegalStateException.class);
    assertThat(streamFailure(sandbox)).as("execStream after close").isInstanceOf(IllegalStateException.class);
  }

  @Test
  void streamsWaitingForDemandWhenTheSandboxClosesEndWithSandboxConnectionException() throws Exception {
    LocalSandbox sandbox = fast().keepAlive(true).start();
    SandboxProcess ticker = sandbox.startProcess("while :; do echo tick; sleep 0.1; done");
    ItSubscriber<ExecEvent> exec = ItSubscriber.manual();
    ItSubscriber<LogEvent> logs = ItSubscriber.manual();
    sandbox.execStream("while :; do echo tock; sleep 0.1; done").subscribe(exec);
    sandbox.streamProcessLogs(ticker.id()).subscribe(logs);
    exec.request(2);
    logs.request(2);
    exec.awaitCount(2, WAIT); // both streams are open and have delivered what was asked for
    logs.awaitCount(2, WAIT);

    sandbox.close();
    exec.request(1);
    logs.request(1);

    // Like a stream whose read was in progress at close(): the documented error, saying why.
    Throwable execError = exec.awaitError(WAIT);
    Throwable logsError = logs.awaitError(WAIT);
    assertSoftly(softly -> {
      softly.assertThat(execError).as("execStream: %s", execError).isInstanceOf(SandboxConnectionException.class)
          .hasMessageContaining("closed while the call was in flight");
      softly.assertThat(logsError).as("streamProcessLogs: %s", logsError)
          .isInstanceOf(SandboxConnectionException.class)
          .hasMessageContaining("closed while the call was in flight");
    });
  }

  @Test
  void closeKeepsAWorkspaceYouSuppliedAndDestroyDeletesIt() throws Exception {
    Path ws = tmp.resolve("my-workspace");
    LocalSandbox first = fast().keepAlive(true).workspace(ws).start();
    assertThat(first.workspace()).isEqualTo(ws.toAbsolutePath());
    first.exec("echo kept > file.txt").requireSuccess();

    first.close();

    assertThat(ws.resolve("file.txt")).hasContent("kept");

    LocalSandbox second = fast().keepAlive(true).workspace(ws).start();
    assertThat(second.exec("cat file.txt").stdout()).isEqualTo("kept\n");
    SandboxProcess sleeper = second.startProcess("sleep 300");
    long agentPid = second.agentPid();

    second.destroy();

    assertThat(ws).as("destroy() deletes even a workspace you supplied").doesNotExist();
    assertThat(Await.until(Duration.ofSeconds(2), () -> !Procs.alive(sleeper.pid()))).isTrue();
    assertThat(Procs.alive(agentPid)).isFalse();
    assertThatThrownBy(() -> second.exec("true")).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("destroyed");
    assertThatCode(second::destroy).doesNotThrowAnyException();
    assertThatCode(second::close).doesNotThrowAnyException();
  }

  @Test
  void anIdleSandboxIsDestroyedAfterItsIdleTimeoutButNotWhileACallRuns() throws Exception {
    LocalSandbox sandbox = fast().idleTimeout(Duration.ofMillis(300)).start();
    try {
      long agentPid = sandbox.agentPid();
      Path ws = sandbox.workspace();
      SandboxProcess sleeper = sandbox.startProcess("sleep 300"); // running processes are no activity

      assertThat(sandbox.exec("sleep 1; echo still here").stdout())
          .as("a call that lasts longer than the idle timeout keeps the sandbox alive")
          .isEqualTo("still here\n");
      long t0 = System.nanoTime();
      boolean gone = Await.until(Duration.ofSeconds(5), () -> !Procs.alive(agentPid));
      System.out.printf("[it] idle timeout 300 ms: the agent was gone %d ms after the last call%n", millisSince(t0));

      assertThat(gone).as("the agent is stopped after the idle timeout").isTrue();
      assertThatThrownBy(() -> sandbox.exec("true")).isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("idle");
      assertThat(Procs.alive(sleeper.pid())).isFalse();
      assertThat(Await.until(Duration.ofSeconds(2), () -> !Files.exists(ws)))
          .as("the temporary workspace %s is deleted", ws)
          .isTrue();
    } finally {
      sandbox.close();
    }
  }

  @Test
  void aKeptAliveSandboxSurvivesItsIdleTimeout() throws Exception {
    LocalSandbox sandbox = fast().idleTimeout(Duration.ofMillis(300)).keepAlive(true).start();
    try {
      sandbox.exec("true");

      Thread.sleep(1_000);

      assertThat(Procs.alive(sandbox.agentPid())).isTrue();
      assertThat(sandbox.exec("echo alive").stdout()).isEqualTo("alive\n");
    } finally {
      sandbox.close();
    }
  }

  @Test
  void anExplicitAgentJarIsUsedAndTheDefaultExecTimeoutApplies() throws Exception {
    Path jar = ItAgent.agentJar();
    try (LocalSandbox sandbox = fast().keepAlive(true).agentJar(jar).execTimeout(Duration.ofMillis(500)).start()) {
      String cmdline = Files.readString(Path.of("/proc", Long.toString(sandbox.agentPid()), "cmdline"),
          StandardCharsets.UTF_8).replace('\0', ' ');
      assertThat(cmdline).contains(jar.toString());
      assertThat(sandbox.exec("echo ok").stdout()).isEqualTo("ok\n");

      ExecResult defaulted = sandbox.exec("sleep 300");
      ExecResult overridden = sandbox.exec(Command.shell("sleep 1; echo done"), ExecOptions.builder().timeout(WAIT).build());

      assertThat(defaulted.timedOut()).isTrue();
      assertThat(defaulted.exitCode()).isEqualTo(124);
      assertThat(overridden.timedOut()).isFalse();
      assertThat(overridden.stdout()).isEqualTo("done\n");
    }
  }

  @Test
  void agentArgumentsReachTheAgentSoItsProcessLimitApplies() {
    try (LocalSandbox sandbox = fast().keepAlive(true).agentArgument("--max-processes=1").start()) {
      SandboxProcess only = sandbox.startProcess("sleep 300");

      assertThatThrownBy(() -> sandbox.startProcess("sleep 300"))
          .isInstanceOfSatisfying(SandboxServerException.class, e -> {
            assertThat(e.code()).isEqualTo("TOO_MANY_PROCESSES");
            assertThat(e.httpStatus()).isEqualTo(429);
          });
      assertThatThrownBy(() -> sandbox.exec("true")).isInstanceOf(SandboxServerException.class);
      only.kill(Signal.SIGKILL);
      only.waitForExit(WAIT);
      assertThat(sandbox.exec("echo room again").stdout()).isEqualTo("room again\n");
    }
  }

  @Test
  void theDefaultSandboxRunsCommandsThatCannotReadTheAgentToken() {
    try (LocalSandbox sandbox = LocalSandbox.start()) {
      assertThat(sandbox.exec("echo \"[${SANDBOX_AGENT_TOKEN-unset}]\"").stdout()).isEqualTo("[unset]\n");
      assertThat(sandbox.toString()).startsWith("LocalSandbox{");
    }
  }

  @Test
  void aMissingAgentJarFailsWithAClearSandboxException() {
    Path missing = tmp.resolve("no-such-agent.jar");

    assertThatThrownBy(() -> fast().agentJar(missing).start())
        .isInstanceOf(SandboxException.class)
        .hasMessageContaining(missing.toString())
        .hasMessageContaining("does not exist");
  }

  @Test
  void aStartupTimeoutFailsWithSandboxExceptionAndLeavesNoAgentBehind() throws Exception {
    Path ws = tmp.resolve("startup-timeout-workspace");

    assertThatThrownBy(() -> fast().workspace(ws).startupTimeout(Duration.ofMillis(1)).start())
        .isInstanceOf(SandboxException.class)
        .hasMessageContaining("ready line");
    assertThat(Await.until(Duration.ofSeconds(5), () -> Procs.withCommandLineContaining(ws.toString()).isEmpty()))
        .as("no agent started for %s is left running", ws)
        .isTrue();
  }

  @Test
  void aWorkspaceThatIsAFileFailsWithSandboxException() throws Exception {
    Path file = Files.createFile(tmp.resolve("not-a-directory"));

    assertThatThrownBy(() -> fast().workspace(file).start())
        .isInstanceOf(SandboxException.class)
        .hasMessageContaining(file.toString());
  }

  @Test
  void aMissingJavaExecutableFailsWithSandboxException() {
    Path missing = tmp.resolve("no-such-java");

    assertThatThrownBy(() -> fast().javaExecutable(missing).start())
        .isInstanceOf(SandboxException.class)
        .hasMessageContaining(missing.toString());
  }

  @Test
  void aJavaExecutableThatCannotRunTheAgentFailsFastWithSandboxException() {
    long t0 = System.nanoTime();

    assertThatThrownBy(() -> fast().javaExecutable(Path.of("/bin/false")).start())
        .isInstanceOf(SandboxException.class)
        .hasMessageContaining("exited during startup");
    assertThat(millisSince(t0)).isLessThan(10_000);
  }

  @Test
  void aLineOf20MillionCharsFromTheAgentIsCutInsteadOfHeldWhole() throws Exception {
    Path java = tmp.resolve("java-writing-a-long-line");
    Files.writeString(java, "#!/bin/sh\nhead -c 20000000 /dev/zero | tr '\\0' x >&2\necho >&2\necho last words >&2\nexit 3\n");
    assertThat(java.toFile().setExecutable(true)).isTrue();

    assertThatThrownBy(() -> fast().javaExecutable(java).start())
        .isInstanceOf(SandboxException.class)
        .hasMessageContaining("exited during startup with status 3")
        .hasMessageContaining("[line cut at ")
        .hasMessageContaining("last words")
        .satisfies(e -> assertThat(e.getMessage().length()).as("the error message's length").isLessThan(100_000));
  }

  @Test
  void theAgentAndItsProcessesDieWhenTheParentJvmIsKilled() throws Exception {
    Child child = startOrphanMain("kill");
    try {
      assertThat(Procs.alive(child.agentPid)).isTrue();
      assertThat(Procs.alive(child.sleepPid)).isTrue();
      long t0 = System.nanoTime();

      child.process.destroyForcibly(); // SIGKILL: no shutdown hook runs
      child.process.waitFor(10, TimeUnit.SECONDS);

      boolean gone = Await.until(Duration.ofSeconds(10),
          () -> !Procs.alive(child.agentPid) && !Procs.alive(child.sleepPid));
      System.out.printf("[it] parent JVM killed: agent and sleep gone after %d ms%n", millisSince(t0));
      assertThat(gone).as("agent %d and sleep %d are gone within 10 s; child stderr:%n%s", child.agentPid,
          child.sleepPid, child.stderr()).isTrue();
    } finally {
      child.cleanUp();
    }
  }

  @Test
  void theAgentAndItsProcessesStopWhenTheParentJvmExitsWithoutClosingTheSandbox() throws Exception {
    Child child = startOrphanMain("exit");
    try {
      assertThat(child.process.waitFor(20, TimeUnit.SECONDS)).as("the child JVM exits").isTrue();

      assertThat(child.process.exitValue()).isZero();
      assertThat(Await.until(Duration.ofSeconds(3),
          () -> !Procs.alive(child.agentPid) && !Procs.alive(child.sleepPid)))
          .as("the shutdown hook stopped agent %d and sleep %d; child stderr:%n%s", child.agentPid, child.sleepPid,
              child.stderr())
          .isTrue();
      assertThat(child.workspace).as("the hook deletes the temporary workspace").doesNotExist();
    } finally {
      child.cleanUp();
    }
  }

  @Test
  void cleanupStaleWorkspacesDeletesTheWorkspaceOfAKilledJvmButNoLiveOrSuppliedOne() throws Exception {
    Path supplied = tmp.resolve("supplied-workspace");
    Child dead = startOrphanMain("kill");
    Child deadWithSupplied = startOrphanMain("kill", supplied);
    Child live = startOrphanMain("kill");
    try {
      killAndAwaitItsAgent(dead);
      killAndAwaitItsAgent(deadWithSupplied);
      Files.writeString(supplied.resolve("mine.txt"), "keep me");

      List<Path> deleted = LocalSandbox.cleanupStaleWorkspaces();

      // Any start of a local sandbox by this OS user (another test JVM, a build beside this one, a
      // background clean-up still running here) cleans up too, so the dead workspace may be gone
      // before this call: what matters is that it is gone after it, and the others are not.
      assertThat(deleted).doesNotContain(live.workspace, supplied);
      assertThat(dead.workspace).as("the workspace of the killed JVM").doesNotExist();
      assertThat(dead.workspace.resolveSibling(dead.workspace.getFileName() + ".owner"))
          .as("the ownership marker goes with it").doesNotExist();
      assertThat(live.workspace).as("the workspace of a running sandbox in another JVM").isDirectory();
      assertThat(supplied.resolve("mine.txt")).as("a workspace the caller supplied").hasContent("keep me");
      assertThat(live.process.isAlive()).isTrue();
    } finally {
      dead.cleanUp();
      deadWithSupplied.cleanUp();
      live.cleanUp();
    }
  }

  @Test
  void theNextStartDeletesTheWorkspaceOfASandboxWhoseJvmWasKilled() throws Exception {
    Child dead = startOrphanMain("kill");
    try {
      killAndAwaitItsAgent(dead);
      assertThat(dead.workspace).isDirectory();

      try (LocalSandbox next = fast().keepAlive(true).start()) {
        assertThat(Await.until(WAIT, () -> !Files.exists(dead.workspace)))
            .as("starting a sandbox deletes the stale workspace %s", dead.workspace)
            .isTrue();
        assertThat(next.workspace()).as("and not its own").isDirectory();
        assertThat(next.exec("pwd").stdout().strip()).isEqualTo(next.workspace().toString());
      }
    } finally {
      dead.cleanUp();
    }
  }

  @Test
  void aWorkspaceIsStaleOnlyIfItsMarkerNamesAnOwnerThatIsGoneFromThisMachinesBootAndPidNamespace()
      throws Exception {
    ProcessHandle me = ProcessHandle.current();
    long myStart = me.info().startInstant().orElseThrow().toEpochMilli();
    Path tmpDir = Path.of(System.getProperty("java.io.tmpdir"));
    Path reused = Files.createTempDirectory(tmpDir, "sandbox-workspace-");
    Path mine = Files.createTempDirectory(tmpDir, "sandbox-workspace-");
    Path liveAgent = Files.createTempDirectory(tmpDir, "sandbox-workspace-");
    Path unreadable = Files.createTempDirectory(tmpDir, "sandbox-workspace-");
    Path unmarked = Files.createTempDirectory(tmpDir, "sandbox-workspace-");
    Path elsewhere = Files.createTempDirectory(tmpDir, "sandbox-workspace-");
    try {
      // a pid now used by another process (this JVM, started later than the marker says): gone
      String where = "where=" + Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).strip() + "/"
          + Files.readSymbolicLink(Path.of("/proc/self/ns/pid")) + "\n";
      marker(reused, where + "pid=" + me.pid() + "\nstart=" + (myStart - 3_600_000) + "\n");
      marker(mine, where + "pid=" + me.pid() + "\nstart=" + myStart + "\n");
      marker(liveAgent, where + "pid=999999999\nstart=1\nagentPid=" + me.pid() + "\nagentStart=" + myStart + "\n");
      marker(unreadable, where + "pid=not-a-number\n");
      marker(elsewhere, "where=another-boot/pid:[1]\npid=999999999\nstart=1\n");

      List<Path> deleted = LocalSandbox.cleanupStaleWorkspaces();

      assertThat(deleted).contains(reused).doesNotContain(mine, liveAgent, unreadable, unmarked, elsewhere);
      assertThat(reused).doesNotExist();
      assertThat(List.of(mine, liveAgent, unreadable, unmarked, elsewhere))
          .allSatisfy(p -> assertThat(p).isDirectory());
    } finally {
      for (Path p : List.of(reused, mine, liveAgent, unreadable, unmarked, elsewhere)) {
        Files.deleteIfExists(p.resolveSibling(p.getFileName() + ".owner"));
        Files.deleteIfExists(p);
      }
    }
  }

  @Test
  void theAgentGetsA512MiBHeapUnlessAnXmxJvmArgumentSaysOtherwise() throws Exception {
    Path jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd");
    org.junit.jupiter.api.Assumptions.assumeTrue(Files.isExecutable(jcmd), "needs jcmd to read the agent's heap size");
    try (LocalSandbox byDefault = fast().keepAlive(true).start();
        LocalSandbox overridden = fast().keepAlive(true).jvmArgument("-Xmx200m").start()) {
      assertThat(maxHeapBytes(jcmd, byDefault.agentPid())).isEqualTo(512L << 20);
      assertThat(maxHeapBytes(jcmd, overridden.agentPid())).as("the caller's -Xmx wins").isEqualTo(200L << 20);
    }
  }

  // ---- helpers

  /** The MaxHeapSize a running JVM really uses, as jcmd reports it. */
  private static long maxHeapBytes(Path jcmd, long pid) throws Exception {
    Process p = new ProcessBuilder(jcmd.toString(), Long.toString(pid), "VM.flags").redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
    Matcher m = Pattern.compile("-XX:MaxHeapSize=(\\d+)").matcher(out);
    assertThat(m.find()).as("jcmd VM.flags output:%n%s", out).isTrue();
    return Long.parseLong(m.group(1));
  }

  private static void marker(Path workspace, String text) throws IOException {
    Files.writeString(workspace.resolveSibling(workspace.getFileName() + ".owner"), text);
  }

  /** SIGKILLs the child JVM (no shutdown hook runs) and waits until its agent has stopped by itself. */
  private static void killAndAwaitItsAgent(Child child) throws Exception {
    child.process.destroyForcibly();
    assertThat(child.process.waitFor(10, TimeUnit.SECONDS)).isTrue();
    assertThat(Await.until(WAIT, () -> !Procs.alive(child.agentPid)))
        .as("the agent of the killed JVM stops; child stderr:%n%s", child.stderr()).isTrue();
  }

  @Test
  void aSecondLaunchMapsTheClassDataArchiveTheFirstOneDumpedAtItsExit(@TempDir Path cds) throws Exception {
    System.setProperty("sandbox.agent.cdsDir", cds.toString());
    try {
      try (LocalSandbox first = fast().isolation(Isolation.NONE).start()) {
        assertThat(first.exec("true").exitCode()).isZero();
        assertThat(Files.readString(Path.of("/proc/" + first.agentPid() + "/cmdline")))
            .contains("-XX:ArchiveClassesAtExit=" + cds);
      }
      List<Path> archives;
      try (Stream<Path> files = Files.list(cds)) {
        archives = files.toList();
      }
      assertThat(archives).as("one archive, no dump left").singleElement().asString().endsWith(".jsa");
      try (LocalSandbox second = fast().isolation(Isolation.NONE).start()) {
        assertThat(second.exec("echo mapped").stdout()).isEqualTo("mapped\n");
        assertThat(Files.readString(Path.of("/proc/" + second.agentPid() + "/maps")))
            .as("the agent JVM maps the archive").contains(archives.get(0).toString());
      }
    } finally {
      System.clearProperty("sandbox.agent.cdsDir");
    }
  }

  private static LocalSandbox.Builder fast() {
    return LocalSandbox.builder().gracePeriod(Duration.ofMillis(500));
  }

  /** What execStream does after close: throws, or publishes onError; returns that throwable. */
  private static Throwable streamFailure(Sandbox sandbox) throws InterruptedException {
    try {
      ItSubscriber<ExecEvent> s = ItSubscriber.unbounded();
      sandbox.execStream("true").subscribe(s);
      return s.awaitError(WAIT);
    } catch (IllegalStateException thrownAtOnce) {
      return thrownAtOnce;
    }
  }

  private Child startOrphanMain(String mode, Path... workspace) throws Exception {
    Path stderr = Files.createTempFile(tmp, "child-" + mode + "-", ".err");
    List<String> cmd = new ArrayList<>(List.of(ItAgent.currentJava().toString(), "-cp",
        System.getProperty("java.class.path"), ItOrphanMain.class.getName(), mode));
    for (Path w : workspace) {
      cmd.add(w.toString());
    }
    Process p = new ProcessBuilder(cmd)
        .redirectError(stderr.toFile())
        .start();
    BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    CompletableFuture<Matcher> line = CompletableFuture.supplyAsync(() -> {
      try {
        for (String l; (l = out.readLine()) != null; ) {
          Matcher m = ORPHAN.matcher(l);
          if (m.matches()) {
            return m;
          }
        }
        return null;
      } catch (IOException e) {
        return null;
      }
    });
    Matcher m;
    try {
      m = line.get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      m = null;
    }
    if (m == null) {
      p.destroyForcibly();
      throw new AssertionError("the child JVM printed no ORPHAN line; stderr:\n" + Files.readString(stderr));
    }
    return new Child(p, Long.parseLong(m.group(1)), Long.parseLong(m.group(2)), Path.of(m.group(3)), stderr);
  }

  /** A child JVM running {@link ItOrphanMain}. */
  private static final class Child {
    final Process process;
    final long agentPid;
    final long sleepPid;
    final Path workspace;
    final Path stderrFile;

    Child(Process process, long agentPid, long sleepPid, Path workspace, Path stderrFile) {
      this.process = process;
      this.agentPid = agentPid;
      this.sleepPid = sleepPid;
      this.workspace = workspace;
      this.stderrFile = stderrFile;
    }

    String stderr() {
      try {
        return Files.readString(stderrFile);
      } catch (IOException e) {
        return "(unreadable: " + e + ")";
      }
    }

    /** Whatever the test found, leave nothing behind. */
    void cleanUp() throws IOException {
      process.destroyForcibly();
      // only what is still ours: a pid that died may already belong to someone else
      killIfStillRunning(agentPid, "java");
      killIfStillRunning(sleepPid, "sleep");
      if (Files.exists(workspace)) {
        try (Stream<Path> files = Files.walk(workspace)) {
          files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        }
      }
      Files.deleteIfExists(workspace.resolveSibling(workspace.getFileName() + ".owner"));
    }
  }

  private static void killIfStillRunning(long pid, String program) {
    ProcessHandle.of(pid)
        .filter(h -> h.info().command().map(c -> c.endsWith("/" + program) || c.equals(program)).orElse(false))
        .ifPresent(ProcessHandle::destroyForcibly);
  }

  private static long millisSince(long t0) {
    return (System.nanoTime() - t0) / 1_000_000;
  }
}
