package dev.sandboxsdk.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandboxsdk.ExecOptions;
import dev.sandboxsdk.ExecResult;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.contract.Attacks;
import dev.sandboxsdk.SandboxSpec;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Attacks from inside a command against a sandbox pod with the default policy: the container
 * suite's attacks that apply to pods, and the pod's own (the cluster's credentials, the token's
 * Secret). Each test is one attack; docs/kubernetes.md has the table of attacks and results.
 */
@ExtendWith(KubernetesCluster.class)
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class KubernetesAttackIT {
  private static KubernetesProvider provider;
  private static KubernetesSandbox sandbox;
  private static String token;
  private static Attacks attacks;
  private static dev.sandboxsdk.kubernetes.internal.ClusterAdmin admin;

  @BeforeAll
  static void start() {
    provider = KubernetesCluster.provider().build();
    admin = new dev.sandboxsdk.kubernetes.internal.ClusterAdmin(KubernetesCluster.KUBECONFIG, KubernetesCluster.NAMESPACE);
    sandbox = provider.create(SandboxSpec.builder().image(KubernetesCluster.IMAGE).memoryBytes(256L << 20).build());
    token = sandbox.token();
    attacks = new Attacks(sandbox, token);
  }

  @AfterAll
  static void stop() {
    try {
      if (sandbox != null) {
        sandbox.destroy();
      }
    } finally {
      if (provider != null) {
        provider.close();
      }
      if (admin != null) {
        admin.close();
      }
    }
  }

  @Test
  void theTokenFileIsUnreadableToCommands() {
    ExecResult r = attacks.sh("cat /var/run/sandbox-agent/token");

    attacks.assertDeniedWithoutToken(r);
  }

  @Test
  void theAgentsEnvironmentCommandLineAndMemoryHoldNoTokenForCommands() {
    String pid = attacks.agentPid();
    ExecResult env = attacks.sh("cat /proc/" + pid + "/environ /proc/1/environ");
    ExecResult cmdline = attacks.sh("tr '\\0' ' ' < /proc/" + pid + "/cmdline");
    ExecResult mem = attacks.sh("head -c 1 /proc/" + pid + "/mem");

    attacks.assertDeniedWithoutToken(env);
    assertThat(cmdline.stdout()).contains("java").doesNotContain(token);
    assertThat(mem.exitCode()).isNotZero();
  }

  @Test
  void noFileACommandCanReadHoldsTheToken() {
    attacks.assertNoFileACommandCanReadHoldsTheToken();
  }

  @Test
  void commandsGetNoCredentialsOrAddressesOfTheCluster() {
    ExecResult r = attacks.sh("ls /var/run/secrets/kubernetes.io/serviceaccount 2>&1; env | grep -c '^KUBERNETES_' ;"
        + " grep -c KUBERNETES /proc/self/environ; true");

    assertThat(r.stdout()).contains("No such file or directory");
    assertThat(r.stdout().lines().skip(1).toList()).containsOnly("0");
  }

  @Test
  void commandsRunAsAnUnprivilegedUserWithoutAnyCapability() {
    ExecResult r = attacks.sh("id -u; grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp):' /proc/self/status");

    assertThat(r.stdout()).startsWith("1000\n");
    assertThat(r.stdout()).contains("CapInh:\t0000000000000000", "CapPrm:\t0000000000000000",
        "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1",
        "Seccomp:\t2");
  }

  @Test
  void theRootFileSystemIsReadOnlyWhileWorkspaceTmpAndHomeAreWritable() {
    attacks.assertTheRootFileSystemIsReadOnlyWhileWorkspaceTmpAndHomeAreWritable();
  }

  @Test
  void theCheckpointsAreOutOfTheCommandsReach() {
    sandbox.checkpoints().create("attack");
    ExecResult r = attacks.sh("ls /var/lib/sandbox-agent/checkpoints");

    assertThat(r.exitCode()).isNotZero();
    assertThat(r.stderr()).contains("Permission denied");
  }

  @Test
  void withTheNetworkOffNoConnectionLeavesThePod() throws Exception {
    try (Attacks.Listener host = new Attacks.Listener()) {
      ExecResult r = attacks.sh(tryConnect(sandbox, host.port()));
      assertThat(r.stdout()).doesNotContain("connected");
      assertThat(host.accepted()).as("connections the node received").isZero();
      assertThat(attacks.sh("timeout 3 bash -c 'echo > /dev/tcp/10.0.0.1/443' 2>&1 && echo api-reachable; true").stdout())
          .as("the API server's service address").doesNotContain("api-reachable");
    }
    // The same attempt from a pod with the network on reaches the node: the check above can fail.
    try (Attacks.Listener host = new Attacks.Listener();
         KubernetesSandbox open = provider.create(SandboxSpec.builder().image(KubernetesCluster.IMAGE).network(true).build())) {
      ExecResult r = open.exec(tryConnect(open, host.port()));
      assertThat(r.stdout()).contains("connected");
      assertThat(host.awaitAccepted(Duration.ofSeconds(2))).isPositive();
    }
  }

  /**
   * A command that tries TCP to the pod's gateway (the node: the bridge's first address, as the
   * bridge plugin assigns it, or the default route's gateway) and to 1.1.1.1, printing "connected" on success.
   */
  private static String tryConnect(KubernetesSandbox s, int port) {
    String podIp = admin.pod(s.podName()).getStatus().getPodIP();
    String bridge = podIp.replaceFirst("\\.\\d+$", ".1");
    return Attacks.tryConnect(port, bridge, "1.1.1.1");
  }

  @Test
  void aMemoryHogIsKilledAndTheAgentKeepsServing() {
    attacks.assertAMemoryHogIsKilled();
    attacks.assertAgentServes();
  }

  @Test
  void aForkBombIsContainedAndTheAgentKeepsServing() throws InterruptedException {
    // A pod of its own, with memory for the kubelet's podPidsLimit (512 in the test cluster) of
    // shells: in 256 MiB the shells would run the pod out of memory before they run out of pids,
    // and the kernel's OOM killer would pick the largest process, the agent (docs/kubernetes.md).
    try (KubernetesSandbox roomy = provider.create(SandboxSpec.builder().image(KubernetesCluster.IMAGE)
        .memoryBytes(1L << 30).build())) {
      Attacks inRoomy = new Attacks(roomy, roomy.token());
      try {
        ExecResult r = inRoomy.run(Attacks.FORK_BOMB + "sleep 5",
            ExecOptions.builder().timeout(Duration.ofSeconds(8)).build());
        assertThat(r.stderr()).as("forks refused").contains("fork");
      } catch (SandboxException e) {
        // The agent may itself find no room for a thread or process while the bomb holds them all: then it says so.
        System.out.println("ATTACK fork bomb\n  -> " + e.getMessage());
        assertThat(e.code()).isEqualTo("TOO_MANY_PROCESSES");
      } finally {
        roomy.killAllProcesses(); // a 429 here fails the test: kill-all needs no new thread or process
      }
      // Kill-all returns once the killed shells are reaped (their pids count until then): the
      // agent serves at the first try.
      assertThat(inRoomy.sh("echo still serving").stdout()).isEqualTo("still serving\n");
      assertThat(Integer.parseInt(inRoomy.sh("ps -e --no-headers | wc -l").stdout().strip()))
          .as("processes left").isLessThan(20);
      // A bomb that keeps the limit full (it takes every slot that frees within 10 ms), past the
      // 5 s after which the agent's idle request threads go: kill-all still gets a thread.
      roomy.startProcess(Attacks.SLOT_HOLDING_BOMB);
      Thread.sleep(7000);
      roomy.killAllProcesses();
      assertThat(inRoomy.sh("echo still serving").stdout()).isEqualTo("still serving\n");
    }
  }

  @Test
  void killingTheAgentFromACommandFails() {
    attacks.assertKillingTheAgentFromACommandFails();
  }
}
