package dev.sandboxsdk;

import dev.sandboxsdk.local.LocalSandbox;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sandboxsdk.contract.LoadRun;
import dev.sandboxsdk.testkit.ProcStats;
import dev.sandboxsdk.testkit.Procs;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;

/**
 * Load and soak of the real agent, started by {@link LocalSandbox} with the JVM flags it always
 * uses ({@code -XX:+UseSerialGC -Xss512k -Xms8m -Xmx512m -XX:-UsePerfData}): 32 clients doing mixed exec, execStream,
 * startProcess + kill, and process logs for a duration, after N sequential execs. Zero errors are
 * allowed, and afterwards the agent must be back at its idle baseline, read from /proc: no
 * descendant or marked process beyond the watchdog, and file descriptors and threads within a
 * small tolerance; its RSS must stay within the bound its heap flag implies.
 *
 * <p>The default build runs the short version (10 s, 2,000 execs). {@code -Dsoak=true} runs the
 * long one (2 minutes, 100,000 execs); {@code -Dsoak.seconds=N} and {@code -Dsoak.execs=N} set
 * either directly. Figures go to stdout ({@code [soak]} lines).
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@Timeout(value = 30, unit = TimeUnit.MINUTES)
class LoadSoakIT {
  private static final boolean LONG = Boolean.getBoolean("soak");
  private static final int SECONDS = Integer.getInteger("soak.seconds", LONG ? 120 : 10);
  private static final int EXECS = Integer.getInteger("soak.execs", LONG ? 100_000 : 2_000);
  private static final int CLIENTS = 32;
  private static final Duration WAIT = Duration.ofSeconds(30);
  /**
   * Threads the agent's JVM may have beyond its idle baseline once the load is over: C2 compiler
   * threads come and go on their own ({@code UseDynamicNumberOfCompilerThreads}), and the JDK's
   * process reaper and the agent's cached pools keep a finished thread for up to 60 s, which the
   * wait below covers but a last straggler may just miss. One thread per request or process
   * would leak hundreds, far beyond this.
   */
  private static final int THREAD_TOLERANCE = 4;
  /** Descriptors beyond the baseline: none should remain; 2 allow for a jar or /proc file the JVM opens lazily. */
  private static final int FD_TOLERANCE = 2;
  /**
   * The agent's RSS bound: its 512 MiB heap ({@code -Xmx512m}, LocalSandbox's default) plus 256
   * MiB for everything else (metaspace and code cache about 40 MiB, thread stacks of 512 KiB for
   * the few hundred request and pump threads a burst may start, malloc arenas).
   */
  private static final long RSS_BOUND_KIB = (512L + 256L) * 1024;

  private static LocalSandbox sandbox;
  private static long agent;
  private static String marker;
  private static Snapshot idle;

  @BeforeAll
  static void start() throws Exception {
    sandbox = LocalSandbox.builder().keepAlive(true).gracePeriod(Duration.ofMillis(500))
        .agentArgument("--auto-cleanup-delay-ms").agentArgument("5000")
        .start();
    agent = sandbox.agentPid();
    marker = sandbox.exec("printenv SANDBOX_AGENT_RUN").requireSuccess().stdout().strip();
    assertThat(marker).isNotEmpty();
    // one of each operation first, so the baseline includes what the JVM creates once and keeps
    // (classes, the reaper thread, the timer, the jars it opened), then let the pools go idle
    for (int i = 0; i < 5; i++) {
      operation(i, i);
    }
    idle = settle(Snapshot.take());
    System.out.printf("[soak] agent pid %d, flags of LocalSandbox (-XX:+UseSerialGC -Xss512k -Xms8m -Xmx512m -XX:-UsePerfData); idle: %s%n",
        agent, idle);
  }

  @AfterAll
  static void stop() {
    if (sandbox != null) {
      sandbox.close();
    }
  }

  @Test
  @Order(2)
  void thirtyTwoClientsDoingMixedWorkSeeNoErrorAndLeaveNothingBehind() throws Exception {
    LoadRun load = LoadRun.run("load", CLIENTS, SECONDS, 5, agent, (client, i) -> {
      operation(client, i);
      return 1;
    });
    Snapshot loaded = Snapshot.take();
    Snapshot after = settle(loaded);
    System.out.printf("[soak] mixed: %d clients, %.1f s, %d ops (%.0f ops/s), %d errors; peak RSS %d MiB;"
            + " right after: %s; settled: %s%n",
        CLIENTS, load.seconds(), load.units(), load.units() / load.seconds(), load.errors().size(),
        load.peakRssKib() / 1024, loaded, after);

    assertThat(load.errors()).as("errors").isEmpty();
    assertThat(load.units()).isGreaterThan(CLIENTS);
    assertBackAtBaseline(after, Math.max(load.peakRssKib(), loaded.rssKib));
  }

  @Test
  @Order(1) // first, on a fresh agent: its RSS curve from idle answers how the heap flag bounds it
  void sequentialExecsSeeNoErrorAndLeaveNothingBehind() throws Exception {
    List<String> errors = new ArrayList<>();
    long peak = 0;
    long t0 = System.nanoTime();
    for (int i = 1; i <= EXECS; i++) {
      try {
        ExecResult r = sandbox.exec(Command.of("echo", Integer.toString(i)), ExecOptions.defaults());
        if (r.exitCode() != 0 || !r.stdout().equals(i + "\n")) {
          errors.add("exec " + i + ": " + r);
        }
      } catch (RuntimeException e) {
        errors.add("exec " + i + ": " + e);
      }
      if (i % 1000 == 0 || i == EXECS) {
        peak = Math.max(peak, ProcStats.rssKib(agent));
      }
      if (i % 10_000 == 0 || i == EXECS) {
        System.out.printf("[soak] sequential: %d execs in %.1f s, agent RSS %d MiB, fds %d, threads %d%n", i,
            (System.nanoTime() - t0) / 1e9, ProcStats.rssKib(agent) / 1024, ProcStats.count(agent, "fd"), ProcStats.count(agent, "task"));
      }
    }
    double seconds = (System.nanoTime() - t0) / 1e9;
    Snapshot after = settle(Snapshot.take());
    System.out.printf("[soak] sequential: %d execs, %.1f s (%.0f execs/s), %d errors; peak RSS %d MiB; settled: %s%n",
        EXECS, seconds, EXECS / seconds, errors.size(), peak / 1024, after);

    assertThat(errors).as("errors (first of %d)", errors.size()).isEmpty();
    assertBackAtBaseline(after, peak);
  }

  /** One unit of work; which one depends on the client and the iteration. Throws on anything unexpected. */
  private static void operation(int client, int i) throws Exception {
    String tag = client + "-" + i;
    switch ((client + i) % 5) {
      case 0 -> {
        ExecResult r = sandbox.exec("echo " + tag + "; echo e >&2");
        check(r.exitCode() == 0 && r.stdout().equals(tag + "\n") && r.stderr().equals("e\n"), "exec " + r);
      }
      case 1 -> {
        ExecResult r = sandbox.exec(Command.of("sh", "-c", "exit 3"), ExecOptions.defaults());
        check(r.exitCode() == 3, "exit 3 " + r);
      }
      case 2 -> {
        StringBuilder out = new StringBuilder();
        ExecEvent.Complete end = drain(sandbox.execStream("for n in 1 2 3; do echo " + tag + "-$n; done"), out);
        check(end.exitCode() == 0 && out.toString().equals(tag + "-1\n" + tag + "-2\n" + tag + "-3\n"),
            "execStream " + end + " " + out);
      }
      case 3 -> {
        SandboxProcess p = sandbox.startProcess(Command.shell("echo up-" + tag + "; exec sleep 60"),
            ProcessOptions.builder().autoCleanup(true).build());
        p.waitForLog(Pattern.compile("up-" + tag), WAIT);
        p.kill();
        ProcessInfo end = p.waitForExit(WAIT);
        check(end.status() != ProcessStatus.RUNNING && end.signal() != null, "killed " + end);
      }
      default -> {
        SandboxProcess p = sandbox.startProcess(Command.shell("echo out-" + tag + "; echo err-" + tag + " >&2"),
            ProcessOptions.builder().autoCleanup(true).build());
        ProcessInfo end = p.waitForExit(WAIT);
        ProcessLogs logs = sandbox.getProcessLogs(p.id());
        check(end.exitCode() != null && end.exitCode() == 0 && logs.stdout().equals("out-" + tag + "\n")
            && logs.stderr().equals("err-" + tag + "\n"), "logs " + end + " " + logs);
      }
    }
  }

  private static void check(boolean ok, String what) {
    if (!ok) {
      throw new AssertionError("unexpected: " + what);
    }
  }

  /** Subscribes, requests everything, appends stdout to {@code out}, returns the Complete event. */
  private static ExecEvent.Complete drain(Flow.Publisher<ExecEvent> events, StringBuilder out) throws Exception {
    CompletableFuture<ExecEvent.Complete> end = new CompletableFuture<>();
    events.subscribe(new Flow.Subscriber<>() {
      @Override
      public void onSubscribe(Flow.Subscription s) {
        s.request(Long.MAX_VALUE);
      }

      @Override
      public void onNext(ExecEvent e) {
        if (e instanceof ExecEvent.Stdout o) {
          synchronized (out) {
            out.append(o.text());
          }
        } else if (e instanceof ExecEvent.Complete c) {
          end.complete(c);
        }
      }

      @Override
      public void onError(Throwable t) {
        end.completeExceptionally(t);
      }

      @Override
      public void onComplete() {
        end.completeExceptionally(new AssertionError("stream ended without a Complete event"));
      }
    });
    ExecEvent.Complete c = end.get(WAIT.toSeconds(), TimeUnit.SECONDS);
    synchronized (out) {
      return c;
    }
  }

  private static void assertBackAtBaseline(Snapshot after, long peakRssKib) {
    assertThat(after.descendants).as("the agent's descendants (idle: the watchdog %s)", idle.descendants)
        .isEqualTo(idle.descendants);
    assertThat(after.marked).as("processes carrying the agent's marker").isZero();
    assertThat(after.fds).as("agent fds (idle %d)", idle.fds).isLessThanOrEqualTo(idle.fds + FD_TOLERANCE);
    assertThat(after.threads).as("agent threads (idle %d)", idle.threads)
        .isLessThanOrEqualTo(idle.threads + THREAD_TOLERANCE);
    assertThat(peakRssKib).as("agent peak RSS in KiB (bound: 512 MiB heap + 256 MiB)").isLessThan(RSS_BOUND_KIB);
    assertThat(sandbox.listProcesses()).filteredOn(p -> p.status() == ProcessStatus.RUNNING).as("running processes").isEmpty();
  }

  /**
   * Waits until the agent is back within the tolerances of its idle baseline (or 90 s), or, while
   * the baseline is taken, five seconds without a thread or descriptor appearing; then returns
   * what it sees.
   */
  private static Snapshot settle(Snapshot start) throws InterruptedException {
    return ProcStats.settle(start, Snapshot::take,
        (previous, s) -> s.fds == previous.fds && s.threads <= previous.threads,
        (s, quiet) -> s.marked == 0 && (idle == null ? quiet >= 5 : s.descendants.equals(idle.descendants)
            && s.fds <= idle.fds + FD_TOLERANCE && s.threads <= idle.threads + THREAD_TOLERANCE));
  }

  /** What /proc says about the agent now. */
  private record Snapshot(long fds, long threads, long rssKib, Map<String, Integer> descendants, int marked) {
    static Snapshot take() {
      return new Snapshot(ProcStats.count(agent, "fd"), ProcStats.count(agent, "task"), ProcStats.rssKib(agent),
          ProcStats.descendantsByName(agent),
          LoadSoakIT.marked(marker));
    }

    @Override
    public String toString() {
      return "fds " + fds + ", threads " + threads + ", RSS " + rssKib / 1024 + " MiB, descendants " + descendants
          + ", marked " + marked;
    }
  }

  /** Live processes whose environment carries {@code SANDBOX_AGENT_RUN=marker}, as the watchdog looks for them. */
  static int marked(String marker) {
    byte[] needle = ("SANDBOX_AGENT_RUN=" + marker + "\0").getBytes(StandardCharsets.US_ASCII);
    int n = 0;
    try (DirectoryStream<Path> dirs = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
      for (Path dir : dirs) {
        try {
          byte[] env = Files.readAllBytes(dir.resolve("environ"));
          if (indexOf(env, needle) >= 0 && Procs.alive(Long.parseLong(dir.getFileName().toString()))) {
            n++;
          }
        } catch (IOException | RuntimeException gone) {
          // exited meanwhile, or another user's
        }
      }
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    return n;
  }

  private static int indexOf(byte[] haystack, byte[] needle) {
    outer:
    for (int i = 0; i + needle.length <= haystack.length; i++) {
      if (i > 0 && haystack[i - 1] != 0) {
        continue; // a variable starts only after a NUL
      }
      for (int j = 0; j < needle.length; j++) {
        if (haystack[i + j] != needle[j]) {
          continue outer;
        }
      }
      return i;
    }
    return -1;
  }
}
