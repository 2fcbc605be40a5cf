package dev.sandboxsdk.mcp.internal;

import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.kubernetes.KubernetesAccess;
import dev.sandboxsdk.kubernetes.KubernetesProvider;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one place that names the Kubernetes provider. Kept apart from {@link Sandboxes}, like
 * {@link ContainerProviders}, so that the provider and the fabric8 client are loaded only when the
 * server runs with {@code --provider kubernetes}: a local server starts as fast as without them.
 */
final class KubernetesProviders {
  private static final Logger log = LoggerFactory.getLogger(KubernetesProviders.class);

  private KubernetesProviders() {
  }

  /**
   * The provider of {@code --provider kubernetes} and its options; connects lazily. Its start-up
   * check logs whether the API server answers, with {@code image}.
   */
  static SandboxProviders.Made create(AdapterConfig.Kubernetes k, String image) {
    KubernetesProvider.Builder b = KubernetesProvider.builder()
        .imagePullPolicy(k.imagePullPolicy())
        .access(k.podIp() ? KubernetesAccess.POD_IP : KubernetesAccess.PORT_FORWARD);
    if (k.kubeconfig() != null) {
      b.kubeconfig(k.kubeconfig());
    }
    if (k.context() != null) {
      b.context(k.context());
    }
    if (k.namespace() != null) {
      b.namespace(k.namespace());
    }
    if (k.serviceAccount() != null) {
      b.serviceAccount(k.serviceAccount());
    }
    KubernetesProvider k8s = b.build();
    return new SandboxProviders.Made(k8s, () -> logCluster(k8s, image));
  }

  /**
   * Logs whether the cluster's API server answers, so an operator sees a wrong kubeconfig or an
   * unreachable cluster in the server's log at start rather than only in the first getSandbox
   * result. Never throws.
   */
  static void logCluster(KubernetesProvider k8s, String image) {
    try {
      log.info("kubernetes provider: API server {}, namespace {}, {}, image {}", k8s.ping(), k8s.namespace(),
          k8s.access(), image);
    } catch (SandboxException e) {
      log.warn("kubernetes provider: {}; every sandbox will fail to start until the API server answers",
          e.getMessage());
    } catch (RuntimeException e) {
      log.warn("kubernetes provider: checking the API server failed: {}", e.toString());
    }
  }
}
