package dev.sandboxsdk.contract;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;

/**
 * How the providers' test conditions (ContainerEngine, KubernetesCluster) skip a test class where
 * their back end is missing: disabled with a reason, and one line on stderr the first time per run.
 */
public final class SkipNotice {
  private static final Set<String> ANNOUNCED = ConcurrentHashMap.newKeySet();

  private SkipNotice() {}

  /**
   * Disables the test class for {@code reason}; the first time per {@code kind} ("container",
   * "kubernetes") it prints {@code [KIND tests skipped] LINE} on stderr.
   */
  public static ConditionEvaluationResult disabled(String kind, String line, String reason) {
    if (ANNOUNCED.add(kind)) {
      System.err.println("[" + kind + " tests skipped] " + line);
    }
    return ConditionEvaluationResult.disabled(reason);
  }
}
