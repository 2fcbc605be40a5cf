package dev.sandboxsdk.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandboxsdk.ManagedSandbox;
import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.SandboxConflictException;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxInfo;
import dev.sandboxsdk.SandboxSpec;
import dev.sandboxsdk.SandboxState;
import dev.sandboxsdk.kubernetes.internal.ClusterAdmin;
import dev.sandboxsdk.testkit.Await;
import io.fabric8.kubernetes.api.model.Container;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * What is particular to pods: what the pod spec holds, what destroy leaves (nothing), how the SDK
 * reaches the agent (port-forward and pod address), named sandboxes found from another provider,
 * idle pods cleaned up, and the errors a user meets (no image, no room, no quota).
 */
@ExtendWith(KubernetesCluster.class)
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class KubernetesLifecycleIT {
  private static KubernetesProvider provider;
  private static ClusterAdmin admin;

  @BeforeAll
  static void start() {
    provider = KubernetesCluster.provider().build();
    admin = new ClusterAdmin(KubernetesCluster.KUBECONFIG, KubernetesCluster.NAMESPACE);
  }

  @AfterAll
  static void stop() {
    if (provider != null) {
      provider.close();
    }
    if (admin != null) {
      admin.close();
    }
  }

  private static SandboxSpec.Builder spec() {
    return SandboxSpec.builder().image(KubernetesCluster.IMAGE);
  }

  private static boolean await(long timeoutMs, BooleanSupplier condition) throws InterruptedException {
    return Await.until(Duration.ofMillis(timeoutMs), condition);
  }

  @Test
  void destroyLeavesNoPodSecretOrPolicyBehind() {
    KubernetesSandbox s = provider.create(spec().build());
    String pod = s.podName();
    assertThat(admin.podExists(pod)).isTrue();
    assertThat(admin.secretExists(pod)).isTrue();
    assertThat(admin.policyExists(pod)).as("no network: an egress policy").isTrue();

    s.destroy();

    assertThat(admin.podExists(pod)).as("pod gone when destroy returns").isFalse();
    assertThat(admin.secretExists(pod)).isFalse();
    assertThat(admin.policyExists(pod)).isFalse();
    assertThatThrownBy(() -> s.exec("true")).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
    assertThat(provider.get(pod)).isEmpty();
  }

  @Test
  void thePodCarriesTheLimitsAndTheSecurityPolicy() {
    try (KubernetesSandbox s = provider.create(spec().memoryBytes(300L << 20).cpus(0.5).build())) {
      Container c = admin.pod(s.podName()).getSpec().getContainers().get(0);
      assertThat(c.getResources().getLimits().get("memory").getNumericalAmount().longValue()).isEqualTo(300L << 20);
      assertThat(c.getResources().getLimits().get("cpu").toString()).isEqualTo("500m");
      assertThat(c.getSecurityContext().getAllowPrivilegeEscalation()).isFalse();
      assertThat(c.getSecurityContext().getReadOnlyRootFilesystem()).isTrue();
      assertThat(c.getSecurityContext().getCapabilities().getDrop()).containsExactly("ALL");
      assertThat(admin.pod(s.podName()).getSpec().getAutomountServiceAccountToken()).isFalse();

      // ... and the kernel enforces them, as the commands see it (cgroup v1 or v2 files).
      String mem = s.exec("cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max")
          .stdout().strip();
      String cpu = s.exec("cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null || cut -d' ' -f1 /sys/fs/cgroup/cpu.max")
          .stdout().strip();
      assertThat(Long.parseLong(mem)).isEqualTo(300L << 20);
      assertThat(Long.parseLong(cpu)).isEqualTo(50_000L);
    }
  }

  @Test
  void theAgentIsReachedThroughAPortForwardOrThePodsAddress() throws Exception {
    try (KubernetesSandbox forwarded = provider.create(spec().build());
         KubernetesProvider direct = KubernetesCluster.provider().access(KubernetesAccess.POD_IP).build();
         KubernetesSandbox straight = direct.create(spec().build())) {
      assertThat(forwarded.baseUrl().getHost()).isEqualTo("127.0.0.1");
      String podIp = admin.pod(straight.podName()).getStatus().getPodIP();
      assertThat(straight.baseUrl().toString()).isEqualTo("http://" + podIp + ":3000");
      assertThat(forwarded.exec("echo through the API server").stdout()).isEqualTo("through the API server\n");
      assertThat(straight.exec("echo straight").stdout()).isEqualTo("straight\n");
      // A long stream and a large answer cross the port-forward intact.
      String big = forwarded.exec("head -c 3000000 /dev/zero | tr '\\0' 'x'").stdout();
      assertThat(big).hasSize(3_000_000).matches("x+");
      // The other provider's handle on the same pod reaches it its own way.
      ManagedSandbox again = direct.get(forwarded.podName()).orElseThrow();
      assertThat(again.exec("echo same pod").stdout()).isEqualTo("same pod\n");
      again.close();
      assertThat(forwarded.exec("true").exitCode()).as("closing a handle from get() leaves the sandbox").isZero();
    }
  }

  @Test
  void aNamedSandboxIsFoundByAnotherProviderAndListedUntilDestroyed() throws Exception {
    String name = "k8s-It_" + UUID.randomUUID().toString().substring(0, 8);
    KubernetesSandbox s = provider.create(spec().name(name).label("team", "agents: blue").keepAlive().build());
    try {
      s.files().writeString("/workspace/note.txt", "kept");
      s.close(); // a named sandbox outlives its handle
      assertThat(admin.podExists(s.podName())).isTrue();

      try (KubernetesProvider other = KubernetesCluster.provider().build()) {
        ManagedSandbox found = other.get(name).orElseThrow();
        assertThat(found.id()).isEqualTo(s.podName());
        assertThat(found.files().readString("/workspace/note.txt")).isEqualTo("kept");
        SandboxInfo info = other.list().stream().filter(i -> i.id().equals(s.podName())).findFirst().orElseThrow();
        assertThat(info.name()).isEqualTo(name);
        assertThat(info.provider()).isEqualTo("kubernetes");
        assertThat(info.isRunning()).isTrue();
        assertThat(info.labels()).containsEntry("team", "agents: blue");
        assertThat(info.image()).isEqualTo(KubernetesCluster.IMAGE);
        assertThat(found.info().state()).isEqualTo(SandboxState.RUNNING);

        assertThatThrownBy(() -> other.create(spec().name(name).build())).isInstanceOf(SandboxConflictException.class)
            .hasMessageContaining("exists already");
        assertThatThrownBy(found::shutdown).isInstanceOf(SandboxException.class).hasMessageContaining("cannot shut down");
        found.wake(); // running: a no-op

        found.destroy();
        assertThat(other.get(name)).isEmpty();
        assertThat(other.list()).noneMatch(i -> i.id().equals(s.podName()));
      }
    } finally {
      if (admin.podExists(s.podName())) {
        provider.get(s.podName()).ifPresent(ManagedSandbox::destroy);
      }
    }
  }

  @Test
  void anIdleSandboxEndsAndIsRemovedWithItsSecret() throws Exception {
    // Never closed, as by a JVM that died: the idle timeout ends the agent, removeFinished the rest.
    KubernetesSandbox s = provider.create(spec().idleTimeout(Duration.ofSeconds(2)).build());
    String pod = s.podName();
    assertThat(await(60_000, () -> provider.list().stream().anyMatch(i -> i.id().equals(pod) && i.state().wireName().equals("exited"))))
        .as("the pod's agent ended after its idle timeout").isTrue();
    SandboxInfo ended = provider.list().stream().filter(i -> i.id().equals(pod)).findFirst().orElseThrow();
    assertThat(ended.lastActivityAt()).isNotNull();
    assertThatThrownBy(() -> s.exec("true")).isInstanceOf(SandboxException.class);

    assertThat(provider.removeFinished()).isPositive();

    assertThat(await(30_000, () -> !admin.podExists(pod))).isTrue();
    assertThat(admin.secretExists(pod)).isFalse();
    s.close();
  }

  @Test
  void aMissingImageFailsFastAndSaysWhy() {
    long t0 = System.nanoTime();
    String mark = UUID.randomUUID().toString();
    assertThatThrownBy(() -> provider.create(spec().image("localhost/no-such-image:1").label("mark", mark).build()))
        .isInstanceOf(SandboxException.class)
        .hasMessageContaining("localhost/no-such-image:1")
        .hasMessageContaining("ErrImageNeverPull");
    assertThat(Duration.ofNanos(System.nanoTime() - t0)).as("long before the 60 s start-up timeout")
        .isLessThan(Duration.ofSeconds(30));
    assertNothingLeft(mark);
  }

  @Test
  void aPodNoNodeCanHoldFailsWithTheSchedulersReason() {
    String mark = UUID.randomUUID().toString();
    assertThatThrownBy(() -> provider.create(spec().cpus(512).startupTimeout(Duration.ofSeconds(5)).label("mark", mark)
        .build()))
        .isInstanceOf(SandboxException.class)
        .hasMessageContaining("was not ready within 5000 ms")
        .hasMessageContaining("Insufficient cpu");
    assertNothingLeft(mark);
  }

  @Test
  void aQuotaThatRefusesThePodSaysSo() throws Exception {
    String ns = "sandbox-it-quota";
    admin.namespaceWithPodQuota(ns, 0);
    try (KubernetesProvider quota = KubernetesCluster.provider().namespace(ns).build()) {
      Thread.sleep(1_000); // the quota's status is computed by the controller manager
      assertThatThrownBy(() -> quota.create(spec().build()))
          .isInstanceOf(SandboxException.class)
          .hasMessageContaining("quota");
      assertThat(quota.list()).isEmpty();
    } finally {
      admin.deleteNamespace(ns);
    }
  }

  @Test
  void aMissingNamespaceSaysSoAndANameNoPodCanHaveIsNotFound() {
    try (KubernetesProvider nowhere = KubernetesCluster.provider().namespace("no-such-namespace-here").build()) {
      assertThatThrownBy(() -> nowhere.create(spec().build())).isInstanceOf(SandboxException.class)
          .hasMessageContaining("no-such-namespace-here");
    }
    assertThat(provider.get("no such pod !")).as("not a pod name: not looked up, not an error").isEmpty();
  }

  /** No pod of the failed create (marked with this label value) is left, not even one being deleted. */
  private static void assertNothingLeft(String mark) {
    List<SandboxInfo> left = provider.list().stream().filter(i -> mark.equals(i.labels().get("mark"))).toList();
    assertThat(left).as("no failed sandbox pod stays behind").isEmpty();
  }

  @Test
  void connectionsThroughThePortForwardAndLocalFloodsCostNothingOnceGone() throws Exception {
    KubernetesSandbox warm = provider.create(spec().build());
    warm.exec("true");
    warm.destroy();
    int fds = openFds();
    int threads = Thread.activeCount();
    KubernetesSandbox s = provider.create(spec().build());
    for (int i = 0; i < 30; i++) { // a client of its own each: a new connection, so a new WebSocket, each time
      try (Sandbox client = Sandbox.builder().baseUrl(s.baseUrl()).token(s.token()).build()) {
        assertThat(client.exec("echo " + i).stdout()).isEqualTo(i + "\n");
      }
    }
    s.exec("true"); // the handle's own client holds a pooled connection through the flood
    java.util.List<java.net.Socket> flood = new java.util.ArrayList<>();
    try {
      for (int i = 0; i < 300; i++) { // silent clients, as any local process could open: 256 forwarded, the rest refused
        flood.add(new java.net.Socket("127.0.0.1", s.baseUrl().getPort()));
      }
      assertThat(s.exec("echo still served").stdout()).as("the SDK's own pooled connection").isEqualTo("still served\n");
    } finally {
      for (java.net.Socket c : flood) {
        c.close();
      }
    }
    // The forwards end once they see their clients gone, and the idle pool threads of fabric8 and the
    // JDK HTTP client after their 60 s keep-alive; a new client is then forwarded again.
    long t0 = System.nanoTime();
    assertThat(await(150_000, () -> openFds() <= fds + 8 && Thread.activeCount() <= threads + 8))
        .as("fds %d (before %d), threads %d (before %d): %s", openFds(), fds, Thread.activeCount(), threads, threadNames())
        .isTrue();
    System.out.printf("port-forward flood: settled %d ms after the clients left%n", (System.nanoTime() - t0) / 1_000_000);
    try (Sandbox fresh = Sandbox.builder().baseUrl(s.baseUrl()).token(s.token()).build()) {
      assertThat(fresh.exec("echo new connection").stdout()).isEqualTo("new connection\n");
    }
    s.close();
  }

  private static String threadNames() {
    return Thread.getAllStackTraces().keySet().stream().map(t -> t.getName().replaceAll("\\d+", "N"))
        .collect(java.util.stream.Collectors.groupingBy(n -> n, java.util.TreeMap::new, java.util.stream.Collectors.counting()))
        .toString();
  }

  private static int openFds() {
    String[] fds = new java.io.File("/proc/self/fd").list();
    return fds == null ? -1 : fds.length;
  }

  @Test
  void aSandboxFromAClosedProviderHandleStillDestroys() {
    KubernetesSandbox s = provider.create(spec().build());
    try (Sandbox client = Sandbox.builder().baseUrl(s.baseUrl()).token(s.token()).build()) {
      assertThat(client.exec("echo own client").stdout()).isEqualTo("own client\n");
    }
    s.destroy();
    assertThat(admin.podExists(s.podName())).isFalse();
  }
}
