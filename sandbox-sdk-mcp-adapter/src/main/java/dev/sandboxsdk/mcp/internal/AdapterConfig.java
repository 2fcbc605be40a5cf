package dev.sandboxsdk.mcp.internal;

import dev.sandboxsdk.Isolation;
import dev.sandboxsdk.SandboxSpec;
import java.io.IOException;
import java.net.InetAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
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
    Kubernetes kubernetes) {

  public static final String USAGE = String.join("\n",
      "usage: java -jar sandbox-mcp.jar [--stdio | --http [--port 8080] [--bind 127.0.0.1]]",
      "           [--token-file F | --no-auth]",
      "           [[--provider local] [--isolation isolated|none|required] [--state-dir DIR]",
      "            | --provider container [--pids-limit N]",
      "            | --provider kubernetes [--namespace NS] [--kubeconfig F] [--context NAME]",
      "                [--service-account NAME] [--image-pull-policy P] [--k8s-access port-forward|pod-ip]",
      "            | --agent-url URL --agent-token-file F]",
      "           [--image NAME] [--memory SIZE] [--cpus N]  (container, kubernetes) [--network on|off]",
      "           [--pass-env NAME ...] [--max-output-bytes N] [--max-sandboxes N]",
      "           [--allow-host HOST] [--allow-origin ORIGIN] [--keep-alive-seconds N]",
      "",
      "  --stdio              serve MCP on stdin/stdout (the default); logs go to stderr",
      "  --http               serve Streamable HTTP on /mcp",
      "  --port N             HTTP port (default 8080; 0 picks a free port)",
      "  --bind ADDR          HTTP bind address (default 127.0.0.1)",
      "  --token-file F       bearer token for HTTP clients (or env SANDBOX_MCP_TOKEN)",
      "  --no-auth            HTTP without a token; only on a loopback address",
      "  --provider P         where each sandbox runs: local (the default; an agent process on this",
      "                       machine, as this OS user, commands in bubblewrap where it works), container (a container per",
      "                       sandbox on Docker or Podman, found through DOCKER_HOST or the local socket) or kubernetes",
      "                       (a pod per sandbox on the cluster of KUBECONFIG or ~/.kube/config, or in-cluster)",
      "  --image NAME         container, kubernetes: the agent image (default sandbox-agent; on Kubernetes",
      "                       a name the cluster can pull, e.g. registry.example.com/sandbox-agent:0.1)",
      "  --memory SIZE        container, kubernetes: memory limit per sandbox, bytes or with k, m, g",
      "                       (default 1g, at least 64m)",
      "  --cpus N             container, kubernetes: CPU limit per sandbox, e.g. 1.5 (default 1)",
      "  --pids-limit N       container: processes and threads per sandbox (default 512, at least 64)",
      "  --network on|off     local (isolated), container, kubernetes: whether commands may open",
      "                       connections (default off; on Kubernetes a NetworkPolicy, which needs a",
      "                       CNI plugin that enforces policies, plus the image's own firewall)",
      "  --namespace NS       kubernetes: the namespace of the sandbox pods (default: the kubeconfig",
      "                       context's, else default)",
      "  --kubeconfig F       kubernetes: the kubeconfig file (default: KUBECONFIG, ~/.kube/config, or",
      "                       the service account of the pod the server runs in)",
      "  --context NAME       kubernetes: the kubeconfig context (default: its current context)",
      "  --service-account N  kubernetes: the service account of the pods (default: the namespace's",
      "                       default; its token is never mounted)",
      "  --image-pull-policy P  kubernetes: Always, IfNotPresent (the default) or Never",
      "  --k8s-access A       kubernetes: how the server reaches each pod's agent: port-forward (the",
      "                       default; through the API server, from anywhere) or pod-ip (direct, for a",
      "                       server inside the cluster)",
      "  --isolation I        local: isolated (the default: commands run in bubblewrap where bwrap works,",
      "                       else not isolated with one warning), required (fail if bwrap cannot be",
      "                       used) or none (commands see this machine as this OS user does)",
      "  --state-dir DIR      local: where persistent sandboxes (getSandbox persistent: true) keep their",
      "                       files and checkpoints (default $XDG_STATE_HOME/sandbox-sdk or",
      "                       ~/.local/state/sandbox-sdk); servers given the same directory share them",
      "  --agent-url URL      drive this remote container agent instead of a provider",
      "  --agent-token-file F the remote agent's token (or env SANDBOX_AGENT_TOKEN)",
      "  --pass-env NAME ...  inject these variables of the adapter's environment into every",
      "                       sandbox process; its value is redacted from all output",
      "  --max-output-bytes N output per stream handed to the model per call (default 16384)",
      "  --max-sandboxes N    sandboxes that may exist at once (default 8)",
      "  --allow-host HOST    also accept this Host name (repeatable; IP literals, localhost and",
      "                       the bind address are always accepted)",
      "  --allow-origin O     also accept this Origin (repeatable; origins on accepted hosts always are)",
      "  --keep-alive-seconds N  SSE keep-alive interval (default 15)",
      "  --max-connections N  HTTP connections open at once (default: half the open-file limit,",
      "                       between 32 and 1000); more are closed as they arrive",
      "  --max-concurrent-calls N  tool calls running at once (default 64); more are refused");

  private static final List<String> HTTP_ONLY = List.of("--port", "--bind", "--token-file", "--no-auth",
      "--allow-host", "--allow-origin", "--keep-alive-seconds", "--max-connections");
  /** Options of the providers that make sandboxes from an image (container, kubernetes). */
  private static final List<String> IMAGE_ONLY = List.of("--image", "--memory", "--cpus");
  private static final List<String> KUBERNETES_ONLY = List.of("--namespace", "--kubeconfig", "--context",
      "--service-account", "--image-pull-policy", "--k8s-access");
  private static final Pattern DNS_LABEL = Pattern.compile("[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?");
  private static final Pattern SIZE = Pattern.compile("(\\d{1,19})([kmg]?)", Pattern.CASE_INSENSITIVE);
  private static final Pattern DECIMAL = Pattern.compile("\\d{1,6}(\\.\\d{1,9})?");
  static final long MIN_MEMORY_BYTES = 64L << 20;
  static final long MAX_MEMORY_BYTES = 1L << 40;
  static final int MAX_PIDS_LIMIT = 4_194_304; // the kernel's largest pid_max
  /** Where the HTTP token and the remote agent's token may come from; never passed to commands. */
  static final String HTTP_TOKEN_ENV = "SANDBOX_MCP_TOKEN";
  static final String AGENT_TOKEN_ENV = "SANDBOX_AGENT_TOKEN";
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
    boolean http = false;
    boolean stdio = false;
    int port = 8080;
    String bind = "127.0.0.1";
    String tokenFile = null;
    boolean noAuth = false;
    String agentUrl = null;
    String agentTokenFile = null;
    String provider = null;
    SandboxSpec.Builder spec = SandboxSpec.builder();
    List<String> imageOnly = new ArrayList<>();
    List<String> kubernetesOnly = new ArrayList<>();
    boolean pidsLimit = false;
    String kubeconfig = null;
    String context = null;
    String namespace = null;
    String serviceAccount = null;
    String pullPolicy = "IfNotPresent";
    boolean podIp = false;
    Boolean network = null;
    Isolation isolation = null;
    String stateDir = null;
    Map<String, String> passEnv = new LinkedHashMap<>();
    int maxOutput = 16_384;
    int maxSandboxes = 8;
    int keepAliveSeconds = 15;
    int maxConnections = 0;
    int maxCalls = 64;
    List<String> hosts = new ArrayList<>();
    List<String> origins = new ArrayList<>();
    List<String> httpOnly = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (HTTP_ONLY.contains(a)) {
        httpOnly.add(a);
      }
      if (IMAGE_ONLY.contains(a) && !imageOnly.contains(a)) {
        imageOnly.add(a);
      }
      if (KUBERNETES_ONLY.contains(a) && !kubernetesOnly.contains(a)) {
        kubernetesOnly.add(a);
      }
      switch (a) {
        case "--stdio" -> stdio = true;
        case "--http" -> http = true;
        case "--no-auth" -> noAuth = true;
        case "--port" -> port = intValue(a, value(args, ++i, a), 0, 65_535);
        case "--bind" -> bind = value(args, ++i, a);
        case "--token-file" -> tokenFile = value(args, ++i, a);
        case "--agent-url" -> agentUrl = value(args, ++i, a);
        case "--agent-token-file" -> agentTokenFile = value(args, ++i, a);
        case "--provider" -> {
          provider = value(args, ++i, a);
          if (!List.of("local", "container", "kubernetes").contains(provider)) {
            throw new UsageException("--provider must be local, container or kubernetes, got '" + provider + "'");
          }
        }
        case "--image" -> {
          String image = value(args, ++i, a);
          try {
            spec.image(image);
          } catch (IllegalArgumentException e) {
            throw new UsageException("--image: " + e.getMessage());
          }
        }
        case "--memory" -> spec.memoryBytes(memoryValue(a, value(args, ++i, a)));
        case "--cpus" -> spec.cpus(cpusValue(a, value(args, ++i, a)));
        case "--pids-limit" -> {
          spec.pidsLimit(intValue(a, value(args, ++i, a), 64, MAX_PIDS_LIMIT));
          pidsLimit = true;
        }
        case "--kubeconfig" -> kubeconfig = value(args, ++i, a);
        case "--context" -> context = value(args, ++i, a);
        case "--namespace" -> namespace = dnsLabel(a, value(args, ++i, a));
        case "--service-account" -> serviceAccount = dnsLabel(a, value(args, ++i, a));
        case "--image-pull-policy" -> {
          pullPolicy = value(args, ++i, a);
          if (!List.of("Always", "IfNotPresent", "Never").contains(pullPolicy)) {
            throw new UsageException("--image-pull-policy must be Always, IfNotPresent or Never, got '" + pullPolicy
                + "'");
          }
        }
        case "--k8s-access" -> {
          String v = value(args, ++i, a);
          if (!v.equals("port-forward") && !v.equals("pod-ip")) {
            throw new UsageException("--k8s-access must be port-forward or pod-ip, got '" + v + "'");
          }
          podIp = v.equals("pod-ip");
        }
        case "--network" -> {
          String v = value(args, ++i, a);
          if (!v.equals("on") && !v.equals("off")) {
            throw new UsageException("--network must be on or off, got '" + v + "'");
          }
          network = v.equals("on");
        }
        case "--isolation" -> {
          String v = value(args, ++i, a);
          isolation = switch (v) {
            case "isolated" -> Isolation.ISOLATED;
            case "none" -> Isolation.NONE;
            case "required" -> Isolation.REQUIRED;
            default -> throw new UsageException("--isolation must be isolated, none or required, got '" + v + "'");
          };
        }
        case "--state-dir" -> stateDir = value(args, ++i, a);
        case "--max-output-bytes" -> maxOutput = intValue(a, value(args, ++i, a), 256, 16 * 1024 * 1024);
        case "--max-sandboxes" -> maxSandboxes = intValue(a, value(args, ++i, a), 1, 1_000);
        case "--keep-alive-seconds" -> keepAliveSeconds = intValue(a, value(args, ++i, a), 1, 3_600);
        case "--max-connections" -> maxConnections = intValue(a, value(args, ++i, a), 8, 100_000);
        case "--max-concurrent-calls" -> maxCalls = intValue(a, value(args, ++i, a), 1, 10_000);
        case "--allow-host" -> hosts.add(value(args, ++i, a).toLowerCase(Locale.ROOT));
        case "--allow-origin" -> origins.add(value(args, ++i, a).toLowerCase(Locale.ROOT));
        case "--pass-env" -> { // one or more names: --pass-env A B, or --pass-env A --pass-env B
          do {
            String name = value(args, ++i, a);
            if (!name.matches("[A-Za-z_][A-Za-z0-9_]*")) {
              throw new UsageException("--pass-env takes variable names, got '" + name + "'");
            }
            if (OWN_SECRETS.contains(name)) {
              throw new UsageException("--pass-env " + name + ": the adapter's own token is never passed to sandboxes");
            }
            String v = env.get(name);
            if (v == null) {
              throw new UsageException("--pass-env " + name + ": the variable is not set in the adapter's environment");
            }
            passEnv.put(name, v);
          } while (i + 1 < args.length && !args[i + 1].startsWith("--"));
        }
        default -> throw new UsageException("unknown option '" + a + "'");
      }
    }
    if (http && stdio) {
      throw new UsageException("choose one of --stdio and --http");
    }
    if (!http && !httpOnly.isEmpty()) {
      throw new UsageException(appliesTo(httpOnly, "--http only"));
    }
    String httpToken = null;
    if (http) {
      if (tokenFile != null && noAuth) {
        throw new UsageException("choose one of --token-file and --no-auth");
      }
      httpToken = tokenFile != null ? readToken(tokenFile, "--token-file") : nonEmpty(env.get(HTTP_TOKEN_ENV), HTTP_TOKEN_ENV);
      if (httpToken != null && noAuth) {
        throw new UsageException("--no-auth conflicts with SANDBOX_MCP_TOKEN being set");
      }
      if (httpToken == null && !noAuth) {
        throw new UsageException("--http needs a token: --token-file F or env SANDBOX_MCP_TOKEN"
            + " (or --no-auth on a loopback address)");
      }
      if (noAuth && !isLoopback(bind)) {
        throw new UsageException("--no-auth is only allowed on a loopback bind address, not " + bind);
      }
    }
    if (agentUrl != null && provider != null) {
      throw new UsageException("--agent-url conflicts with --provider " + provider + ": --agent-url drives one"
          + " remote agent instead of creating sandboxes; give one of them");
    }
    SandboxMode mode = agentUrl != null ? SandboxMode.REMOTE
        : "container".equals(provider) ? SandboxMode.CONTAINER
        : "kubernetes".equals(provider) ? SandboxMode.KUBERNETES : SandboxMode.LOCAL;
    boolean fromImage = mode == SandboxMode.CONTAINER || mode == SandboxMode.KUBERNETES;
    if (!fromImage && !imageOnly.isEmpty()) {
      throw new UsageException(appliesTo(imageOnly, "--provider container or kubernetes only"));
    }
    if (mode != SandboxMode.CONTAINER && pidsLimit) {
      throw new UsageException("--pids-limit applies to --provider container only" + (mode == SandboxMode.KUBERNETES
          ? " (on Kubernetes the kubelet's podPidsLimit sets it for every pod of a node)" : ""));
    }
    if (mode != SandboxMode.KUBERNETES && !kubernetesOnly.isEmpty()) {
      throw new UsageException(appliesTo(kubernetesOnly, "--provider kubernetes only"));
    }
    if (mode == SandboxMode.REMOTE && network != null) {
      throw new UsageException("--network applies to --provider local, container or kubernetes, not to a remote agent");
    }
    if (mode != SandboxMode.LOCAL && isolation != null) {
      throw new UsageException("--isolation applies to --provider local only (a container or pod is isolated by its"
          + " engine)");
    }
    if (mode != SandboxMode.LOCAL && stateDir != null) {
      throw new UsageException("--state-dir applies to --provider local only (a container or Kubernetes provider's"
          + " persistent sandboxes live on its engine or cluster)");
    }
    Kubernetes kubernetes = null;
    if (mode == SandboxMode.KUBERNETES) {
      Path config = null;
      if (kubeconfig != null) {
        config = pathValue("--kubeconfig", kubeconfig);
        if (!Files.isRegularFile(config) || !Files.isReadable(config)) {
          throw new UsageException("--kubeconfig " + kubeconfig + ": no such readable file");
        }
      }
      kubernetes = new Kubernetes(config, context, namespace, serviceAccount, pullPolicy, podIp);
    }
    Path state = null;
    if (stateDir != null) {
      state = pathValue("--state-dir", stateDir);
      if (Files.exists(state) && !Files.isDirectory(state)) {
        throw new UsageException("--state-dir " + stateDir + " exists and is not a directory");
      }
    }
    if (mode == SandboxMode.LOCAL && isolation == Isolation.NONE && network != null) {
      throw new UsageException("--network applies to isolated local sandboxes (--isolation isolated or required);"
          + " with --isolation none commands always have this machine's network");
    }
    if (network != null) {
      spec.network(network);
    }
    SandboxSpec containerSpec = null;
    if (mode == SandboxMode.KUBERNETES) {
      containerSpec = spec.build(); // the passed variables go with each call: see passEnvPerCall
    } else if (mode == SandboxMode.CONTAINER) {
      try { // the passed variables travel in the container's environment: its rules apply to their names
        SandboxSpec.builder().env(passEnv);
      } catch (IllegalArgumentException e) {
        throw new UsageException("--pass-env with --provider container: " + e.getMessage());
      }
      containerSpec = spec.build();
    }
    URI agent = null;
    String agentToken = null;
    if (agentUrl != null) {
      try {
        agent = new URI(agentUrl);
      } catch (URISyntaxException e) {
        throw new UsageException("--agent-url is not a URL: " + e.getMessage());
      }
      if (!"http".equals(agent.getScheme()) && !"https".equals(agent.getScheme()) || agent.getHost() == null) {
        throw new UsageException("--agent-url must be an http(s) URL with a host, got '" + agentUrl + "'");
      }
      agentToken = agentTokenFile != null
          ? readToken(agentTokenFile, "--agent-token-file") : nonEmpty(env.get(AGENT_TOKEN_ENV), AGENT_TOKEN_ENV);
      if (agentToken == null) {
        throw new UsageException("--agent-url needs the agent's token: --agent-token-file F or env SANDBOX_AGENT_TOKEN");
      }
    } else if (agentTokenFile != null) {
      throw new UsageException("--agent-token-file needs --agent-url");
    }
    return new AdapterConfig(http, port, bind, httpToken, noAuth, mode, containerSpec, agent, agentToken,
        Map.copyOf(passEnv),
        maxOutput, List.copyOf(hosts), List.copyOf(origins), maxSandboxes, Duration.ofSeconds(keepAliveSeconds),
        maxConnections, maxCalls, isolation != null ? isolation : Isolation.ISOLATED, network != null && network, state,
        kubernetes);
  }

  /** Settings for an in-process server in tests: stdio, local sandboxes, defaults elsewhere. */
  public static AdapterConfig defaults() {
    return parse(new String[0], Map.of());
  }

  public AdapterConfig withMaxOutputBytes(int bytes) {
    return new AdapterConfig(http, port, bind, httpToken, noAuth, mode, containerSpec, agentUrl, agentToken, passEnv,
        bytes, allowedHosts, allowedOrigins, maxSandboxes, keepAlive, maxConnections, maxConcurrentCalls,
        localIsolation, localNetwork, stateDir, kubernetes);
  }

  @Override
  public String toString() { // never the tokens or the passed values
    return "AdapterConfig{" + (http ? "http " + bind + ":" + port + (noAuth ? " no-auth" : " token") : "stdio")
        + ", " + where() + ", passEnv=" + passEnv.keySet()
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

  /** A namespace or service account name: a DNS label, as Kubernetes wants it. */
  private static String dnsLabel(String option, String v) {
    if (!DNS_LABEL.matcher(v).matches()) {
      throw new UsageException(option + " takes a Kubernetes name (lower-case letters, digits and '-', at most 63,"
          + " starting and ending with a letter or digit), got '" + v + "'");
    }
    return v;
  }

  /** "--a, --b apply to {@code where}", or "--a applies to ..." for one option. */
  private static String appliesTo(List<String> options, String where) {
    return String.join(", ", options) + (options.size() == 1 ? " applies" : " apply") + " to " + where;
  }

  private static String value(String[] args, int i, String option) {
    if (i >= args.length || args[i].startsWith("--")) {
      throw new UsageException(option + " needs a value");
    }
    return args[i];
  }

  /** {@code text} as an absolute, normalised path; a usage error names {@code option} if it is not one. */
  private static Path pathValue(String option, String text) {
    try {
      return Path.of(text).toAbsolutePath().normalize();
    } catch (java.nio.file.InvalidPathException e) {
      throw new UsageException(option + " is not a path: " + e.getMessage());
    }
  }

  private static int intValue(String option, String text, int min, int max) {
    try {
      int v = Integer.parseInt(text);
      if (v < min || v > max) {
        throw new UsageException(option + " must be between " + min + " and " + max + ", got " + v);
      }
      return v;
    } catch (NumberFormatException e) {
      throw new UsageException(option + " takes a number, got '" + text + "'");
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

  private static String readToken(String file, String option) {
    try {
      String t = Files.readString(Path.of(file), StandardCharsets.UTF_8);
      t = t.endsWith("\r\n") ? t.substring(0, t.length() - 2) : t.endsWith("\n") ? t.substring(0, t.length() - 1) : t;
      if (t.isEmpty()) {
        throw new UsageException(option + " " + file + " is empty");
      }
      return checkToken(t, option + " " + file);
    } catch (IOException e) {
      throw new UsageException(option + " " + file + " cannot be read: " + e);
    }
  }

  private static String nonEmpty(String s, String name) {
    return s == null || s.isEmpty() ? null : checkToken(s, name);
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
