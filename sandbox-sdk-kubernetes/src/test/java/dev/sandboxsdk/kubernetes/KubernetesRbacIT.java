package dev.sandboxsdk.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandboxsdk.ManagedSandbox;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxSpec;
import dev.sandboxsdk.kubernetes.internal.ClusterAdmin;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Role that docs/kubernetes.md gives ("RBAC") is enough for everything the provider does, with
 * both kinds of access, and the errors it reports: the test binds that very YAML, read from the
 * doc, to a service account and uses the provider with that account's token only.
 */
@ExtendWith(KubernetesCluster.class)
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class KubernetesRbacIT {
  @TempDir
  Path tmp;

  private static String roleFromTheDocs() throws Exception {
    String doc = Files.readString(Path.of("..", "docs", "kubernetes.md"));
    int rbac = doc.indexOf("**RBAC.**");
    int start = doc.indexOf("```yaml\n", rbac) + "```yaml\n".length();
    return doc.substring(start, doc.indexOf("```", start));
  }

  @Test
  void theDocumentedRoleIsEnoughForTheWholeLifecycle() throws Exception {
    Path kubeconfig;
    try (ClusterAdmin admin = new ClusterAdmin(KubernetesCluster.KUBECONFIG, KubernetesCluster.NAMESPACE)) {
      kubeconfig = admin.kubeconfigForRole(roleFromTheDocs(), tmp);
    }
    SandboxSpec spec = SandboxSpec.builder().image(KubernetesCluster.IMAGE).build();
    try (KubernetesProvider forwarded = KubernetesProvider.builder().kubeconfig(kubeconfig).imagePullPolicy("Never").build();
         KubernetesProvider direct = KubernetesProvider.builder().kubeconfig(kubeconfig).imagePullPolicy("Never")
             .access(KubernetesAccess.POD_IP).build()) {
      assertThat(forwarded.namespace()).isEqualTo(KubernetesCluster.NAMESPACE);
      KubernetesSandbox s = forwarded.create(spec.toBuilder().name("rbac-" + System.nanoTime()).build());
      try {
        assertThat(s.exec("echo ok").stdout()).isEqualTo("ok\n");
        assertThat(forwarded.list()).anyMatch(i -> i.id().equals(s.podName()));
        ManagedSandbox again = direct.get(s.name()).orElseThrow();
        assertThat(again.exec("echo again").stdout()).isEqualTo("again\n");
        again.close();
        // Start-up errors read the pod's events and log with these permissions too.
        assertThatThrownBy(() -> forwarded.create(spec.toBuilder().image("localhost/no-such-image:2")
            .startupTimeout(Duration.ofSeconds(20)).build()))
            .isInstanceOf(SandboxException.class).hasMessageContaining("ErrImageNeverPull").hasMessageContaining("events:");
        // Lists and deletes pods and Secrets: a 403 there would throw.
        assertThatCode(forwarded::removeFinished).doesNotThrowAnyException();
      } finally {
        s.destroy();
      }
      assertThat(forwarded.get(s.name())).isEmpty();
    }
  }
}
