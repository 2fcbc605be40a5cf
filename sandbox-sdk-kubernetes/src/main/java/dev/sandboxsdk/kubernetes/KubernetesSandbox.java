package dev.sandboxsdk.kubernetes;

import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.kubernetes.internal.AgentLink;
import dev.sandboxsdk.spi.AgentClient;
import dev.sandboxsdk.spi.SandboxHandle;
import java.net.URI;

/**
 * A sandbox in its own pod, with the security policy of {@link KubernetesProvider}.
 *
 * <p><b>Lifecycle.</b> A sandbox this JVM created without a name is deleted (pod, token Secret,
 * NetworkPolicy) by {@link #close()}, {@link #destroy()}, or when this JVM exits. A named one
 * ({@link dev.sandboxsdk.SandboxSpec.Builder#name}) stays until {@link #destroy()}; any JVM finds it
 * with {@link KubernetesProvider#get(String)}. Either kind ends by itself after its idle timeout:
 * its agent exits, the pod completes, and {@link KubernetesProvider#removeFinished()} (which every
 * create runs) deletes it. A pod cannot stop and start again with its files (its workspace, an
 * {@code emptyDir}, lives as long as the pod), so {@link #shutdown()} and waking an ended sandbox
 * fail and say so: checkpoint what must survive, or use the container provider. {@link #destroy()}
 * deletes the pod (its agent stops every process), its token Secret and NetworkPolicy, and returns
 * once the pod is gone. A handle from {@code get} never deletes the sandbox on close; {@code destroy()} does.
 *
 * <p>Thread-safe, like every {@link Sandbox}.
 */
public final class KubernetesSandbox extends SandboxHandle {
  private final String pod;
  private final String name;
  private final String token;

  KubernetesSandbox(KubernetesProvider provider, String pod, String name, AgentLink link, String token,
      boolean removeOnClose) {
    super(provider.backend(), pod, "sandbox pod " + label(pod, name),
        link == null ? null : AgentClient.connect(link.baseUrl(), token, link), removeOnClose, null);
    this.pod = pod;
    this.name = name;
    this.token = token;
  }

  /** How messages name a sandbox pod: its name and pod, else its pod. */
  static String label(String pod, String name) {
    return name != null ? "'" + name + "' (" + pod + ")" : pod;
  }

  /** The sandbox's token, for tests that connect clients of their own; null if the pod was not running. */
  String token() {
    return token;
  }

  /** The sandbox's name, or null if it has none. */
  public String name() {
    return name;
  }

  /** The pod's name. */
  public String podName() {
    return pod;
  }

  /**
   * The agent's address as this JVM reaches it: the local end of this handle's port-forward, e.g.
   * {@code http://127.0.0.1:41234}, or the pod's address; null if the pod was not running.
   */
  public URI baseUrl() {
    return client() instanceof AgentClient c ? c.baseUrl() : null;
  }
}
