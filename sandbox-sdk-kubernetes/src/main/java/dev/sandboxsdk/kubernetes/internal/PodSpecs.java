package dev.sandboxsdk.kubernetes.internal;

import dev.sandboxsdk.ProviderCapabilities;
import dev.sandboxsdk.SandboxSpec;
import dev.sandboxsdk.spi.AgentImage;
import io.fabric8.kubernetes.api.model.Capabilities;
import io.fabric8.kubernetes.api.model.CapabilitiesBuilder;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.IntOrString;
import io.fabric8.kubernetes.api.model.OwnerReference;
import io.fabric8.kubernetes.api.model.OwnerReferenceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.SecretBuilder;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeBuilder;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.VolumeMountBuilder;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyBuilder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The objects of one sandbox: its pod, the Secret with its token and, without network, the
 * NetworkPolicy that denies its egress. Every setting is the container provider's security policy
 * expressed as pod settings; docs/kubernetes.md explains each one. Change one there too.
 */
public final class PodSpecs {
  /** The agent's port in the pod. */
  public static final int AGENT_PORT = 3000;
  /** The label every sandbox object carries (value "1"): how any JVM finds them. */
  public static final String SANDBOX_LABEL = "sandbox-sdk.dev/sandbox";
  /** The label that ties a Secret or NetworkPolicy to its pod (value: the pod's name). */
  public static final String POD_LABEL = "sandbox-sdk.dev/pod";
  /** The annotation that holds a named sandbox's name (names may not fit a label value). */
  public static final String NAME_ANNOTATION = "sandbox-sdk.dev/name";
  /** The annotation of the idle timeout in ms, or "none". */
  public static final String IDLE_ANNOTATION = "sandbox-sdk.dev/idle-timeout-ms";
  /** The prefix of the annotations that carry the caller's labels (their values may be 255 characters). */
  public static final String USER_ANNOTATION_PREFIX = "label.sandbox-sdk.dev/";
  /** The Secret's key that holds the token. */
  public static final String TOKEN_KEY = "token";
  /** The Secret's key that holds the egress secrets, if the spec has any. */
  public static final String EGRESS_SECRETS_KEY = "egress-secrets";
  /** The agent's container in the pod. */
  public static final String CONTAINER = "agent";

  static final String WORKSPACE = "/workspace";
  /** What the Kubernetes provider can do: pods of an image, which end for good when their agent stops. */
  public static final ProviderCapabilities CAPABILITIES = ProviderCapabilities.builder().resumable(false)
      .fromImage(true).workspace(WORKSPACE).isolation("pod").build();
  static final String HOME = "/home/sandbox";
  static final String CHECKPOINTS = "/var/lib/sandbox-agent/checkpoints";
  static final String TOKEN_DIR = "/var/run/sandbox-agent";

  private static final SecureRandom RANDOM = new SecureRandom();
  private static final long ROOT = 0L;

  private PodSpecs() {}

  /** Where the pods go and how they run, beyond the {@link SandboxSpec}. */
  public record Placement(String namespace, String serviceAccount, String imagePullPolicy, Long workspaceSizeBytes,
      double cpuRequestRatio) {}

  /** A fresh token: 32 random bytes, URL-safe base64. */
  public static String newToken() {
    byte[] b = new byte[32];
    RANDOM.nextBytes(b);
    return Base64.getUrlEncoder().withoutPadding().encodeToString(b);
  }

