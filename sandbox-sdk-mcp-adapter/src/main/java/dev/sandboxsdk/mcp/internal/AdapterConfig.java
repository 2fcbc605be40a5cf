package dev.sandboxsdk.mcp.internal;

import dev.sandboxsdk.EgressPolicy;
import dev.sandboxsdk.EgressSecret;
import dev.sandboxsdk.local.Isolation;
import dev.sandboxsdk.local.LocalProvider;
import dev.sandboxsdk.ProviderCapabilities;
import dev.sandboxsdk.SandboxProvider;
import dev.sandboxsdk.SandboxSpec;
import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The adapter's settings, parsed from the command line and the environment.
 *
 * @param http serve Streamable HTTP (otherwise stdio)
 * @param port HTTP port; 0 picks a free one
 * @param bind HTTP bind address
 * @param httpToken bearer token HTTP clients must send; null only with {@code noAuth}
 * @param noAuth serve HTTP without a token (loopback binds only)
 * @param mode where sandboxes run: local agents, containers, or the one remote agent
 * @param containerSpec with {@link SandboxMode#CONTAINER} or {@link SandboxMode#KUBERNETES}, the image, limits
 *     and network of every container or pod (without the environment, labels and idle timeout, which each
 *     sandbox adds); else null
 * @param agentUrl a remote agent to drive; null unless {@link SandboxMode#REMOTE}
 * @param agentToken the remote agent's token
 * @param passEnv variables (name to value) injected into every sandbox process and redacted from output
 * @param maxOutputBytes output per stream handed to the model in one result
 * @param allowedHosts extra Host names accepted besides loopback names and the bind address
 * @param allowedOrigins browser origins accepted besides loopback ones
 * @param maxSandboxes how many sandboxes may exist at once
 * @param keepAlive interval of SSE keep-alive comments
 * @param maxConnections HTTP connections open at once; 0 derives it from the open-file limit
 * @param maxConcurrentCalls tool calls running at once across all sessions
 * @param localIsolation with {@link SandboxMode#LOCAL}, how each local sandbox is isolated ({@code --isolation})
 * @param localNetwork with {@link SandboxMode#LOCAL}, whether isolated commands may use the network
 * @param stateDir with {@link SandboxMode#LOCAL}, where persistent sandboxes keep their workspaces and
 *     checkpoints ({@code --state-dir}); null for the SDK's default (LocalProvider's)
 * @param kubernetes with {@link SandboxMode#KUBERNETES}, the cluster, namespace and access; else null
 * @param egressPolicy the egress policy of every sandbox the server creates ({@code --egress-policy});
 *     null for none
 * @param egressSecrets with a policy, the egress secrets of every sandbox the server creates
 *     ({@code --egress-secret}); their values are redacted from output
 */
public record AdapterConfig(
    boolean http,
    int port,
    String bind,
    String httpToken,
    boolean noAuth,
    SandboxMode mode,
    SandboxSpec containerSpec,
    URI agentUrl,
    String agentToken,
    Map<String, String> passEnv,
    int maxOutputBytes,
    List<String> allowedHosts,
    List<String> allowedOrigins,
    int maxSandboxes,
    Duration keepAlive,
    int maxConnections,
    int maxConcurrentCalls,
    Isolation localIsolation,
    boolean localNetwork,
    Path stateDir,
    Kubernetes kubernetes,
    EgressPolicy egressPolicy,
    List<EgressSecret> egressSecrets) {

  /** The help text of {@code --help}: the synopsis, then each option (see {@link AdapterOptions}). */
  public static final String USAGE = AdapterOptions.USAGE;

  private static final Pattern SIZE = Pattern.compile("(\\d{1,19})([kmg]?)", Pattern.CASE_INSENSITIVE);
  private static final Pattern DECIMAL = Pattern.compile("\\d{1,6}(\\.\\d{1,9})?");
  static final long MIN_MEMORY_BYTES = 64L << 20;
  static final long MAX_MEMORY_BYTES = 1L << 40;
  static final int MAX_PIDS_LIMIT = 4_194_304; // the kernel's largest pid_max
  /** Where the HTTP token and the remote agent's token may come from; never passed to commands. */
  static final String HTTP_TOKEN_ENV = "SANDBOX_MCP_TOKEN";
  static final String AGENT_TOKEN_ENV = "SANDBOX_AGENT_TOKEN";
  /**
   * What the server can do with the one sandbox of a remote agent ({@code --agent-url}): use it.
   * Someone else runs the agent, so the server neither creates, stops, wakes nor removes it.
   */
  static final ProviderCapabilities REMOTE_AGENT = ProviderCapabilities.builder().managed(false).build();
  /** The adapter's own secrets: never passed to sandboxes, whatever --pass-env says. */
  static final List<String> OWN_SECRETS = List.of(HTTP_TOKEN_ENV, AGENT_TOKEN_ENV);

  /** A command-line mistake: the message says what to change. */
  public static final class UsageException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public UsageException(String message) {
      super(message);
    }
  }

  /**
   * Where and how the Kubernetes provider makes pods ({@code --provider kubernetes}). Plain values
   * only, so that reading a configuration never loads the Kubernetes classes.
   *
   * @param kubeconfig the kubeconfig file; null for the client's default lookup
   * @param context the kubeconfig context; null for its current one
   * @param namespace the pods' namespace; null for the context's
   * @param serviceAccount the pods' service account; null for the namespace's default
   * @param imagePullPolicy Always, IfNotPresent or Never
   * @param podIp reach the agents at the pods' addresses rather than through port-forwards
   */
  public record Kubernetes(Path kubeconfig, String context, String namespace, String serviceAccount,
      String imagePullPolicy, boolean podIp) {

    @Override
    public String toString() {
      return "namespace " + (namespace != null ? namespace : "(the context's)")
          + (context != null ? ", context " + context : "") + (kubeconfig != null ? ", kubeconfig " + kubeconfig : "")
          + (serviceAccount != null ? ", service account " + serviceAccount : "") + ", pull " + imagePullPolicy
          + ", " + (podIp ? "pod-ip" : "port-forward");
    }
  }

  /** Parses {@code args} against {@code env}; throws {@link UsageException} on any mistake. */
  public static AdapterConfig parse(String[] args, Map<String, String> env) {
    return AdapterOptions.parse(args, env).build();
  }

  /** Settings for an in-process server in tests: stdio, local sandboxes, defaults elsewhere. */
  public static AdapterConfig defaults() {
    return parse(new String[0], Map.of());
  }

  public AdapterConfig withMaxOutputBytes(int bytes) {
    return new AdapterConfig(http, port, bind, httpToken, noAuth, mode, containerSpec, agentUrl, agentToken, passEnv,
        bytes, allowedHosts, allowedOrigins, maxSandboxes, keepAlive, maxConnections, maxConcurrentCalls,
        localIsolation, localNetwork, stateDir, kubernetes, egressPolicy, egressSecrets);
  }

  @Override
  public String toString() { // never the tokens or the passed values
    return "AdapterConfig{" + (http ? "http " + bind + ":" + port + (noAuth ? " no-auth" : " token") : "stdio")
        + ", " + where() + ", passEnv=" + passEnv.keySet()
        + (egressSecrets.isEmpty() ? "" : ", egressSecrets=" + egressSecrets.stream().map(EgressSecret::name).toList())
        + ", maxOutputBytes=" + maxOutputBytes + "}";
  }

  private String where() {
    return switch (mode) {
      case LOCAL -> "local sandboxes (isolation " + localIsolation.name().toLowerCase(Locale.ROOT)
          + (localIsolation == Isolation.NONE ? "" : ", network " + (localNetwork ? "on" : "off")) + ")";
      case REMOTE -> "agent " + agentUrl;
      case CONTAINER -> "containers of " + containerSpec.image() + " (memory " + containerSpec.memoryBytes()
          + " bytes, " + containerSpec.cpus() + " CPUs, pids " + containerSpec.pidsLimit() + ", network "
          + (containerSpec.network() ? "on" : "off") + ")";
      case KUBERNETES -> "Kubernetes pods of " + containerSpec.image() + " (" + kubernetes + ", memory "
          + containerSpec.memoryBytes() + " bytes, " + containerSpec.cpus() + " CPUs, network "
          + (containerSpec.network() ? "on" : "off") + ")";
    };
  }

  /**
   * What makes the provider of every sandbox: with {@code --provider container} or
   * {@code kubernetes}, that provider (each one's classes are loaded only when it is made); null
   * when each sandbox is a local agent or the remote agent. This and {@link #localProviderFactory()}
   * are the only places that map the command line's choice to a provider.
   */
  Supplier<SandboxProviders.Made> providerFactory() {
    return switch (mode) {
      case CONTAINER -> () -> ContainerProviders.fromEnvironment(containerSpec.image());
      case KUBERNETES -> () -> KubernetesProviders.create(kubernetes, containerSpec.image());
      case LOCAL, REMOTE -> null;
    };
  }

  /**
   * With local sandboxes, what makes the provider of the persistent ones: a {@link LocalProvider} on
   * {@link #stateDir()} with {@link #localIsolation()}; else null (a provider's sandboxes are all its
   * own, and a remote agent has no persistent sandboxes).
   */
  Supplier<SandboxProvider> localProviderFactory() {
    if (mode != SandboxMode.LOCAL) {
      return null;
    }
    return () -> {
      LocalProvider.Builder b = LocalProvider.builder().isolation(localIsolation);
      if (stateDir != null) {
        b.stateDirectory(stateDir);
      }
      return b.build();
    };
  }

  /** How the sandboxes are kept from this machine, for the instructions a client gets when it connects. */
  String sandboxesDescription() {
    return switch (mode) {
      case LOCAL -> "Sandboxes here are local and not isolated from this machine: each is a working directory with its"
          + " own process group and a minimal environment, but commands run as the host user with the host's files"
          + " and network.";
      case CONTAINER -> "Each sandbox here is its own container: commands run as an unprivileged user in /workspace,"
          + " with limited memory, CPU and processes, a read-only system outside /workspace and /tmp, and "
          + (containerSpec.network() ? "network access." : "no network.");
      case KUBERNETES -> "Each sandbox here is its own Kubernetes pod: commands run as an unprivileged user in"
          + " /workspace, with limited memory and CPU, a read-only system outside /workspace and /tmp, and "
          + (containerSpec.network() ? "network access." : "no network.") + " A pod cannot be shut down"
          + " and woken: destroy a sandbox when done.";
      case REMOTE -> "Sandboxes here live on a remote agent: commands run in its container, isolated as far as that"
          + " container is.";
    };
  }

  /**
   * Whether the passed variables go with every request (local sandboxes, a remote agent, pods)
   * rather than into the sandbox's own environment when it is created (containers). A pod's
   * environment is part of the Pod object, which everyone who may read pods in the namespace sees
   * (and etcd stores), so on Kubernetes the values travel only with the calls, over the agent's
   * authenticated connection.
   */
  public boolean passEnvPerCall() {
    return mode != SandboxMode.CONTAINER;
  }

  static boolean isLoopback(String address) {
    try {
      return InetAddress.getByName(address).isLoopbackAddress();
    } catch (UnknownHostException e) {
      return false;
    }
  }


  /** A size in bytes, with an optional k, m or g (powers of 1024), between 64m and 1024g. */
  static long memoryValue(String option, String text) {
    Matcher m = SIZE.matcher(text);
    if (!m.matches()) {
      throw new UsageException(option + " takes a size in bytes, optionally with k, m or g (e.g. 512m), got '"
          + text + "'");
    }
    int shift = switch (m.group(2).toLowerCase(Locale.ROOT)) {
      case "k" -> 10;
      case "m" -> 20;
      case "g" -> 30;
      default -> 0;
    };
    long n;
    try {
      n = Long.parseLong(m.group(1));
    } catch (NumberFormatException e) {
      n = Long.MAX_VALUE;
    }
    long bytes = n > (MAX_MEMORY_BYTES >> shift) ? Long.MAX_VALUE : n << shift;
    if (bytes < MIN_MEMORY_BYTES || bytes > MAX_MEMORY_BYTES) {
      throw new UsageException(option + " must be between 64m and 1024g, got " + text);
    }
    return bytes;
  }

  /** A decimal number of CPUs between 0.01 and 1024. */
  static double cpusValue(String option, String text) {
    if (!DECIMAL.matcher(text).matches()) {
      throw new UsageException(option + " takes a decimal number of CPUs (e.g. 1.5), got '" + text + "'");
    }
    double v = Double.parseDouble(text);
    if (v < 0.01 || v > 1024) {
      throw new UsageException(option + " must be between 0.01 and 1024, got " + text);
    }
    return v;
  }

  /**
   * A token is compared byte for byte with what clients send, so it must be something a header
   * carries unchanged: visible ASCII only (no spaces, tabs or control characters, which HTTP
   * stacks trim or refuse). A file's one trailing newline is removed before this check.
   */
  static String checkToken(String t, String where) {
    if (!t.chars().allMatch(c -> c > 0x20 && c < 0x7f)) {
      throw new UsageException(where + ": the token must be visible ASCII characters only (no spaces,"
          + " tabs, control characters or more than one trailing newline)");
    }
    return t;
  }
}
