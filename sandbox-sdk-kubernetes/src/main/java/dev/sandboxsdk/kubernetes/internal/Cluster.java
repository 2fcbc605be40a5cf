package dev.sandboxsdk.kubernetes.internal;

import dev.sandboxsdk.SandboxConflictException;
import dev.sandboxsdk.SandboxConnectionException;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxInfo;
import dev.sandboxsdk.SandboxSpec;
import dev.sandboxsdk.spi.AgentImage;
import dev.sandboxsdk.SandboxTimeoutException;
import dev.sandboxsdk.kubernetes.KubernetesAccess;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One namespace of one cluster, as the provider uses it: creates a sandbox's objects, waits for
 * its pod, finds, lists and deletes sandboxes, and opens port-forwards. Every API error becomes a
 * {@link SandboxException} that says what to do. Thread-safe (the fabric8 client is).
 */
public final class Cluster implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Cluster.class);

  /** Waiting reasons of the agent's container that no amount of waiting mends. */
  private static final Set<String> HOPELESS = Set.of("ErrImageNeverPull", "ErrImagePull", "ImagePullBackOff",
      "InvalidImageName", "CreateContainerConfigError", "CreateContainerError", "CrashLoopBackOff", "RunContainerError");
  private static final int LOG_LINES = 20;
  /** A Secret or policy without its pod for this long is a leftover of a JVM that died mid-creation. */
  private static final Duration ORPHAN_AGE = Duration.ofMinutes(1);
  private static final Duration DELETE_WAIT = Duration.ofSeconds(30);
  /** SIGTERM to SIGKILL when a sandbox pod is deleted: the agent stops its processes within it. */
  private static final long STOP_GRACE_SECONDS = 2;
  /** A DNS-1123 subdomain, what a pod's name must be. */
  private static final java.util.regex.Pattern POD_NAME =
      java.util.regex.Pattern.compile("(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");

  private final KubernetesClient client;
  private final String namespace;
  private final String server;

  private Cluster(KubernetesClient client, String namespace) {
    this.client = client;
    this.namespace = namespace;
    this.server = client.getConfiguration().getMasterUrl();
  }

  /**
   * A client of the cluster that {@code kubeconfig} (or, if null, {@code KUBECONFIG}, {@code ~/.kube/config}
   * or the pod's service account) names, in {@code context} if not null; connects lazily.
   */
  public static Cluster connect(Path kubeconfig, String context, String namespace) {
    Config config;
    if (kubeconfig != null && !Files.isReadable(kubeconfig)) {
      throw new SandboxException("cannot read the kubeconfig " + kubeconfig + ": no such file, or not readable", null);
    }
    try {
      config = kubeconfig != null ? Config.fromKubeconfig(context, kubeconfig.toFile()) : Config.autoConfigure(context);
    } catch (KubernetesClientException | IllegalArgumentException e) {
      throw new SandboxException("no usable Kubernetes configuration" + (kubeconfig != null ? " in " + kubeconfig : "")
          + (context != null ? " (context " + context + ")" : "") + ": " + e.getMessage(), e);
    }
    String ns = namespace != null ? namespace : config.getNamespace() != null ? config.getNamespace() : "default";
    // Requests that a sandbox makes wait on the agent, not on the API server: keep the API's own short.
    // Three retries (0.1 + 0.2 + 0.4 s) instead of fabric8's ten, whose back-off held an unreachable
    // server's error for 20 s.
    Config tuned = new ConfigBuilder(config).withNamespace(ns).withRequestTimeout(30_000).withConnectionTimeout(10_000)
        .withRequestRetryBackoffLimit(3).withRequestRetryBackoffInterval(100).build();
    return new Cluster(new KubernetesClientBuilder().withConfig(tuned).build(), ns);
  }

  /** The namespace sandboxes are created in. */
  public String namespace() {
    return namespace;
  }

  /** The API server's address. */
  public String server() {
    return server;
  }

  /** The API server's version, e.g. {@code v1.20.2}: checks that it answers. */
  public String version() {
    return call("ask the API server for its version", () -> client.getKubernetesVersion().getGitVersion());
  }

  /** What a started sandbox is. */
  public record Started(String pod, String podIp, String token, Instant createdAt) {}

  /**
   * Creates the sandbox's Secret, pod and (without network) NetworkPolicy, waits until the pod is
   * ready, and returns how to reach it. On any failure everything created is deleted again and the
   * exception says why, with the pod's events and last log lines.
   */
  public Started start(SandboxSpec spec, PodSpecs.Placement where) {
    String name = PodSpecs.podName(spec.name());
    String token = PodSpecs.newToken();
    long now = System.currentTimeMillis();
    Pod template = PodSpecs.pod(name, spec, where, now);
    long deadline = System.nanoTime() + spec.startupTimeout().toNanos();
    boolean created = false;
    try {
      create("create the token Secret of " + name, () -> client.secrets().inNamespace(namespace)
          .resource(PodSpecs.secret(name, namespace, token, spec)).create(), spec);
      created = true;
      Pod pod = create("create the pod " + name, () -> client.pods().inNamespace(namespace).resource(template).create(), spec);
      // From now on the Secret (and the policy) go with the pod, whoever deletes it.
      call("hand the Secret of " + name + " to its pod", () -> client.secrets().inNamespace(namespace)
          .withName(PodSpecs.secretName(name)).edit(s -> {
            s.getMetadata().setOwnerReferences(List.of(PodSpecs.ownedBy(pod)));
            return s;
          }));
      if (AgentImage.noEgressAtAll(spec)) { // with an egress policy the agent's proxy connects out
        create("create the NetworkPolicy of " + name, () -> client.network().v1().networkPolicies().inNamespace(namespace)
            .resource(PodSpecs.denyEgress(pod)).create(), spec);
      }
      Pod ready = awaitReady(name, spec.image(), deadline, spec.startupTimeout());
      return new Started(name, ready.getStatus().getPodIP(), token, Instant.ofEpochMilli(now));
    } catch (RuntimeException e) {
      if (created) {
        try {
          // At once and waited for: a failed create leaves nothing, not even a pod being deleted
          // (a pod whose image never came would otherwise linger, and nothing of it is worth a grace period).
          delete(name, 0, true);
        } catch (RuntimeException suppressed) {
          e.addSuppressed(suppressed);
        }
      }
      throw e;
    }
  }

  private <T> T create(String what, Supplier<T> call, SandboxSpec spec) {
    try {
      return call(what, call);
    } catch (SandboxException e) {
      if (e.getCause() instanceof KubernetesClientException k && k.getCode() == 409 && spec.name() != null) {
        throw new SandboxConflictException("a sandbox named '" + spec.name() + "' exists already in namespace " + namespace
            + ": get it by its name, or destroy it first", e, "SANDBOX_EXISTS", 409, Map.of());
      }
      throw e;
    }
  }

  /** Waits until the pod's agent passes its readiness probe (GET /api/ping). */
  Pod awaitReady(String name, String image, long deadline, Duration timeout) {
    Pod pod = null;
    while (true) {
      pod = call("read the pod " + name, () -> client.pods().inNamespace(namespace).withName(name).get());
      if (pod == null) {
        throw new SandboxException("the sandbox pod " + name + " was deleted during start-up" + events(name), null);
      }
      String phase = pod.getStatus() == null ? null : pod.getStatus().getPhase();
      if ("Failed".equals(phase) || "Succeeded".equals(phase)) {
        throw new SandboxException("the sandbox pod " + name + " ended during start-up (" + phase + ")"
            + lastLog(name) + events(name), null);
      }
      ContainerStatus agent = agentStatus(pod);
      if (agent != null && agent.getState() != null && agent.getState().getWaiting() != null
          && HOPELESS.contains(agent.getState().getWaiting().getReason())) {
        String reason = agent.getState().getWaiting().getReason();
        String hint = reason.contains("Image") ? ": the image '" + image + "' is not on the node and cannot be pulled"
            + " (push it to a registry the cluster can pull from, or load it into the node's runtime; see"
            + " docs/kubernetes.md)" : "";
        throw new SandboxException("the sandbox pod " + name + " cannot start: " + reason + " "
            + String.valueOf(agent.getState().getWaiting().getMessage()) + hint + events(name), null);
      }
      if (agent != null && agent.getState() != null && agent.getState().getTerminated() != null) {
        throw new SandboxException("the sandbox pod's agent exited during start-up (exit "
            + agent.getState().getTerminated().getExitCode() + ")" + lastLog(name) + events(name), null);
      }
      if (isReady(pod) && pod.getStatus().getPodIP() != null) {
        return pod;
      }
      if (System.nanoTime() > deadline) {
        throw new SandboxTimeoutException("the sandbox pod " + name + " was not ready within " + timeout.toMillis()
            + " ms (" + describe(pod) + ")" + events(name), null);
      }
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new SandboxException("interrupted while the sandbox pod " + name + " started", e);
      }
    }
  }

  private static ContainerStatus agentStatus(Pod pod) {
    if (pod.getStatus() == null || pod.getStatus().getContainerStatuses() == null) {
      return null;
    }
    return pod.getStatus().getContainerStatuses().stream().filter(c -> PodSpecs.CONTAINER.equals(c.getName()))
        .findFirst().orElse(null);
  }

  /** Whether the pod's Ready condition holds. */
  public static boolean isReady(Pod pod) {
    return pod.getStatus() != null && pod.getStatus().getConditions() != null && pod.getStatus().getConditions().stream()
        .anyMatch(c -> "Ready".equals(c.getType()) && "True".equals(c.getStatus()));
  }

  private static String describe(Pod pod) {
    StringBuilder b = new StringBuilder("phase ").append(pod.getStatus() == null ? "unknown" : pod.getStatus().getPhase());
    if (pod.getStatus() != null && pod.getStatus().getConditions() != null) {
      for (PodCondition c : pod.getStatus().getConditions()) {
        if (!"True".equals(c.getStatus())) {
          b.append("; ").append(c.getType()).append(": ").append(c.getReason() == null ? c.getStatus() : c.getReason());
          if (c.getMessage() != null) {
            b.append(" (").append(c.getMessage()).append(')');
          }
        }
      }
    }
    return b.toString();
  }

  /** The pod's events, oldest first, as "; events: ..." (or "" if none or unreadable). */
  String events(String pod) {
    try {
      List<Event> events = client.v1().events().inNamespace(namespace).withField("involvedObject.name", pod).list()
          .getItems();
      if (events.isEmpty()) {
        return "";
      }
      return "; events: " + events.stream()
          .sorted(Comparator.comparing(e -> String.valueOf(e.getLastTimestamp())))
          .map(e -> e.getReason() + ": " + String.valueOf(e.getMessage()).strip())
          .distinct()
          .collect(Collectors.joining(" | "));
    } catch (KubernetesClientException e) {
      return "";
    }
  }

  private String lastLog(String pod) {
    try {
      String tail = client.pods().inNamespace(namespace).withName(pod).inContainer(PodSpecs.CONTAINER)
          .tailingLines(LOG_LINES).getLog();
      return tail == null || tail.isBlank() ? "" : "; its last output:\n" + tail.strip() + "\n";
    } catch (KubernetesClientException e) {
      return "";
    }
  }

  /** The sandbox pod of this name, or empty if there is none. */
  Optional<Pod> find(String pod) {
    if (!POD_NAME.matcher(pod).matches()) {
      return Optional.empty(); // the API server would answer 400, or the client refuse the path
    }
    try {
      return Optional.ofNullable(call("read the pod " + pod, () -> client.pods().inNamespace(namespace).withName(pod).get()))
          .filter(p -> p.getMetadata().getLabels() != null && "1".equals(p.getMetadata().getLabels().get(PodSpecs.SANDBOX_LABEL)));
    } catch (SandboxException e) {
      if (e.getCause() instanceof KubernetesClientException k && k.getCode() == 400) {
        return Optional.empty(); // not a valid pod name
      }
      throw e;
    }
  }

  /** A sandbox by pod name, or a named sandbox by its name. */
  public Optional<Pods.Found> findSandbox(String id) {
    Optional<Pod> found = find(id);
    if (found.isEmpty() && Pods.isSandboxName(id)) {
      found = find(PodSpecs.podName(id)).filter(p -> id.equals(Pods.sandboxName(p)));
    }
    return found.map(Pods::found);
  }

  /** A sandbox pod as a {@link SandboxInfo}, or empty if it is gone. */
  public Optional<SandboxInfo> info(String pod, String provider, KubernetesAccess access) {
    return find(pod).map(p -> Pods.info(p, provider, access));
  }

  /** Every sandbox of the namespace, oldest first. */
  public List<SandboxInfo> list(String provider, KubernetesAccess access) {
    return sandboxes().stream().map(p -> Pods.info(p, provider, access)).collect(Collectors.toList());
  }

  /** Every sandbox pod of the namespace, oldest first. */
  List<Pod> sandboxes() {
    return call("list the sandbox pods", () -> client.pods().inNamespace(namespace).withLabel(PodSpecs.SANDBOX_LABEL, "1")
        .list().getItems()).stream()
        .sorted(Comparator.comparing(p -> String.valueOf(p.getMetadata().getCreationTimestamp())))
        .collect(Collectors.toList());
  }

  /** The token of a sandbox, from its Secret, or null if the Secret is gone. */
  public String token(String pod) {
    Secret s = call("read the token of " + pod, () -> client.secrets().inNamespace(namespace)
        .withName(PodSpecs.secretName(pod)).get());
    if (s == null || s.getData() == null || !s.getData().containsKey(PodSpecs.TOKEN_KEY)) {
      return null;
    }
    return new String(Base64.getDecoder().decode(s.getData().get(PodSpecs.TOKEN_KEY)), StandardCharsets.UTF_8);
  }

  /**
   * Deletes the sandbox's pod, Secret and NetworkPolicy; with {@code wait}, returns once the pod is
   * gone (its agent stopped every process: SIGTERM, SIGKILL 2 s later), at most 30 s. Returns
   * whether the pod existed.
   */
  public boolean delete(String pod, boolean wait) {
    return delete(pod, STOP_GRACE_SECONDS, wait);
  }

  private boolean delete(String pod, long graceSeconds, boolean wait) {
    boolean existed = !call("delete the pod " + pod, () -> client.pods().inNamespace(namespace).withName(pod)
        .withGracePeriod(graceSeconds).delete()).isEmpty();
    call("delete the Secret of " + pod, () -> client.secrets().inNamespace(namespace).withName(PodSpecs.secretName(pod))
        .delete());
    call("delete the NetworkPolicy of " + pod, () -> client.network().v1().networkPolicies().inNamespace(namespace)
        .withName(PodSpecs.policyName(pod)).delete());
    if (existed && wait) {
      // Polled, not watched: a get is all the Role in docs/kubernetes.md grants on pods.
      long deadline = System.nanoTime() + DELETE_WAIT.toNanos();
      while (find(pod).isPresent()) {
        if (System.nanoTime() > deadline) {
          log.warn("the sandbox pod {} was still there {} s after its deletion", pod, DELETE_WAIT.toSeconds());
          break;
        }
        try {
          Thread.sleep(100);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new SandboxException("interrupted while waiting for the sandbox pod " + pod + " to go", e);
        }
      }
    }
    return existed;
  }

  /**
   * Deletes the sandbox pods whose agent ended (an idle timeout ends it) with their Secrets, and
   * Secrets and policies left without a pod by a JVM that died while it created them.
   *
   * @return how many sandboxes were removed
   */
  public int removeFinished() {
    int removed = 0;
    Set<String> live = new java.util.HashSet<>();
    for (Pod p : sandboxes()) {
      String phase = p.getStatus() == null ? null : p.getStatus().getPhase();
      if ("Succeeded".equals(phase) || "Failed".equals(phase)) {
        delete(p.getMetadata().getName(), false);
        removed++;
      } else {
        live.add(p.getMetadata().getName());
      }
    }
    Instant old = Instant.now().minus(ORPHAN_AGE);
    for (Secret s : call("list the sandbox Secrets", () -> client.secrets().inNamespace(namespace)
        .withLabel(PodSpecs.SANDBOX_LABEL, "1").list().getItems())) {
      String pod = s.getMetadata().getLabels().get(PodSpecs.POD_LABEL);
      Instant created = parse(s.getMetadata().getCreationTimestamp());
      if (pod != null && !live.contains(pod) && created != null && created.isBefore(old)) {
        delete(pod, false);
      }
    }
    return removed;
  }

  /** Opens a port-forward to the pod's agent through the API server, on a free port of 127.0.0.1. */
  PortForwarder forward(String pod) {
    try {
      return new PortForwarder(pod, (in, out) -> client.pods().inNamespace(namespace).withName(pod)
          .portForward(PodSpecs.AGENT_PORT, in, out));
    } catch (IOException e) {
      throw new SandboxException("could not listen for a port-forward to the pod " + pod + " on 127.0.0.1: " + e, e);
    }
  }

  static Instant parse(String timestamp) {
    try {
      return timestamp == null ? null : Instant.parse(timestamp);
    } catch (RuntimeException e) {
      return null;
    }
  }

  /** Runs one API call; maps the client's errors to the SDK's. */
  public <T> T call(String what, Supplier<T> call) {
    try {
      return call.get();
    } catch (KubernetesClientException e) {
      if (e.getCode() <= 0 && e.getStatus() == null) { // no HTTP answer at all
        throw new SandboxConnectionException("the Kubernetes API server at " + server + " is not reachable (could not "
            + what + "): " + reason(e), e);
      }
      String status = e.getStatus() != null && e.getStatus().getMessage() != null ? e.getStatus().getMessage() : e.getMessage();
      String hint = switch (e.getCode()) {
        case 401 -> ": the credentials of the kubeconfig were refused";
        case 403 -> status.contains("exceeded quota") ? ": the namespace's ResourceQuota is used up (delete sandboxes,"
            + " or ask for a larger quota)" : ": the account lacks a permission the provider needs (docs/kubernetes.md, \"RBAC\")";
        case 404 -> status.contains("namespaces") ? ": the namespace " + namespace + " does not exist" : "";
        default -> "";
      };
      throw new SandboxException("could not " + what + " in namespace " + namespace + ": " + status + hint, e);
    }
  }

  /** The most telling cause: a connect or TLS failure with its message, else the deepest cause. */
  private static String reason(Throwable e) {
    Throwable deepest = e;
    for (Throwable t = e; t != null && t.getCause() != t; t = t.getCause()) {
      if (t instanceof java.net.ConnectException || t instanceof java.net.UnknownHostException
          || t instanceof javax.net.ssl.SSLException || t instanceof java.net.http.HttpTimeoutException) {
        return t.getMessage() == null ? t.getClass().getSimpleName() : t.getClass().getSimpleName() + ": " + t.getMessage();
      }
      deepest = t;
    }
    return deepest.toString();
  }

  /** As {@link #call(String, Supplier)}, for calls without a result. */
  public void call(String what, Runnable call) {
    call(what, () -> {
      call.run();
      return null;
    });
  }

  @Override
  public void close() {
    client.close();
  }

  @Override
  public String toString() {
    return server + " namespace " + namespace;
  }
}
