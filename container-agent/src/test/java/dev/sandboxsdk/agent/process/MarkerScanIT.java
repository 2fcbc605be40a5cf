package dev.sandboxsdk.agent.process;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The marker scan in command-user mode: grep run as the command user finds that user's marked
 * processes, and a scan stays well under 100 ms with a hundred of them; with libc loaded the agent
 * scans itself with that user's file-system ids, with no helper at all. Needs root.
 */
class MarkerScanIT {
  private static final int PROCESSES = 100;
  private final List<Process> started = new ArrayList<>();

  @AfterEach
  void stop() throws InterruptedException {
    for (Process p : started) {
      p.destroyForcibly();
    }
    for (Process p : started) {
      p.waitFor(5, TimeUnit.SECONDS);
    }
  }

  @Test
  void grepAsTheCommandUserFindsItsMarkedProcessesQuickly() throws Exception {
    Process id = new ProcessBuilder("id", "-u").start();
    String me = new String(id.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
    assumeTrue(me.equals("0"), "switching users needs root; `id -u` is " + me + " (CI runs these tests as root)");
    String path = System.getenv("PATH");
    assumeTrue(ProcessGroups.which("setpriv", path) != null, "needs util-linux setpriv");
    long uid = 40_000 + ThreadLocalRandom.current().nextInt(20_000);
    CommandUser user = CommandUser.resolve(uid + ":" + uid, Path.of("/etc/passwd"), ProcessGroups.which("setpriv", path));
    String run = "feed" + Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffL);
    for (int i = 0; i < PROCESSES; i++) {
      List<String> cmd = new ArrayList<>(user.prefix());
      cmd.addAll(List.of("setsid", "sleep", "300"));
      ProcessBuilder pb = new ProcessBuilder(cmd).directory(new File("/"))
          .redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(ProcessBuilder.Redirect.DISCARD);
      pb.environment().put(CommandEnvironment.RUN_VAR, run + "." + i);
      started.add(pb.start());
    }
    ProcessGroups asUser = new ProcessGroups(ProcessGroups.which("kill", path), user, ProcessGroups.which("grep", path));
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (asUser.find(CommandEnvironment.RUN_VAR, run + ".").size() < PROCESSES && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }

    long[] millis = new long[20];
    List<ProcessGroups.Marked> found = List.of();
    for (int i = 0; i < millis.length; i++) {
      long t0 = System.nanoTime();
      found = asUser.find(CommandEnvironment.RUN_VAR, run + ".");
      millis[i] = TimeUnit.NANOSECONDS.toMicros(System.nanoTime() - t0);
    }
    long[] direct = new long[20];
    for (int i = 0; i < direct.length; i++) {
      long t0 = System.nanoTime();
      ProcessGroups.marked(CommandEnvironment.RUN_VAR, run + "."); // root with every capability here
      direct[i] = TimeUnit.NANOSECONDS.toMicros(System.nanoTime() - t0);
    }
    Arrays.sort(millis);
    Arrays.sort(direct);
    System.out.printf("marker scan as the command user, %d marked processes: min %.1f ms, median %.1f ms, max %.1f ms"
        + " (in-process scan as root: median %.1f ms)%n", PROCESSES, millis[0] / 1000.0, millis[10] / 1000.0,
        millis[19] / 1000.0, direct[10] / 1000.0);

    assertThat(found).hasSize(PROCESSES);
    assertThat(found).allSatisfy(m -> {
      assertThat(m.mark()).startsWith(run + ".");
      assertThat(m.pgid()).isEqualTo(m.pid()); // setsid: each leads its group
    });
    assertThat(asUser.find(CommandEnvironment.RUN_VAR, run + ".7")).extracting(ProcessGroups.Marked::mark)
        .containsExactlyInAnyOrder(run + ".7", run + ".70", run + ".71", run + ".72", run + ".73", run + ".74",
            run + ".75", run + ".76", run + ".77", run + ".78", run + ".79");
    assertThat(millis[10]).as("median scan in microseconds").isLessThan(100_000);
  }

  @Test
  void withLibcTheScanRunsNoHelperAndSeesOnlyWhatTheUserMaySee() throws Exception {
    Process id = new ProcessBuilder("id", "-u").start();
    String me = new String(id.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
    assumeTrue(me.equals("0"), "switching users needs root; `id -u` is " + me + " (CI runs these tests as root)");
    assumeTrue(Libc.load() == null, "needs the native library: " + Libc.load());
    String path = System.getenv("PATH");
    assumeTrue(ProcessGroups.which("setpriv", path) != null, "needs util-linux setpriv");
    long uid = 40_000 + ThreadLocalRandom.current().nextInt(20_000);
    CommandUser user = CommandUser.resolve(uid + ":" + uid, Path.of("/etc/passwd"), ProcessGroups.which("setpriv", path));
    String run = "beef" + Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffL);
    for (int i = 0; i < 3; i++) {
      started.add(marked(user.prefix(), run + "." + i));
    }
    // Root's: the agent's own helpers are such, and a scan with the user's ids must not see them.
    started.add(marked(List.of(), run + ".root"));
    // No grep: a helper could not run, as none can while a fork bomb holds every process slot.
    ProcessGroups groups = new ProcessGroups(ProcessGroups.which("kill", path), user, "/nonexistent/grep");
    groups.useLibc();
    List<ProcessGroups.Marked> found = List.of();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (found.size() < 3 && System.nanoTime() < deadline) {
      Thread.sleep(50);
      found = groups.find(CommandEnvironment.RUN_VAR, run + ".");
    }

    assertThat(found).extracting(ProcessGroups.Marked::mark).containsExactlyInAnyOrder(run + ".0", run + ".1", run + ".2");
    // The thread's ids are root's again: it reads root's processes as before.
    assertThat(ProcessGroups.marked(CommandEnvironment.RUN_VAR, run + ".root")).hasSize(1);
  }

  /** {@code setsid sleep 300} with the marker {@code mark}, run after {@code prefix} (a user switch, or none). */
  private static Process marked(List<String> prefix, String mark) throws java.io.IOException {
    List<String> cmd = new ArrayList<>(prefix);
    cmd.addAll(List.of("setsid", "sleep", "300"));
    ProcessBuilder pb = new ProcessBuilder(cmd).directory(new File("/"))
        .redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(ProcessBuilder.Redirect.DISCARD);
    pb.environment().put(CommandEnvironment.RUN_VAR, mark);
    return pb.start();
  }
}
