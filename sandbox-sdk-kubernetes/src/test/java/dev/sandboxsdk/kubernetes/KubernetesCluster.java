package dev.sandboxsdk.kubernetes;

import dev.sandboxsdk.contract.SkipNotice;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Runs a test class only when a cluster is named: {@code -Dsandbox.kubeconfig=FILE} (the script
 * {@code sandbox-sdk-kubernetes/e2e/cluster/run.sh} starts a real one-node cluster, loads the agent image
 * into it and passes its kubeconfig). Without one the class is skipped with one line on stderr, so
 * {@code ./mvnw verify} passes on a machine without Kubernetes; with one that does not answer, the
 * run fails. The image ({@code -Dsandbox.k8s.image}) must be on the node: pods use
 * {@code imagePullPolicy: Never}.
 */
public final class KubernetesCluster implements ExecutionCondition {
  /** The kubeconfig of the cluster under test, or "" for none. */
  public static final String KUBECONFIG = System.getProperty("sandbox.kubeconfig", "");
  /** The agent image on the cluster's node. */
  public static final String IMAGE = System.getProperty("sandbox.k8s.image", "localhost/sandbox-agent:k8s");
  /**
   * The image with curl, python3 (and matplotlib) and node, when the cluster script loaded it
   * ({@code -Dsandbox.k8s.clientsImage}); null otherwise.
   */
  public static final String CLIENTS_IMAGE = System.getProperty("sandbox.k8s.clientsImage");
  /** The namespace the tests create sandboxes in (run.sh creates it). */
  public static final String NAMESPACE = System.getProperty("sandbox.k8s.namespace", "sandbox-it");

  private static String failure;
  private static boolean checked;

  @Override
  public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
    if (KUBECONFIG.isEmpty()) {
      return SkipNotice.disabled("kubernetes", "no cluster named (-Dsandbox.kubeconfig=FILE;"
          + " sandbox-sdk-kubernetes/e2e/cluster/run.sh starts one and runs them)", "no -Dsandbox.kubeconfig");
    }
    String why = check();
    if (why != null) {
      throw new IllegalStateException("-Dsandbox.kubeconfig=" + KUBECONFIG + " names a cluster the tests cannot use: " + why);
    }
    return ConditionEvaluationResult.enabled("cluster " + KUBECONFIG);
  }

  private static synchronized String check() {
    if (!checked) {
      checked = true;
      if (!Files.isReadable(Path.of(KUBECONFIG))) {
        failure = "no such file";
      } else {
        try (KubernetesProvider p = provider().build()) {
          p.ping();
        } catch (RuntimeException e) {
          failure = String.valueOf(e.getMessage());
        }
      }
    }
    return failure;
  }

  /** A provider builder for the cluster under test: its kubeconfig, the test namespace, images from the node. */
  public static KubernetesProvider.Builder provider() {
    return KubernetesProvider.builder().kubeconfig(Path.of(KUBECONFIG)).namespace(NAMESPACE).imagePullPolicy("Never");
  }
}
