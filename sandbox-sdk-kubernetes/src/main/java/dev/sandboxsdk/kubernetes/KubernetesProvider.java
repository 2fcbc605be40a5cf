package dev.sandboxsdk.kubernetes;

import dev.sandboxsdk.ManagedSandbox;
import dev.sandboxsdk.ProviderCapabilities;
import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxInfo;
import dev.sandboxsdk.SandboxProvider;
import dev.sandboxsdk.SandboxSpec;
import dev.sandboxsdk.kubernetes.internal.AgentLink;
import dev.sandboxsdk.kubernetes.internal.Cluster;
import dev.sandboxsdk.kubernetes.internal.PodSpecs;
import dev.sandboxsdk.kubernetes.internal.Pods;
import dev.sandboxsdk.spi.SandboxBackend;
import dev.sandboxsdk.spi.SandboxHandle;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sandboxes as pods of the agent image, one pod each, on a Kubernetes cluster: the cluster of
 * {@code KUBECONFIG} (or {@code ~/.kube/config}, or the service account of the pod this JVM runs
 * in) unless {@link Builder#kubeconfig(Path)} names another.
 *
 * <p>Every pod runs with the container provider's security policy as pod settings
 * (docs/kubernetes.md): commands as the unprivileged user {@code sandbox} without capabilities,
 * {@code allowPrivilegeEscalation: false}, a read-only root file system with {@code emptyDir}
 * volumes for {@code /workspace}, the home directory and {@code /tmp} (in memory), the
 * {@code RuntimeDefault} seccomp profile, requests and limits of memory and CPU, no service
 * account token and no service links, a fresh token per sandbox in its own Secret that only the
 * agent can read, and without network a NetworkPolicy that denies egress plus the image's own
 * firewall. With an egress policy the image's firewall leaves commands nothing but the agent's
 * egress proxy, and egress secrets go to the agent in that Secret.
 *
 * <pre>{@code
 * try (KubernetesProvider k8s = KubernetesProvider.builder().namespace("sandboxes").build();
 *      ManagedSandbox sandbox = k8s.create(SandboxSpec.builder().image("registry.example.com/sandbox-agent:0.1").build())) {
 *   System.out.print(sandbox.exec("id -un").stdout());   // sandbox
 * }
 * }</pre>
 *
 * <p>Thread-safe. {@link #close()} releases the API client; unnamed sandboxes this provider
 * created are deleted when closed or when this JVM exits, see {@link KubernetesSandbox}.
 */
public final class KubernetesProvider implements SandboxProvider {
  private static final Logger log = LoggerFactory.getLogger(KubernetesProvider.class);

  /** The share of its CPU limit a pod requests unless {@link Builder#cpuRequestRatio(double)} says otherwise. */
  public static final double DEFAULT_CPU_REQUEST_RATIO = 0.25;

  private final Cluster cluster;
  private final PodSpecs.Placement placement;
  private final KubernetesAccess access;
  private final SandboxBackend backend = new Backend();

  private KubernetesProvider(Cluster cluster, PodSpecs.Placement placement, KubernetesAccess access) {
    this.cluster = cluster;
    this.placement = placement;
    this.access = access;
  }

  /** The cluster and namespace of the environment's configuration, with default settings. */
  public static KubernetesProvider fromEnvironment() {
    return builder().build();
  }

  /** A builder with every setting at its default. */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Sandboxes are pods of an image; a pod cannot stop and start again, so a sandbox ends for good
   * when its agent stops (shutdown is refused); commands start in {@code /workspace}.
   */
  @Override
  public ProviderCapabilities capabilities() {
    return PodSpecs.CAPABILITIES;
  }

  @Override
  public String name() {
    return "kubernetes";
  }

  /** The namespace sandboxes are created in. */
  public String namespace() {
    return cluster.namespace();
  }

  /** How this provider's handles reach the agents. */
  public KubernetesAccess access() {
    return access;
  }

  /**
   * Checks that the API server answers and returns its version, e.g. {@code v1.20.2}.
   *
   * @throws dev.sandboxsdk.SandboxConnectionException if it does not answer
   */
  public String ping() {
    return cluster.version();
  }

  /**
   * Creates a sandbox pod and returns once its agent passes its readiness probe (and the repository
   * of {@link SandboxSpec#gitRepository()}, if any, is cloned). The image must be pullable by the
   * cluster (or present on its nodes with {@link Builder#imagePullPolicy(String) imagePullPolicy Never}).
   * An unnamed sandbox is deleted when its handle closes or this JVM exits; a named one stays until
   * {@code destroy()}. Pods whose agent ended are deleted first ({@link #removeFinished()}).
   *
   * @throws SandboxException with what went wrong and the pod's events: the image cannot be pulled,
   *     the pod cannot be scheduled within the start-up timeout (e.g. no node has the CPU or memory
   *     asked for), a ResourceQuota refuses it, the agent exited (with its last output)
   * @throws dev.sandboxsdk.SandboxConflictException if a sandbox of the spec's name exists
   */
  @Override
  public KubernetesSandbox create(SandboxSpec spec) {
    Objects.requireNonNull(spec, "spec == null");
    if (spec.pidsLimit() != SandboxSpec.DEFAULT_PIDS_LIMIT) {
      log.warn("pidsLimit {} is not applied on Kubernetes: a pod spec has no pids limit; the kubelet's podPidsLimit"
          + " bounds every pod of the node (docs/kubernetes.md)", spec.pidsLimit());
    }
    removeFinished();
    long t0 = System.nanoTime();
    Cluster.Started s = cluster.start(spec, placement);
    AgentLink link;
    try {
      link = connect(s.pod(), s.podIp());
    } catch (RuntimeException e) {
      cluster.delete(s.pod(), false);
      throw e;
    }
    log.info("kubernetes sandbox {} ready at {} in {} ms", s.pod(), link.baseUrl(), (System.nanoTime() - t0) / 1_000_000);
    return SandboxHandle.prepare(new KubernetesSandbox(this, s.pod(), spec.name(), link, s.token(), spec.name() == null),
        spec);
  }

  private AgentLink connect(String pod, String podIp) {
    return access == KubernetesAccess.POD_IP ? AgentLink.direct(podIp) : AgentLink.forwarded(cluster, pod);
  }

  /**
   * A sandbox by its pod name, or a named sandbox by its name, from any JVM that can use the same
   * namespace: a running one, or a named one that ended (whose handle says so and can destroy it);
   * never one being deleted, even while its pod is still there. Closing the handle leaves the
   * sandbox as it is; {@code destroy()} deletes it.
   */
  @Override
  public Optional<ManagedSandbox> get(String id) {
    Objects.requireNonNull(id, "id == null");
    return cluster.findSandbox(id).filter(Pods.Found::gettable).map(f -> {
      AgentLink link = null;
      String token = null;
      if (f.running()) {
        token = cluster.token(f.pod());
        if (token == null) {
          throw new SandboxException("the sandbox pod " + f.pod() + " has lost its token Secret: destroy() it", null);
        }
        link = connect(f.pod(), f.podIp());
      }
      return new KubernetesSandbox(this, f.pod(), f.name(), link, token, false);
    });
  }

  /** Every sandbox pod of the namespace, oldest first, from the pods' labels: any JVM sees the same list. */
  @Override
  public List<SandboxInfo> list() {
    return cluster.list(name(), access);
  }

  /**
   * Deletes the sandbox pods whose agent ended (after their idle timeout, or when it failed), with
   * their Secrets and policies, and the Secrets a JVM that died mid-creation left. {@link #create}
   * runs it too; run it from a scheduled job to keep a namespace clean.
   *
   * @return how many sandboxes were deleted
   */
  public int removeFinished() {
    return cluster.removeFinished();
  }

  SandboxBackend backend() {
    return backend;
  }

  /** What the handles of this provider's sandboxes do through the API server. */
  private final class Backend implements SandboxBackend {
    @Override
    public SandboxInfo info(String pod) {
      return cluster.info(pod, name(), access).orElseThrow(() ->
          new SandboxException("the sandbox pod " + pod + " no longer exists", null));
    }

    /** A no-op while the pod runs; a pod whose agent ended cannot start again. */
    @Override
    public Sandbox wake(String pod, Sandbox current) {
      if (current == null || !info(pod).isRunning()) {
        throw notRunning(pod, "sandbox pod " + KubernetesSandbox.label(pod, null));
      }
      return current;
    }

    @Override
    public boolean stop(String pod) {
      throw new SandboxException("a Kubernetes sandbox (" + pod + ") cannot shut down and keep its files: a pod cannot"
          + " stop and start again, and its workspace lives as long as the pod. destroy() it when done, or use the"
          + " container or local provider for sandboxes that sleep and wake", null);
    }

    /** Deletes the sandbox's objects and waits until its pod is gone. */
    @Override
    public void remove(String pod) {
      cluster.delete(pod, true);
    }

    @Override
    public SandboxException notRunning(String pod, String what) {
      return new SandboxException("the " + what + " is not running (its agent ended, e.g. after its idle"
          + " timeout): a pod cannot start again, so destroy() it and create a new sandbox", null);
    }
  }

  @Override
  public void close() {
    cluster.close();
  }

  @Override
  public String toString() {
    return "KubernetesProvider{" + cluster + ", " + access + "}";
  }

  /** Configures a {@link KubernetesProvider}. Not thread-safe. */
  public static final class Builder {
    private Path kubeconfig;
    private String context;
    private String namespace;
    private String serviceAccount;
    private String imagePullPolicy = "IfNotPresent";
    private Long workspaceSizeBytes;
    private KubernetesAccess access = KubernetesAccess.PORT_FORWARD;
    private double cpuRequestRatio = DEFAULT_CPU_REQUEST_RATIO;

    private Builder() {}

    /** The kubeconfig file (default: {@code KUBECONFIG}, {@code ~/.kube/config}, or the pod's service account). */
    public Builder kubeconfig(Path file) {
      this.kubeconfig = Objects.requireNonNull(file, "file == null");
      return this;
    }

    /** The kubeconfig's context to use (default: its current context). */
    public Builder context(String context) {
      this.context = Objects.requireNonNull(context, "context == null");
      return this;
    }

    /** The namespace of the sandboxes (default: the kubeconfig context's, else {@code default}). */
    public Builder namespace(String namespace) {
      this.namespace = checkDnsLabel(namespace, "namespace");
      return this;
    }

    /**
     * The service account the pods run as (default: the namespace's {@code default}). Its token is
     * never mounted: the account matters for image pull secrets and admission policies only.
     */
    public Builder serviceAccount(String account) {
      this.serviceAccount = checkDnsLabel(account, "service account");
      return this;
    }

    /** {@code Always}, {@code IfNotPresent} (the default) or {@code Never} (the image must be on the node). */
    public Builder imagePullPolicy(String policy) {
      Objects.requireNonNull(policy, "policy == null");
      if (!List.of("Always", "IfNotPresent", "Never").contains(policy)) {
        throw new IllegalArgumentException("imagePullPolicy must be Always, IfNotPresent or Never: '" + policy + "'");
      }
      this.imagePullPolicy = policy;
      return this;
    }

    /** The most the workspace may hold (the {@code emptyDir}'s size limit; the kubelet evicts a pod above it). Default: no limit. */
    public Builder workspaceSizeBytes(long bytes) {
      if (bytes < (1L << 20)) {
        throw new IllegalArgumentException("workspaceSizeBytes must be at least 1 MiB: " + bytes);
      }
      this.workspaceSizeBytes = bytes;
      return this;
    }

    /**
     * The CPU each pod requests, as a share of its limit ({@link SandboxSpec#cpus()}), between 0.01
     * and 1 (default {@value #DEFAULT_CPU_REQUEST_RATIO}). The scheduler places pods by their
     * requests: 1 gives every sandbox its CPU for sure (Guaranteed QoS) and fits the fewest per
     * node; less lets idle sandboxes share. Memory is always requested in full.
     */
    public Builder cpuRequestRatio(double ratio) {
      if (!(ratio >= 0.01 && ratio <= 1)) {
        throw new IllegalArgumentException("cpuRequestRatio must be between 0.01 and 1: " + ratio);
      }
      this.cpuRequestRatio = ratio;
      return this;
    }

    /** How handles reach the agents (default {@link KubernetesAccess#PORT_FORWARD}). */
    public Builder access(KubernetesAccess access) {
      this.access = Objects.requireNonNull(access, "access == null");
      return this;
    }

    private static String checkDnsLabel(String value, String what) {
      Objects.requireNonNull(value, what + " == null");
      if (!value.matches("[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")) {
        throw new IllegalArgumentException("not a Kubernetes " + what + " name (lower-case letters, digits and '-',"
            + " at most 63): '" + value + "'");
      }
      return value;
    }

    /**
     * The provider; connects lazily: the first call that needs the API server reports an
     * unreachable one.
     *
     * @throws SandboxException if there is no usable configuration (no kubeconfig, an unreadable one)
     */
    public KubernetesProvider build() {
      Cluster c = Cluster.connect(kubeconfig, context, namespace);
      return new KubernetesProvider(c, new PodSpecs.Placement(c.namespace(), serviceAccount, imagePullPolicy,
          workspaceSizeBytes, cpuRequestRatio), access);
    }
  }
}
