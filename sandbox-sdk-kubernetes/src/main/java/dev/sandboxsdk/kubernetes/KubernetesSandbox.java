package dev.sandboxsdk.kubernetes;

import dev.sandboxsdk.ForwardingSandbox;
import dev.sandboxsdk.ManagedSandbox;
import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxInfo;
import dev.sandboxsdk.kubernetes.internal.AgentLink;
import java.net.URI;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A sandbox in its own pod, with the security policy of {@link KubernetesProvider}.
 *
 * <p><b>Lifecycle.</b> A sandbox this JVM created without a name is deleted (pod, token Secret,
 * NetworkPolicy) by {@link #close()}, {@link #destroy()}, or when this JVM exits. A named one
 * ({@link dev.sandboxsdk.SandboxSpec.Builder#name}) stays until {@link #destroy()}; any JVM finds it
 * with {@link KubernetesProvider#get(String)}. Either kind ends by itself after its idle timeout:
 * its agent exits, the pod completes, and {@link KubernetesProvider#removeFinished()} (which every
 * create runs) deletes it. A pod cannot stop and start again with its files, so {@link #shutdown()}
 * and waking an ended sandbox fail and say so: checkpoint what must survive, or use the container
 * provider. A handle from {@code get} never deletes the sandbox on close; {@code destroy()} does.
 *
 * <p>Thread-safe, like every {@link Sandbox}.
 */
public final class KubernetesSandbox extends ForwardingSandbox implements ManagedSandbox {
  private static final Logger log = LoggerFactory.getLogger(KubernetesSandbox.class);

  private final KubernetesProvider provider;
  private final String pod;
  private final String name;
  private final String token;
  private final boolean removeOnClose;
  private final Thread shutdownHook;
  private final Object lifecycle = new Object();
  /** Null when the pod was not running when this handle was made, and after close. */
  private volatile AgentLink link;
  private volatile Sandbox client;
  private boolean closed;

  KubernetesSandbox(KubernetesProvider provider, String pod, String name, AgentLink link, String token,
      boolean removeOnClose) {
    this.provider = provider;
    this.pod = pod;
    this.name = name;
    this.link = link;
    this.token = token;
    this.client = link == null ? null : Sandbox.builder().baseUrl(link.baseUrl()).token(token).build();
    this.removeOnClose = removeOnClose;
    if (removeOnClose) {
      shutdownHook = new Thread(this::removeQuietly, "sandbox-pod-shutdown");
      Runtime.getRuntime().addShutdownHook(shutdownHook);
    } else {
      shutdownHook = null;
    }
  }

  @Override
  protected Sandbox delegate() {
    Sandbox c = client;
    if (c == null) {
      throw new SandboxException(closed ? "this handle on the sandbox pod " + label() + " is closed"
          : "the sandbox pod " + label() + " is not running (its agent ended, e.g. after its idle timeout): a pod cannot"
          + " start again, so destroy() it and create a new sandbox", null);
    }
    return c;
  }

  private String label() {
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

  /** The pod's name, which is this sandbox's id. */
  @Override
  public String id() {
    return pod;
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
    AgentLink l = link;
    return l == null ? null : l.baseUrl();
  }

  /** The pod as the API server reports it now. */
  @Override
  public SandboxInfo info() {
    return provider.info(pod);
  }

  /**
   * Not possible on Kubernetes: a pod cannot stop and start again, and the workspace (an
   * {@code emptyDir}) lives only as long as the pod. Always throws; {@link #destroy()} ends the
   * sandbox, {@link #checkpoints()} keeps the workspace for a restore in this sandbox.
   */
  @Override
  public void shutdown() {
    throw new SandboxException("a Kubernetes sandbox (" + label() + ") cannot shut down and keep its files: a pod cannot"
        + " stop and start again, and its workspace lives as long as the pod. destroy() it when done, or use the"
        + " container or local provider for sandboxes that sleep and wake", null);
  }

  /**
   * A no-op while the pod runs; throws if its agent ended (a pod cannot start again; see
   * {@link #shutdown()}).
   */
  @Override
  public void wake() {
    synchronized (lifecycle) {
      if (closed) {
        throw new SandboxException("this handle on the sandbox pod " + label() + " is closed: get(id) returns a new one",
            null);
      }
      if (client == null || !info().isRunning()) {
        delegate(); // throws with the reason
        throw new SandboxException("the sandbox pod " + label() + " is not running: a pod cannot start again, so"
            + " destroy() it and create a new sandbox", null);
      }
    }
  }

  /** Deletes the pod (its agent stops every process), its token Secret and NetworkPolicy; returns once the pod is gone. Idempotent. */
  @Override
  public void destroy() {
    finish(true);
  }

  /**
   * Releases this handle (and its port-forward); deletes the sandbox too if this JVM created it
   * without a name. Idempotent.
   */
  @Override
  public void close() {
    finish(removeOnClose);
  }

  private void finish(boolean remove) {
    synchronized (lifecycle) {
      if (closed && !remove) {
        return;
      }
      closed = true;
    }
    Sandbox c = client;
    client = null;
    AgentLink l = link;
    link = null;
    if (c != null) {
      c.close();
    }
    if (l != null) {
      l.close();
    }
    try {
      if (remove) {
        provider.delete(pod);
      }
    } finally {
      if (shutdownHook != null) {
        try {
          Runtime.getRuntime().removeShutdownHook(shutdownHook);
        } catch (IllegalStateException shuttingDown) {
          // called from the hook itself
        }
      }
    }
  }

  private void removeQuietly() {
    try {
      finish(true);
    } catch (RuntimeException e) {
      log.warn("could not delete sandbox pod {} at JVM exit", pod, e);
    }
  }

  @Override
  public String toString() {
    return "KubernetesSandbox{" + (name != null ? name + ", " : "") + pod + ", " + baseUrl() + "}";
  }
}
