package dev.sandboxsdk.container;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandboxsdk.ExecOptions;
import dev.sandboxsdk.ExecResult;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.contract.Attacks;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Attacks from inside a command against a container sandbox with the default policy. Each test
 * is one attack; docs/containers.md has the table of attacks and results.
 */
@ExtendWith(ContainerEngine.class)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ContainerAttackIT {
  private static ContainerSandbox sandbox;
  private static String token;
  private static Attacks attacks;

  @BeforeAll
  static void start() {
    sandbox = ContainerSandbox.builder().image(ContainerEngine.IMAGE)
        .memoryBytes(256L << 20).pidsLimit(128).start();
    token = ContainerEngine.tokenOf(sandbox.id());
    attacks = new Attacks(sandbox, token);
  }

  @AfterAll
  static void stop() {
    if (sandbox != null) {
      sandbox.destroy();
    }
  }

  @Test
  void readingTheEnvironmentOfPid1FailsAndLeaksNoToken() {
    ExecResult r = attacks.sh("cat /proc/1/environ");

    attacks.assertDeniedWithoutToken(r);
  }

  @Test
  void readingTheAgentsEnvironmentFails() {
    ExecResult r = attacks.sh("cat /proc/" + attacks.agentPid() + "/environ");

    attacks.assertDeniedWithoutToken(r);
  }

  @Test
  void theAgentsCommandLineAndMemoryHoldNoTokenForCommands() {
    String pid = attacks.agentPid();
    ExecResult cmdline = attacks.sh("tr '\\0' ' ' < /proc/" + pid + "/cmdline");
    ExecResult mem = attacks.sh("head -c 1 /proc/" + pid + "/mem");

    // /proc/<pid>/cmdline is world-readable on Linux (only a hidepid mount hides it), so the
    // token is never put there.
    assertThat(cmdline.stdout()).contains("java").doesNotContain(token);
    assertThat(mem.exitCode()).isNotZero();
  }

  @Test
  void noFileACommandCanReadHoldsTheToken() {
    attacks.assertNoFileACommandCanReadHoldsTheToken();
  }

  @Test
  void commandsRunAsAnUnprivilegedUserWithoutAnyCapability() {
    ExecResult r = attacks.sh("id -u; grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs):' /proc/self/status");

    assertThat(r.stdout()).startsWith("1000\n");
    assertThat(r.stdout()).contains("CapInh:\t0000000000000000", "CapPrm:\t0000000000000000",
        "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1");
  }

  @Test
  void theRootFileSystemIsReadOnlyWhileWorkspaceTmpAndHomeAreWritable() {
    attacks.assertTheRootFileSystemIsReadOnlyWhileWorkspaceTmpAndHomeAreWritable();
  }

  @Test
  void withTheNetworkOffNoConnectionLeavesTheContainer() throws Exception {
    try (Attacks.Listener host = new Attacks.Listener()) {
      ExecResult r = attacks.sh(tryConnect(host.port()));
      assertThat(r.stdout()).doesNotContain("connected");
      assertThat(host.accepted()).as("connections the host received").isZero();
      assertThat(attacks.sh("getent hosts deb.debian.org || echo no-dns").stdout()).contains("no-dns");
    }
    // The same attempt from a sandbox with the network on reaches the host: the check above can fail.
    try (Attacks.Listener host = new Attacks.Listener();
         ContainerSandbox open = ContainerSandbox.builder().image(ContainerEngine.IMAGE).network(true).start()) {
      ExecResult r = open.exec(tryConnect(host.port()));
      assertThat(r.stdout()).contains("connected");
      assertThat(host.awaitAccepted(Duration.ofSeconds(2))).isPositive();
    }
  }

  /** A command that tries TCP to the container's gateway (the host) and to 1.1.1.1, printing "connected" on success. */
  private static String tryConnect(int port) {
    return Attacks.tryConnect(port, "10.88.0.1", "172.17.0.1", "1.1.1.1");
  }


  /**
   * How many bombs the fork-bomb test sets off one after the other in this container: 1, or e.g.
   * {@code -Dsandbox.forkBombRounds=20} for the regression run on a loaded machine.
   */
  private static final int BOMB_ROUNDS = Integer.getInteger("sandbox.forkBombRounds", 1);

  @Test
  @Timeout(value = 30, unit = TimeUnit.MINUTES)
  void aForkBombHitsThePidsLimitAndAfterKillAllTheSandboxServesAtOnce() throws InterruptedException {
    for (int round = 1; round <= BOMB_ROUNDS; round++) {
      forkBombRound(round);
    }
  }

  /**
   * Two bombs: the classic one in an exec, which its timeout ends, and one in a background process
   * that still holds every process slot when kill-all comes. The pids limit stops both; kill-all then
   * answers (never 429: it needs no new thread or process) and right after it an exec, a process
   * listing and a file round trip all work, each at the first try.
   */
  private void forkBombRound(int round) throws InterruptedException {
    long refusedBefore = cgroupCounter("pids/pids.events", "pids.events", "max");
    try {
      ExecResult r = attacks.run(Attacks.FORK_BOMB + "sleep 5", ExecOptions.builder().timeout(Duration.ofSeconds(8)).build());
      assertThat(r.stderr()).as("round %d: forks refused", round).contains("fork");
    } catch (SandboxException e) {
      // The exec itself may find no room for its process: then the agent says so (429), not 500.
      System.out.println("ATTACK fork bomb\n  -> " + e.getMessage());
      assertThat(e.code()).as("round %d", round).isEqualTo("TOO_MANY_PROCESSES");
    }
    assertUsableAfterKillAll(round + " (exec)");
    // The cgroup counts the forks it refused at pids.max: the limit, not something else, stopped it.
    assertThat(cgroupCounter("pids/pids.events", "pids.events", "max")).as("round %d: forks refused at pids.max", round)
        .isGreaterThan(refusedBefore);

    // This one keeps what it took and takes every slot that frees within 10 ms, so the limit
    // stays full (the shells above die of their failed forks and free slots now and then). The
    // wait is longer than the 5 s after which the agent lets an idle request thread go: no thread
    // is left for kill-all's request but the reserved ones.
    sandbox.startProcess(Attacks.SLOT_HOLDING_BOMB);
    Thread.sleep(7000);
    assertUsableAfterKillAll(round + " (background)");
  }

  private void assertUsableAfterKillAll(String round) {
    long start = System.nanoTime();
    sandbox.killAllProcesses(); // a 429 here fails the test
    Duration killAll = Duration.ofNanos(System.nanoTime() - start);
    start = System.nanoTime();
    assertThat(sandbox.exec("echo still serving").stdout()).as("round %s", round).isEqualTo("still serving\n");
    Duration exec = Duration.ofNanos(System.nanoTime() - start);
    assertThat(sandbox.listProcesses()).as("round %s", round).isNotNull();
    sandbox.files().writeString("after-bomb.txt", "round " + round);
    assertThat(sandbox.files().readString("after-bomb.txt")).isEqualTo("round " + round);
    System.out.printf("fork bomb round %s: kill-all %d ms, then exec %d ms%n", round, killAll.toMillis(), exec.toMillis());
    // The default grace period is 5 s; the rest is the /proc scans and the SIGKILL round.
    assertThat(killAll).as("round %s: kill-all", round).isLessThan(Duration.ofSeconds(20));
    assertThat(exec).as("round %s: the first exec after kill-all", round).isLessThan(Duration.ofSeconds(10));
    assertThat(attacks.sh("ps -e --no-headers | wc -l").stdout().strip()).satisfies(n ->
        assertThat(Integer.parseInt(n)).as("round %s: processes left", round).isLessThan(20));
  }

  @Test
  void aMemoryHogIsKilledAndTheAgentKeepsServing() {
    attacks.assertAMemoryHogIsKilled();

    assertThat(cgroupCounter("memory/memory.oom_control", "memory.events", "oom_kill")).as("OOM kills in the cgroup")
        .isPositive();
    attacks.assertAgentServes();
  }

  /** A counter of the container's cgroup, read by a command: cgroup v1 file, else the v2 file, "NAME N" lines. */
  private static long cgroupCounter(String v1File, String v2File, String name) {
    String out = attacks.sh("cat /sys/fs/cgroup/" + v1File + " 2>/dev/null || cat /sys/fs/cgroup/" + v2File).stdout();
    return out.lines().filter(l -> l.startsWith(name + " ")).mapToLong(l -> Long.parseLong(l.substring(name.length() + 1).strip()))
        .findFirst().orElseThrow(() -> new AssertionError("no " + name + " in the cgroup's files: " + out));
  }

  @Test
  void killingTheAgentFromACommandFails() {
    attacks.assertKillingTheAgentFromACommandFails();
  }
}
