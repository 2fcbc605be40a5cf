package dev.sandboxsdk.container;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.command.InspectContainerResponse;
import com.github.dockerjava.api.exception.NotFoundException;
import com.github.dockerjava.api.model.HostConfig;
import dev.sandboxsdk.ExecResult;
import dev.sandboxsdk.ManagedSandbox;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxInfo;
import dev.sandboxsdk.SandboxSpec;
import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/** The container provider's lifecycle against a real engine: start, find, list, limits, errors, destroy. */
@ExtendWith(ContainerEngine.class)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ContainerSandboxIT {

  private static ContainerSandbox.Builder sandbox() {
    return ContainerSandbox.builder().image(ContainerEngine.IMAGE);
  }

  @Test
  void aStartedSandboxRunsCommandsAsTheSandboxUserInTheWorkspaceWithTheCallersEnv() {
    try (ContainerSandbox s = sandbox().env("GREETING", "hello from the host").start()) {
      ExecResult r = s.exec("id -u; id -un; pwd; echo \"$GREETING\"; echo \"[${SANDBOX_AGENT_TOKEN-}]\";"
          + " echo \"$HOME\"; touch \"$HOME/.written\" && echo home-writable");

      assertThat(r.exitCode()).isZero();
      assertThat(r.stdout()).isEqualTo("1000\nsandbox\n/workspace\nhello from the host\n[]\n/home/sandbox\nhome-writable\n");
      assertThat(s.baseUrl().getHost()).isEqualTo("127.0.0.1");
    }
  }

  @Test
  void theAgentPortIsPublishedOnLoopbackOnlyAndTheLimitsAndPolicyAreApplied() throws IOException {
    try (ContainerSandbox s = sandbox().memoryBytes(300L << 20).cpus(0.5).pidsLimit(200).start();
         DockerClient docker = ContainerEngine.client()) {
      InspectContainerResponse c = docker.inspectContainerCmd(s.id()).exec();
      HostConfig h = c.getHostConfig();

      assertThat(h.getMemory()).isEqualTo(300L << 20);
      assertThat(h.getMemorySwap()).as("no swap beyond the memory limit").isEqualTo(300L << 20);
      assertThat(h.getNanoCPUs()).isEqualTo(500_000_000L);
      assertThat(h.getPidsLimit()).isEqualTo(200L);
      assertThat(h.getReadonlyRootfs()).isTrue();
      assertThat(h.getSecurityOpts()).anyMatch(o -> o.startsWith("no-new-privileges"));
      assertThat(h.getTmpFs()).containsKey("/tmp");
      assertThat(c.getNetworkSettings().getPorts().getBindings().values())
          .allSatisfy(bindings -> assertThat(bindings).allSatisfy(b -> assertThat(b.getHostIp()).isEqualTo("127.0.0.1")));
      // The cgroup the engine made holds the container to them.
      String limits = s.exec("cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max;"
          + " cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes").stdout();
      assertThat(limits).isEqualTo("200\n" + (300L << 20) + "\n");
    }
  }

  @Test
  void anotherProviderGetsARunningSandboxBackByIdAndListsItWithItsLabels() {
    ContainerSandbox created = sandbox().removeOnClose(false).label("team", "search").start();
    try {
      created.exec("echo kept > kept.txt");
      created.close(); // a kept sandbox outlives its handle

      try (ContainerProvider other = ContainerProvider.fromEnvironment()) {
        Optional<ManagedSandbox> found = other.get(created.id());
        assertThat(found).isPresent();
        try (ManagedSandbox again = found.get()) {
          assertThat(again.exec("cat kept.txt").stdout()).isEqualTo("kept\n");
        }
        assertThat(other.get(created.id().substring(0, 12))).as("a short id works too").isPresent();
        List<SandboxInfo> all = other.list();
        assertThat(all).filteredOn(i -> i.id().equals(created.id())).singleElement().satisfies(i -> {
          assertThat(i.labels()).containsEntry("team", "search");
          assertThat(i.isRunning()).isTrue();
          assertThat(i.provider()).isEqualTo("container");
          assertThat(i.endpoint()).isEqualTo(created.baseUrl());
        });
        // closing the handle from get() did not remove it
        assertThat(other.get(created.id())).isPresent();
        assertThat(other.get("no-such-sandbox")).isEmpty();
      }
    } finally {
      created.destroy();
    }
    try (ContainerProvider other = ContainerProvider.fromEnvironment()) {
      assertThat(other.get(created.id())).isEmpty();
    }
  }

  @Test
  void destroyRemovesTheContainerAndItsVolumes() throws IOException {
    ContainerSandbox s = sandbox().start();
    try (DockerClient docker = ContainerEngine.client()) {
      InspectContainerResponse c = docker.inspectContainerCmd(s.id()).exec();
      List<String> volumes = c.getMounts().stream()
          .filter(m -> List.of("/workspace", "/home/sandbox", "/var/lib/sandbox-agent/checkpoints")
              .contains(m.getDestination().getPath()))
          .map(InspectContainerResponse.Mount::getName).toList();
      assertThat(volumes).hasSize(3).allSatisfy(v -> assertThat(v).isNotBlank());
      s.exec("head -c 1000000 /dev/zero > big; touch ~/.profile-of-mine");
      s.checkpoints().create("kept-in-a-volume");

      s.destroy();

      assertThatThrownBy(() -> docker.inspectContainerCmd(s.id()).exec()).isInstanceOf(NotFoundException.class);
      for (String v : volumes) {
        assertThatThrownBy(() -> docker.inspectVolumeCmd(v).exec()).as(v).isInstanceOf(NotFoundException.class);
      }
    }
    assertThatThrownBy(() -> s.exec("true")).isInstanceOf(IllegalStateException.class);
  }

  @Test
  void closeRemovesASandboxThisJvmCreated() throws IOException {
    ContainerSandbox s = sandbox().start();
    s.close();
    try (DockerClient docker = ContainerEngine.client()) {
      assertThatThrownBy(() -> docker.inspectContainerCmd(s.id()).exec()).isInstanceOf(NotFoundException.class);
    }
  }

  @Test
  void anIdleSandboxStopsByItselfAndIsRemovedOnTheNextCreate() throws Exception {
    ContainerSandbox s = sandbox().idleTimeout(Duration.ofSeconds(2)).removeOnClose(false).start();
    try (ContainerProvider p = ContainerProvider.fromEnvironment()) {
      // requests keep it alive
      for (int i = 0; i < 4; i++) {
        Thread.sleep(800);
        assertThat(s.exec("true").exitCode()).isZero();
      }
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (p.get(s.id()).isPresent() && System.nanoTime() < deadline) {
        Thread.sleep(250);
      }
      assertThat(p.get(s.id())).as("stopped after 2 s without a request").isEmpty();
      assertThat(p.list()).filteredOn(i -> i.id().equals(s.id())).singleElement()
          .satisfies(i -> assertThat(i.isRunning()).isFalse());
      assertThat(p.removeExited()).isGreaterThanOrEqualTo(1);
      assertThat(p.list()).noneMatch(i -> i.id().equals(s.id()));
    } finally {
      s.destroy();
    }
  }

  @Test
  void anEngineOnTcpWorksLikeTheSocket() {
    // .ci/run starts the same engine's API on TCP too and names it here.
    String tcp = System.getenv("SANDBOX_TEST_TCP_DOCKER_HOST");
    assumeTrue(tcp != null && !tcp.isBlank(), "SANDBOX_TEST_TCP_DOCKER_HOST names no tcp:// engine address");
    try (ContainerSandbox s = sandbox().dockerHost(URI.create(tcp)).start()) {
      assertThat(s.baseUrl().getHost()).isEqualTo(URI.create(tcp).getHost());
      assertThat(s.exec("id -un").stdout()).isEqualTo("sandbox\n");
    }
  }

  @Test
  void aMissingImageIsReportedWithWhatToDo() {
    assertThatThrownBy(() -> ContainerSandbox.builder().image("localhost/sandbox-agent-that-does-not-exist:1").start())
        .isInstanceOf(SandboxException.class)
        .hasMessageContaining("image 'localhost/sandbox-agent-that-does-not-exist:1' not found")
        .hasMessageContaining("docker build");
  }

  @Test
  void aContainerThatDiesDuringStartUpIsReportedWithItsLastOutputAndRemoved() {
    long before;
    try (ContainerProvider p = ContainerProvider.fromEnvironment()) {
      before = p.list().size();
    }
    assertThatThrownBy(() -> sandbox().agentArgument("--no-such-agent-option").start())
        .isInstanceOf(SandboxException.class)
        .hasMessageContaining("exited during start-up")
        .hasMessageContaining("--no-such-agent-option");
    try (ContainerProvider p = ContainerProvider.fromEnvironment()) {
      assertThat(p.list()).hasSizeLessThanOrEqualTo((int) before);
    }
  }

  @Test
  void theProviderSeamCreatesTheSameSandboxFromASpec() {
    SandboxSpec spec = SandboxSpec.builder().image(ContainerEngine.IMAGE).memoryBytes(256L << 20).build();
    try (ContainerProvider p = ContainerProvider.fromEnvironment(); ManagedSandbox s = p.create(spec)) {
      assertThat(s.exec("echo $((6 * 7))").stdout()).isEqualTo("42\n");
      assertThat(s.info().state().wireName()).isEqualTo("running");
      assertThat(p.ping()).isNotBlank();
    }
  }
}
