package dev.sandboxsdk.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandboxsdk.SandboxConnectionException;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxSpec;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The provider's settings and its errors without a cluster. */
class KubernetesProviderTest {
  @TempDir
  Path tmp;

  @Test
  void settingsTheApiServerWouldRefuseAreRefusedAtOnce() {
    assertThatThrownBy(() -> KubernetesProvider.builder().namespace("Not_A_Namespace"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("namespace");
    assertThatThrownBy(() -> KubernetesProvider.builder().serviceAccount("x".repeat(64)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("service account");
    assertThatThrownBy(() -> KubernetesProvider.builder().imagePullPolicy("Sometimes"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("Always, IfNotPresent or Never");
    assertThatThrownBy(() -> KubernetesProvider.builder().workspaceSizeBytes(1000))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("1 MiB");
  }

  @Test
  void anUnreadableKubeconfigSaysWhichFile() {
    Path missing = tmp.resolve("nope.kubeconfig");
    assertThatThrownBy(() -> KubernetesProvider.builder().kubeconfig(missing).build())
        .isInstanceOf(SandboxException.class).hasMessageContaining(missing.toString());
  }

  @Test
  void anApiServerThatDoesNotAnswerIsAConnectionErrorNamingIt() throws Exception {
    Path config = tmp.resolve("down.kubeconfig");
    Files.writeString(config, "apiVersion: v1\nkind: Config\n"
        + "clusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\", insecure-skip-tls-verify: true}}]\n"
        + "users: [{name: u, user: {token: t}}]\n"
        + "contexts: [{name: x, context: {cluster: c, user: u, namespace: team-a}}]\ncurrent-context: x\n");
    try (KubernetesProvider p = KubernetesProvider.builder().kubeconfig(config).build()) {
      assertThat(p.namespace()).as("the context's namespace").isEqualTo("team-a");
      assertThat(p.name()).isEqualTo("kubernetes");
      assertThatThrownBy(p::ping).isInstanceOf(SandboxConnectionException.class).hasMessageContaining("https://127.0.0.1:1");
      assertThatThrownBy(() -> p.create(SandboxSpec.defaults())).isInstanceOf(SandboxConnectionException.class)
          .hasMessageContaining("not reachable");
      assertThat(p.get("Not a pod name")).isEmpty();
    }
  }
}
