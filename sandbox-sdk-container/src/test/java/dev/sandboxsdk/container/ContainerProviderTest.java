package dev.sandboxsdk.container;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandboxsdk.SandboxConnectionException;
import dev.sandboxsdk.SandboxSpec;
import java.net.URI;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What the provider does without an engine: clear errors, and settings checked before any call. */
class ContainerProviderTest {

  @Test
  void anUnreachableEngineIsReportedWithItsAddressAndWhatToDo(@TempDir Path dir) {
    URI nowhere = URI.create("unix://" + dir.resolve("no-engine.sock"));

    assertThatThrownBy(() -> ContainerSandbox.builder().dockerHost(nowhere).start())
        .isInstanceOf(SandboxConnectionException.class)
        .hasMessageContaining("no container engine reachable at " + nowhere)
        .hasMessageContaining("DOCKER_HOST");
    try (ContainerProvider p = ContainerProvider.builder().dockerHost(nowhere).build()) {
      assertThatThrownBy(p::list).isInstanceOf(SandboxConnectionException.class);
      assertThatThrownBy(p::ping).isInstanceOf(SandboxConnectionException.class);
    }
  }

  @Test
  void aTcpEngineIsReachedAtItsOwnHost() {
    try (ContainerProvider p = ContainerProvider.builder().dockerHost(URI.create("tcp://10.1.2.3:2375")).build()) {
      assertThat(p.engineHost()).isEqualTo(URI.create("tcp://10.1.2.3:2375"));
      assertThat(p.toString()).contains("tcp://10.1.2.3:2375");
    }
  }

  @Test
  void badSettingsAreRefusedBeforeAnythingStarts() {
    assertThatThrownBy(() -> ContainerSandbox.builder().dockerHost(URI.create("http://localhost:2375")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("unix:// or tcp://");
    assertThatThrownBy(() -> ContainerSandbox.builder().memoryBytes(1 << 20))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("64 MiB");
    assertThatThrownBy(() -> ContainerSandbox.builder().cpus(0)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ContainerSandbox.builder().cpus(Double.NaN)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ContainerSandbox.builder().pidsLimit(10)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ContainerSandbox.builder().env("SANDBOX_AGENT_TOKEN", "x"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("set by the sandbox itself");
    assertThatThrownBy(() -> ContainerSandbox.builder().env("A-B", "x")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ContainerSandbox.builder().env("A", "x\0y")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ContainerSandbox.builder().image("bad image")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ContainerSandbox.builder().label("bad key", "v")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ContainerSandbox.builder().agentArgument("port")).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void theSpecDefaultsAreTheSafeOnesAndItsToStringHidesEnvValues() {
    SandboxSpec spec = SandboxSpec.builder().env("API_KEY", "s3cret").build();

    assertThat(spec.network()).isFalse();
    assertThat(spec.memoryBytes()).isEqualTo(1L << 30);
    assertThat(spec.pidsLimit()).isEqualTo(512);
    assertThat(spec.idleTimeout()).isEqualTo(SandboxSpec.DEFAULT_IDLE_TIMEOUT);
    assertThat(spec.toString()).contains("API_KEY").doesNotContain("s3cret");
    assertThat(spec.toBuilder().keepAlive().build().idleTimeout()).isNull();
  }
}
