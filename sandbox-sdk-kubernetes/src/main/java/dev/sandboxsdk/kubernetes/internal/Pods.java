package dev.sandboxsdk.kubernetes.internal;

import dev.sandboxsdk.SandboxInfo;
import dev.sandboxsdk.SandboxState;
import dev.sandboxsdk.kubernetes.KubernetesAccess;
import io.fabric8.kubernetes.api.model.Pod;
import java.net.URI;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Pattern;

/** Reads what a sandbox pod says about itself: its name, state and the caller's labels. */
public final class Pods {
  private static final Pattern SANDBOX_NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,62}");

  private Pods() {}

  /** A sandbox pod as the provider needs it. */
  public record Found(String pod, String name, boolean running, String podIp, boolean stopping) {
    /**
     * Whether {@code get} hands out this sandbox: one that runs, or a named one that ended (its
     * handle can destroy it), but never one being deleted: its pod may linger for a while (its
     * grace period, a busy kubelet), and a destroyed sandbox must not be found again meanwhile.
     */
    public boolean gettable() {
      return !stopping && (running || name != null);
    }
  }

  static Found found(Pod p) {
    return new Found(p.getMetadata().getName(), sandboxName(p), isRunning(p),
        p.getStatus() == null ? null : p.getStatus().getPodIP(), p.getMetadata().getDeletionTimestamp() != null);
  }

  /** Whether {@code s} is a valid sandbox name (as {@code SandboxSpec.Builder#name} checks). */
  public static boolean isSandboxName(String s) {
    return SANDBOX_NAME.matcher(s).matches();
  }

  /** The sandbox's name, or null for an unnamed one. */
  static String sandboxName(Pod p) {
    Map<String, String> a = p.getMetadata().getAnnotations();
    return a == null ? null : a.get(PodSpecs.NAME_ANNOTATION);
  }

  /** Whether the pod's agent runs and passes its readiness probe, and the pod is not being deleted. */
  static boolean isRunning(Pod p) {
    return p.getMetadata().getDeletionTimestamp() == null && p.getStatus() != null
        && "Running".equals(p.getStatus().getPhase()) && Cluster.isReady(p) && p.getStatus().getPodIP() != null;
  }

  /**
   * The pod's state in the provider's words: {@code running}; {@code starting} (pending, or its
   * agent not ready yet); {@code stopping} (being deleted); {@code exited} (its agent ended: idle
   * timeout or failure; a pod cannot start again).
   */
  static SandboxState state(Pod p) {
    if (p.getMetadata().getDeletionTimestamp() != null) {
      return SandboxState.STOPPING;
    }
    String phase = p.getStatus() == null ? null : p.getStatus().getPhase();
    if ("Succeeded".equals(phase) || "Failed".equals(phase)) {
      return SandboxState.EXITED;
    }
    return isRunning(p) ? SandboxState.RUNNING : SandboxState.STARTING;
  }

  /** The pod as a {@link SandboxInfo}; its endpoint is the pod's address with {@code POD_IP} access, else null. */
  static SandboxInfo info(Pod p, String provider, KubernetesAccess access) {
    Map<String, String> annotations = p.getMetadata().getAnnotations() == null ? Map.of() : p.getMetadata().getAnnotations();
    Map<String, String> user = new LinkedHashMap<>();
    annotations.forEach((k, v) -> {
      if (k.startsWith(PodSpecs.USER_ANNOTATION_PREFIX)) {
        user.put(k.substring(PodSpecs.USER_ANNOTATION_PREFIX.length()), v);
      }
    });
    Instant created;
    try {
      created = Instant.ofEpochMilli(Long.parseLong(annotations.getOrDefault("sandbox-sdk.dev/created-ms", "")));
    } catch (NumberFormatException e) {
      Instant c = Cluster.parse(p.getMetadata().getCreationTimestamp());
      created = c != null ? c : Instant.EPOCH;
    }
    String name = sandboxName(p);
    SandboxState state = state(p);
    URI endpoint = access == KubernetesAccess.POD_IP && isRunning(p)
        ? AgentLink.direct(p.getStatus().getPodIP()).baseUrl() : null;
    String image = p.getSpec() == null || p.getSpec().getContainers().isEmpty() ? ""
        : String.valueOf(p.getSpec().getContainers().get(0).getImage());
    return new SandboxInfo(p.getMetadata().getName(), provider, name != null ? name : p.getMetadata().getName(), image,
        state, created, endpoint, user, finishedAt(p));
  }

  /** When the agent ended, for an ended pod (its last activity); null otherwise. */
  private static Instant finishedAt(Pod p) {
    if (p.getStatus() == null || p.getStatus().getContainerStatuses() == null) {
      return null;
    }
    return p.getStatus().getContainerStatuses().stream()
        .filter(c -> c.getState() != null && c.getState().getTerminated() != null)
        .map(c -> Cluster.parse(c.getState().getTerminated().getFinishedAt()))
        .filter(java.util.Objects::nonNull).findFirst().orElse(null);
  }
}
