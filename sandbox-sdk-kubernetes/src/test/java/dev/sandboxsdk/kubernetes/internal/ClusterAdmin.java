package dev.sandboxsdk.kubernetes.internal;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceQuotaBuilder;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/** What the tests look at and arrange with the cluster's admin credentials, past the provider. */
public final class ClusterAdmin implements AutoCloseable {
  private final KubernetesClient client;
  private final String namespace;

  public ClusterAdmin(String kubeconfig, String namespace) {
    try {
      this.client = new KubernetesClientBuilder()
          .withConfig(Config.fromKubeconfig(null, Files.readString(Path.of(kubeconfig)), kubeconfig)).build();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    this.namespace = namespace;
  }

  public boolean podExists(String pod) {
    return client.pods().inNamespace(namespace).withName(pod).get() != null;
  }

  public boolean secretExists(String pod) {
    return client.secrets().inNamespace(namespace).withName(PodSpecs.secretName(pod)).get() != null;
  }

  public boolean policyExists(String pod) {
    return client.network().v1().networkPolicies().inNamespace(namespace).withName(PodSpecs.policyName(pod)).get() != null;
  }

  /** The pod as the API server has it (for its spec), or null. */
  public Pod pod(String pod) {
    return client.pods().inNamespace(namespace).withName(pod).get();
  }

  /** The token, read the way anyone allowed to read the namespace's Secrets can. */
  public String token(String pod) {
    String b64 = client.secrets().inNamespace(namespace).withName(PodSpecs.secretName(pod)).get().getData()
        .get(PodSpecs.TOKEN_KEY);
    return new String(java.util.Base64.getDecoder().decode(b64), java.nio.charset.StandardCharsets.UTF_8);
  }

  /** Creates a namespace (if missing) with a ResourceQuota that admits at most {@code pods} pods. */
  public void namespaceWithPodQuota(String ns, int pods) {
    client.namespaces().resource(new io.fabric8.kubernetes.api.model.NamespaceBuilder().withNewMetadata().withName(ns)
        .endMetadata().build()).createOr(existing -> existing.update());
    client.resourceQuotas().inNamespace(ns).resource(new ResourceQuotaBuilder().withNewMetadata().withName("pods")
        .endMetadata().withNewSpec().withHard(Map.of("pods", new Quantity(String.valueOf(pods)))).endSpec().build())
        .createOr(existing -> existing.update());
  }

  public void deleteNamespace(String ns) {
    client.namespaces().withName(ns).delete();
  }

  @Override
  public void close() {
    client.close();
  }
}
