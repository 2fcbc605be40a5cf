package dev.sandboxsdk.kubernetes.internal;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceQuotaBuilder;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/** What the tests look at and arrange with the cluster's admin credentials, past the provider. */
public final class ClusterAdmin implements AutoCloseable {
  private final KubernetesClient client;
  private final String namespace;

  public ClusterAdmin(String kubeconfig, String namespace) {
    this.client = new KubernetesClientBuilder().withConfig(Config.fromKubeconfig(null, new java.io.File(kubeconfig))).build();
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

  /**
   * Creates a service account in the test namespace bound to {@code roleYaml} (a Role, whose
   * namespace is replaced by the test's) and writes a kubeconfig with that account's token: what
   * a provider can do with exactly the permissions the docs give.
   */
  public Path kubeconfigForRole(String roleYaml, Path dir) throws Exception {
    io.fabric8.kubernetes.api.model.rbac.Role role = io.fabric8.kubernetes.client.utils.Serialization.unmarshal(roleYaml,
        io.fabric8.kubernetes.api.model.rbac.Role.class);
    String name = "sandbox-sdk-rbac-test";
    role.getMetadata().setName(name);
    role.getMetadata().setNamespace(namespace);
    client.rbac().roles().inNamespace(namespace).resource(role).createOr(r -> r.update());
    client.serviceAccounts().inNamespace(namespace).resource(new io.fabric8.kubernetes.api.model.ServiceAccountBuilder()
        .withNewMetadata().withName(name).endMetadata().build()).createOr(r -> r.update());
    client.rbac().roleBindings().inNamespace(namespace).resource(new io.fabric8.kubernetes.api.model.rbac.RoleBindingBuilder()
        .withNewMetadata().withName(name).endMetadata()
        .withNewRoleRef().withApiGroup("rbac.authorization.k8s.io").withKind("Role").withName(name).endRoleRef()
        .addNewSubject().withKind("ServiceAccount").withName(name).withNamespace(namespace).endSubject().build())
        .createOr(r -> r.update());
    // Kubernetes 1.20 makes a token Secret for every service account; wait for it.
    String token = null;
    for (int i = 0; i < 100 && token == null; i++) {
      token = client.secrets().inNamespace(namespace).list().getItems().stream()
          .filter(s -> "kubernetes.io/service-account-token".equals(s.getType()) && s.getMetadata().getAnnotations() != null
              && name.equals(s.getMetadata().getAnnotations().get("kubernetes.io/service-account.name")))
          .map(s -> new String(java.util.Base64.getDecoder().decode(s.getData().get("token")),
              java.nio.charset.StandardCharsets.UTF_8))
          .findFirst().orElse(null);
      if (token == null) {
        Thread.sleep(100);
      }
    }
    if (token == null) {
      throw new IllegalStateException("no token Secret for the service account " + name);
    }
    Path file = dir.resolve("rbac.kubeconfig");
    Files.writeString(file, "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \""
        + client.getConfiguration().getMasterUrl() + "\", insecure-skip-tls-verify: true}}]\n"
        + "users: [{name: u, user: {token: \"" + token + "\"}}]\n"
        + "contexts: [{name: x, context: {cluster: c, user: u, namespace: " + namespace + "}}]\ncurrent-context: x\n");
    return file;
  }

  public void deleteNamespace(String ns) {
    client.namespaces().withName(ns).delete();
  }

  @Override
  public void close() {
    client.close();
  }
}