  /**
   * The pod name of a sandbox: {@code sandbox-} and 12 random hex digits, or for a named one a name
   * derived from its name (lower case, other characters as '-', at most 40 of them) and a hash of
   * the exact name, so that every JVM derives the same pod name and two names that differ only in
   * case or punctuation never share a pod.
   */
  public static String podName(String sandboxName) {
    if (sandboxName == null) {
      byte[] b = new byte[6];
      RANDOM.nextBytes(b);
      return "sandbox-" + HexFormat.of().formatHex(b);
    }
    String readable = sandboxName.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9-]", "-");
    readable = readable.substring(0, Math.min(40, readable.length())).replaceAll("^-+|-+$", "");
    return "sandbox-" + (readable.isEmpty() ? "" : readable + "-") + hash(sandboxName).substring(0, 10);
  }

  private static String hash(String s) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JDK has SHA-256", e);
    }
  }

  /**
   * The Secret that holds the token and the spec's egress secrets (if any), named after its pod;
   * owned by the pod once it exists. Mounted for the agent alone (root's, 0400).
   */
  public static Secret secret(String pod, String namespace, String token, SandboxSpec spec) {
    Map<String, String> data = new LinkedHashMap<>();
    data.put(TOKEN_KEY, token);
    String secrets = AgentImage.egressSecretsJson(spec);
    if (secrets != null) {
      data.put(EGRESS_SECRETS_KEY, secrets);
    }
    return new SecretBuilder()
        .withNewMetadata().withName(secretName(pod)).withNamespace(namespace)
        .withLabels(Map.of(SANDBOX_LABEL, "1", POD_LABEL, pod)).endMetadata()
        .withType("Opaque")
        .withStringData(data)
        .build();
  }

  /** The name of a pod's token Secret. */
  public static String secretName(String pod) {
    return pod + "-token";
  }

  /** The name of a pod's egress policy. */
  public static String policyName(String pod) {
    return pod + "-no-egress";
  }

  /** A reference that makes {@code owner} the owner of another object: deleting the pod deletes it too. */
  public static OwnerReference ownedBy(HasMetadata owner) {
    return new OwnerReferenceBuilder().withApiVersion("v1").withKind("Pod")
        .withName(owner.getMetadata().getName()).withUid(owner.getMetadata().getUid())
        .withBlockOwnerDeletion(false).withController(false).build();
  }

  /**
   * The NetworkPolicy that denies the pod every egress (an empty list of egress rules); ingress,
   * the agent's port, stays open (every request needs the token). Takes effect only where the
   * cluster's network plugin implements policies; the image's firewall cuts egress regardless.
   */
  public static NetworkPolicy denyEgress(Pod pod) {
    String name = pod.getMetadata().getName();
    return new NetworkPolicyBuilder()
        .withNewMetadata().withName(policyName(name)).withNamespace(pod.getMetadata().getNamespace())
        .withLabels(Map.of(SANDBOX_LABEL, "1", POD_LABEL, name)).withOwnerReferences(ownedBy(pod)).endMetadata()
        .withNewSpec()
        .withNewPodSelector().withMatchLabels(Map.of(POD_LABEL, name)).endPodSelector()
        .withPolicyTypes("Egress")
        .withEgress(List.of())
        .endSpec()
        .build();
  }

  /** The sandbox's pod. */
  public static Pod pod(String name, SandboxSpec spec, Placement where, long createdMs) {
    Map<String, String> labels = new LinkedHashMap<>();
    labels.put(SANDBOX_LABEL, "1");
    labels.put(POD_LABEL, name);
    Map<String, String> annotations = new LinkedHashMap<>();
    annotations.put("sandbox-sdk.dev/created-ms", String.valueOf(createdMs));
    annotations.put(IDLE_ANNOTATION, spec.idleTimeout() == null ? "none" : String.valueOf(spec.idleTimeout().toMillis()));
    if (spec.name() != null) {
      annotations.put(NAME_ANNOTATION, spec.name());
    }
    spec.labels().forEach((k, v) -> annotations.put(USER_ANNOTATION_PREFIX + k, v));

    List<String> args = agentArguments(spec);
    List<EnvVar> env = new ArrayList<>();
    AgentImage.networkEnvironment(spec).forEach((k, v) -> env.add(new EnvVar(k, v, null)));
    spec.env().forEach((k, v) -> env.add(new EnvVar(k, v, null)));

    List<String> add = new ArrayList<>(List.of("SETUID", "SETGID", "SETPCAP", "KILL"));
    if (AgentImage.needsNetAdmin(spec)) {
      add.add("NET_ADMIN"); // the image's start script installs the egress firewall with it, then drops it
    }
    Capabilities caps = new CapabilitiesBuilder().withDrop("ALL").withAdd(add).build();
    Map<String, Quantity> limits = Map.of(
        "memory", new Quantity(String.valueOf(spec.memoryBytes())),
        "cpu", millicores(spec.cpus()));
    // Memory is requested in full (a node never promises more than it has); CPU only in part, since
    // sandboxes mostly wait, and the scheduler packs nodes by requests.
    Map<String, Quantity> requests = Map.of(
        "memory", new Quantity(String.valueOf(spec.memoryBytes())),
        "cpu", millicores(spec.cpus() * where.cpuRequestRatio()));
    long tmpBytes = Math.max(16L << 20, spec.memoryBytes() / 4);

    ContainerBuilder agent = new ContainerBuilder()
        .withName(CONTAINER)
        .withImage(spec.image())
        .withImagePullPolicy(where.imagePullPolicy())
        .withArgs(args)
        .withEnv(env)
        .addNewPort().withName("agent").withContainerPort(AGENT_PORT).withProtocol("TCP").endPort()
        .withNewReadinessProbe()
        .withNewHttpGet().withPath("/api/ping").withPort(new IntOrString(AGENT_PORT)).endHttpGet()
        .withPeriodSeconds(1).withTimeoutSeconds(2).withFailureThreshold(3)
        .endReadinessProbe()
        .withNewResources().withLimits(limits).withRequests(requests).endResources()
        // Root with four capabilities, as in a container sandbox: the agent must be another user
        // than the commands (uid 1000, no capabilities), or they could read its token and checkpoints.
        .withNewSecurityContext()
        .withRunAsUser(ROOT).withRunAsNonRoot(false).withPrivileged(false).withAllowPrivilegeEscalation(false)
        .withReadOnlyRootFilesystem(true).withCapabilities(caps)
        .endSecurityContext()
        .withVolumeMounts(mount("workspace", WORKSPACE, false), mount("home", HOME, false), mount("tmp", "/tmp", false),
            mount("checkpoints", CHECKPOINTS, false), mount("token", TOKEN_DIR, true))
        .withTerminationMessagePolicy("FallbackToLogsOnError");

    List<Volume> volumes = volumes(name, where, tmpBytes);

    PodBuilder pod = new PodBuilder()
        .withNewMetadata().withName(name).withNamespace(where.namespace()).withLabels(labels)
        .withAnnotations(annotations).endMetadata()
        .withNewSpec()
        .withRestartPolicy("Never")
        // Commands must get no credentials of the cluster and no addresses of its services.
        .withAutomountServiceAccountToken(false)
        .withEnableServiceLinks(false)
        .withServiceAccountName(where.serviceAccount())
        .withTerminationGracePeriodSeconds(10L)
        .withNewSecurityContext().withNewSeccompProfile().withType("RuntimeDefault").endSeccompProfile()
        .endSecurityContext()
        .withContainers(agent.build())
        .withVolumes(volumes)
        .endSpec();
    return pod.build();
  }

  /** The agent's command line in the pod: its port, workspace, command user, checkpoints and token file. */
  private static List<String> agentArguments(SandboxSpec spec) {
    List<String> args = new ArrayList<>(List.of("--port", String.valueOf(AGENT_PORT), "--bind", "0.0.0.0",
        "--workspace", WORKSPACE, "--command-user", "sandbox", "--checkpoint-dir", CHECKPOINTS,
        "--token-file", TOKEN_DIR + "/" + TOKEN_KEY));
    if (spec.idleTimeout() != null) {
      args.add("--idle-timeout-ms=" + spec.idleTimeout().toMillis());
    }
    if (!spec.env().isEmpty()) {
      args.add("--inherit-env=" + String.join(",", spec.env().keySet()));
    }
    if (!spec.egressSecrets().isEmpty()) {
      args.addAll(List.of("--egress-secrets", TOKEN_DIR + "/" + EGRESS_SECRETS_KEY));
    }
    args.addAll(spec.agentArguments());
    return args;
  }

  /** The pod's volumes: workspace (of the placement's size, if any), home, a memory-backed /tmp, checkpoints, token. */
  private static List<Volume> volumes(String name, Placement where, long tmpBytes) {
    Volume workspace = where.workspaceSizeBytes() == null
        ? new VolumeBuilder().withName("workspace").withNewEmptyDir().endEmptyDir().build()
        : new VolumeBuilder().withName("workspace").withNewEmptyDir()
            .withSizeLimit(new Quantity(String.valueOf(where.workspaceSizeBytes()))).endEmptyDir().build();
    List<Volume> volumes = List.of(
        workspace,
        new VolumeBuilder().withName("home").withNewEmptyDir().endEmptyDir().build(),
        new VolumeBuilder().withName("tmp").withNewEmptyDir().withMedium("Memory")
            .withSizeLimit(new Quantity(String.valueOf(tmpBytes))).endEmptyDir().build(),
        new VolumeBuilder().withName("checkpoints").withNewEmptyDir().endEmptyDir().build(),
        // 0400, root's: only the agent reads it; the commands' user cannot.
        new VolumeBuilder().withName("token").withNewSecret().withSecretName(secretName(name)).withDefaultMode(0400)
            .endSecret().build());
    return volumes;
  }

  private static Quantity millicores(double cpus) {
    return new Quantity(Math.max(1, Math.round(cpus * 1000)) + "m");
  }

  private static VolumeMount mount(String volume, String path, boolean readOnly) {
    return new VolumeMountBuilder().withName(volume).withMountPath(path).withReadOnly(readOnly).build();
  }
}
