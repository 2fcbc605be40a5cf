package dev.sandboxsdk.mcp.internal;

import dev.sandboxsdk.local.Isolation;
import dev.sandboxsdk.mcp.internal.AdapterConfig.UsageException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.BiConsumer;
import java.util.regex.Pattern;

/**
 * The adapter's command-line options as a table: one row per option with its argument, the
 * providers or transport it applies to, what it sets and its help text. {@link #USAGE} is made
 * from the rows, and {@link #parse} reads a command line through them into a {@link ConfigDraft}.
 */
final class AdapterOptions {
  /** What an option takes: nothing, one value, or one or more names up to the next option. */
  enum Arg { NONE, ONE, NAMES }

  /** Which command lines an option makes sense on; the draft rejects it elsewhere. */
  enum Scope { ANY, HTTP, IMAGE, KUBERNETES }

  /**
   * One option.
   *
   * @param name the option, with its leading {@code --}
   * @param arg what it takes
   * @param scope where it applies
   * @param env the environment variable that stands in for it when it is absent, or null
   * @param apply what it sets: called with the draft and each value (null for {@link Arg#NONE})
   * @param help its lines of the help text
   */
  record Option(String name, Arg arg, Scope scope, String env, BiConsumer<ConfigDraft, String> apply,
      List<String> help) {
  }

  private static final Pattern DNS_LABEL = Pattern.compile("[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?");

  private static final List<String> SYNOPSIS = List.of(
      "usage: java -jar sandbox-mcp.jar [--stdio | --http [--port 8080] [--bind 127.0.0.1]]",
      "           [--token-file F | --no-auth]",
      "           [[--provider local] [--isolation isolated|none|required] [--state-dir DIR]",
      "            | --provider container [--pids-limit N]",
      "            | --provider kubernetes [--namespace NS] [--kubeconfig F] [--context NAME]",
      "                [--service-account NAME] [--image-pull-policy P] [--k8s-access port-forward|pod-ip]",
      "            | --agent-url URL --agent-token-file F]",
      "           [--image NAME] [--memory SIZE] [--cpus N]  (container, kubernetes) [--network on|off]",
      "           [--egress-policy F [--egress-secret NAME[=ENV]@HOST[,HOST...][#HEADER] ...]]  (not remote)",
      "           [--pass-env NAME ...] [--max-output-bytes N] [--max-sandboxes N]",
      "           [--allow-host HOST] [--allow-origin ORIGIN] [--keep-alive-seconds N]",
      "");

  /** Every option, in the order of the help text. */
  static final List<Option> OPTIONS = List.of(
      flag("--stdio", d -> d.stdio = true,
          "  --stdio              serve MCP on stdin/stdout (the default); logs go to stderr"),
      flag("--http", d -> d.http = true,
          "  --http               serve Streamable HTTP on /mcp"),
      one("--port", Scope.HTTP, (d, v) -> d.port = intValue("--port", v, 0, 65_535),
          "  --port N             HTTP port (default 8080; 0 picks a free port)"),
      one("--bind", Scope.HTTP, (d, v) -> d.bind = v,
          "  --bind ADDR          HTTP bind address (default 127.0.0.1)"),
      new Option("--token-file", Arg.ONE, Scope.HTTP, AdapterConfig.HTTP_TOKEN_ENV, (d, v) -> d.tokenFile = v, List.of(
          "  --token-file F       bearer token for HTTP clients (or env SANDBOX_MCP_TOKEN)")),
      new Option("--no-auth", Arg.NONE, Scope.HTTP, null, (d, v) -> d.noAuth = true, List.of(
          "  --no-auth            HTTP without a token; only on a loopback address")),
      one("--provider", Scope.ANY, AdapterOptions::provider,
          "  --provider P         where each sandbox runs: local (the default; an agent process on this",
          "                       machine, as this OS user, commands in bubblewrap where it works), container (a container per",
          "                       sandbox on Docker or Podman, found through DOCKER_HOST or the local socket) or kubernetes",
          "                       (a pod per sandbox on the cluster of KUBECONFIG or ~/.kube/config, or in-cluster)"),
      one("--image", Scope.IMAGE, AdapterOptions::image,
          "  --image NAME         container, kubernetes: the agent image (default sandbox-agent; on Kubernetes",
          "                       a name the cluster can pull, e.g. registry.example.com/sandbox-agent:0.1)"),
      one("--memory", Scope.IMAGE, (d, v) -> d.spec.memoryBytes(AdapterConfig.memoryValue("--memory", v)),
          "  --memory SIZE        container, kubernetes: memory limit per sandbox, bytes or with k, m, g",
          "                       (default 1g, at least 64m)"),
      one("--cpus", Scope.IMAGE, (d, v) -> d.spec.cpus(AdapterConfig.cpusValue("--cpus", v)),
          "  --cpus N             container, kubernetes: CPU limit per sandbox, e.g. 1.5 (default 1)"),
      one("--pids-limit", Scope.ANY, AdapterOptions::pidsLimit,
          "  --pids-limit N       container: processes and threads per sandbox (default 512, at least 64)"),
      one("--network", Scope.ANY, (d, v) -> d.network = onOff("--network", v),
          "  --network on|off     local (isolated), container, kubernetes: whether commands may open",
          "                       connections (default off; on Kubernetes a NetworkPolicy, which needs a",
          "                       CNI plugin that enforces policies, plus the image's own firewall)"),
      one("--namespace", Scope.KUBERNETES, (d, v) -> d.namespace = dnsLabel("--namespace", v),
          "  --namespace NS       kubernetes: the namespace of the sandbox pods (default: the kubeconfig",
          "                       context's, else default)"),
      one("--kubeconfig", Scope.KUBERNETES, (d, v) -> d.kubeconfig = v,
          "  --kubeconfig F       kubernetes: the kubeconfig file (default: KUBECONFIG, ~/.kube/config, or",
          "                       the service account of the pod the server runs in)"),
      one("--context", Scope.KUBERNETES, (d, v) -> d.context = v,
          "  --context NAME       kubernetes: the kubeconfig context (default: its current context)"),
      one("--service-account", Scope.KUBERNETES, (d, v) -> d.serviceAccount = dnsLabel("--service-account", v),
          "  --service-account N  kubernetes: the service account of the pods (default: the namespace's",
          "                       default; its token is never mounted)"),
      one("--image-pull-policy", Scope.KUBERNETES, AdapterOptions::imagePullPolicy,
          "  --image-pull-policy P  kubernetes: Always, IfNotPresent (the default) or Never"),
      one("--k8s-access", Scope.KUBERNETES, AdapterOptions::k8sAccess,
          "  --k8s-access A       kubernetes: how the server reaches each pod's agent: port-forward (the",
          "                       default; through the API server, from anywhere) or pod-ip (direct, for a",
          "                       server inside the cluster)"),
      one("--isolation", Scope.ANY, AdapterOptions::isolation,
          "  --isolation I        local: isolated (the default: commands run in bubblewrap where bwrap works,",
          "                       else not isolated with one warning), required (fail if bwrap cannot be",
          "                       used) or none (commands see this machine as this OS user does)"),
      one("--state-dir", Scope.ANY, (d, v) -> d.stateDir = v,
          "  --state-dir DIR      local: where persistent sandboxes (getSandbox persistent: true) keep their",
          "                       files and checkpoints (default $XDG_STATE_HOME/sandbox-sdk or",
          "                       ~/.local/state/sandbox-sdk); servers given the same directory share them"),
      one("--egress-policy", Scope.ANY, (d, v) -> d.egressPolicyFile = v,
          "  --egress-policy F    run an egress proxy in every sandbox this server creates, with the",
          "                       policy in F: {\"mode\":\"off|allow-list|open\",\"rules\":[\"allow *.pypi.org\",...]}",
          "                       (the egress tools read and change it per sandbox; enforced in containers,",
          "                       pods and isolated local sandboxes without --network, advisory otherwise)"),
      one(EgressSecretOptions.OPTION, Scope.ANY, (d, v) -> d.egressSecrets.add(v, d.env),
          "  --egress-secret NAME[=ENV]@HOST[,HOST...][#HEADER]",
          "                       with --egress-policy: commands get NAME holding a placeholder, and the",
          "                       proxy puts the value of the server's variable ENV (default NAME) in",
          "                       for it in HTTPS requests to HOST (example.com, *.example.com, optionally",
          "                       :port) only, in header HEADER only if given; repeatable. The value never",
          "                       enters a sandbox nor a command line, and is redacted from all output"),
      one("--agent-url", Scope.ANY, (d, v) -> d.agentUrl = v,
          "  --agent-url URL      drive this remote container agent instead of a provider"),
      new Option("--agent-token-file", Arg.ONE, Scope.ANY, AdapterConfig.AGENT_TOKEN_ENV,
          (d, v) -> d.agentTokenFile = v, List.of(
          "  --agent-token-file F the remote agent's token (or env SANDBOX_AGENT_TOKEN)")),
      // one or more names: --pass-env A B, or --pass-env A --pass-env B
      new Option("--pass-env", Arg.NAMES, Scope.ANY, null, AdapterOptions::passEnv, List.of(
          "  --pass-env NAME ...  inject these variables of the adapter's environment into every",
          "                       sandbox process; its value is redacted from all output")),
      one("--max-output-bytes", Scope.ANY, (d, v) -> d.maxOutput = intValue("--max-output-bytes", v, 256, 16 * 1024 * 1024),
          "  --max-output-bytes N output per stream handed to the model per call (default 16384)"),
      one("--max-sandboxes", Scope.ANY, (d, v) -> d.maxSandboxes = intValue("--max-sandboxes", v, 1, 1_000),
          "  --max-sandboxes N    sandboxes that may exist at once (default 8)"),
      one("--allow-host", Scope.HTTP, (d, v) -> d.hosts.add(v.toLowerCase(Locale.ROOT)),
          "  --allow-host HOST    also accept this Host name (repeatable; IP literals, localhost and",
          "                       the bind address are always accepted)"),
      one("--allow-origin", Scope.HTTP, (d, v) -> d.origins.add(v.toLowerCase(Locale.ROOT)),
          "  --allow-origin O     also accept this Origin (repeatable; origins on accepted hosts always are)"),
      one("--keep-alive-seconds", Scope.HTTP,
          (d, v) -> d.keepAliveSeconds = intValue("--keep-alive-seconds", v, 1, 3_600),
          "  --keep-alive-seconds N  SSE keep-alive interval (default 15)"),
      one("--max-connections", Scope.HTTP, (d, v) -> d.maxConnections = intValue("--max-connections", v, 8, 100_000),
          "  --max-connections N  HTTP connections open at once (default: half the open-file limit,",
          "                       between 32 and 1000); more are closed as they arrive"),
      one("--max-concurrent-calls", Scope.ANY,
          (d, v) -> d.maxCalls = intValue("--max-concurrent-calls", v, 1, 10_000),
          "  --max-concurrent-calls N  tool calls running at once (default 64); more are refused"));

  private static final Map<String, Option> BY_NAME = byName();

  /** The help text: the synopsis, then every option's lines. */
  static final String USAGE = usage();

  private AdapterOptions() {
  }

  /** Reads {@code args} into a draft against {@code env}; throws {@link UsageException} on an unknown option or bad value. */
  static ConfigDraft parse(String[] args, Map<String, String> env) {
    ConfigDraft d = new ConfigDraft(env);
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      Option o = BY_NAME.get(a);
      if (o == null) {
        throw new UsageException("unknown option '" + a + "'");
      }
      d.given(o.scope(), a);
      switch (o.arg()) {
        case NONE -> o.apply().accept(d, null);
        case ONE -> o.apply().accept(d, value(args, ++i, a));
        case NAMES -> {
          do {
            o.apply().accept(d, value(args, ++i, a));
          } while (i + 1 < args.length && !args[i + 1].startsWith("--"));
        }
      }
    }
    return d;
  }

  /** The row of {@code name}. */
  static Option option(String name) {
    return BY_NAME.get(name);
  }

  private static Option flag(String name, java.util.function.Consumer<ConfigDraft> set, String help) {
    return new Option(name, Arg.NONE, Scope.ANY, null, (d, v) -> set.accept(d), List.of(help));
  }

  private static Option one(String name, Scope scope, BiConsumer<ConfigDraft, String> apply, String... help) {
    return new Option(name, Arg.ONE, scope, null, apply, List.of(help));
  }

  private static Map<String, Option> byName() {
    Map<String, Option> m = new LinkedHashMap<>();
    for (Option o : OPTIONS) {
      m.put(o.name(), o);
    }
    return Map.copyOf(m);
  }

  private static String usage() {
    List<String> lines = new ArrayList<>(SYNOPSIS);
    for (Option o : OPTIONS) {
      lines.addAll(o.help());
    }
    return String.join("\n", lines);
  }

  private static void provider(ConfigDraft d, String v) {
    if (!List.of("local", "container", "kubernetes").contains(v)) {
      throw new UsageException("--provider must be local, container or kubernetes, got '" + v + "'");
    }
    d.provider = v;
  }

  private static void image(ConfigDraft d, String image) {
    try {
      d.spec.image(image);
    } catch (IllegalArgumentException e) {
      throw new UsageException("--image: " + e.getMessage());
    }
  }

  private static void pidsLimit(ConfigDraft d, String v) {
    d.spec.pidsLimit(intValue("--pids-limit", v, 64, AdapterConfig.MAX_PIDS_LIMIT));
    d.pidsLimit = true;
  }

  private static void imagePullPolicy(ConfigDraft d, String v) {
    if (!List.of("Always", "IfNotPresent", "Never").contains(v)) {
      throw new UsageException("--image-pull-policy must be Always, IfNotPresent or Never, got '" + v + "'");
    }
    d.pullPolicy = v;
  }

  private static void k8sAccess(ConfigDraft d, String v) {
    if (!v.equals("port-forward") && !v.equals("pod-ip")) {
      throw new UsageException("--k8s-access must be port-forward or pod-ip, got '" + v + "'");
    }
    d.podIp = v.equals("pod-ip");
  }

  private static boolean onOff(String option, String v) {
    if (!v.equals("on") && !v.equals("off")) {
      throw new UsageException(option + " must be on or off, got '" + v + "'");
    }
    return v.equals("on");
  }

  private static void isolation(ConfigDraft d, String v) {
    d.isolation = switch (v) {
      case "isolated" -> Isolation.ISOLATED;
      case "none" -> Isolation.NONE;
      case "required" -> Isolation.REQUIRED;
      default -> throw new UsageException("--isolation must be isolated, none or required, got '" + v + "'");
    };
  }

  private static void passEnv(ConfigDraft d, String name) {
    if (!name.matches("[A-Za-z_][A-Za-z0-9_]*")) {
      throw new UsageException("--pass-env takes variable names, got '" + name + "'");
    }
    if (AdapterConfig.OWN_SECRETS.contains(name)) {
      throw new UsageException("--pass-env " + name + ": the adapter's own token is never passed to sandboxes");
    }
    String v = d.env.get(name);
    if (v == null) {
      throw new UsageException("--pass-env " + name + ": the variable is not set in the adapter's environment");
    }
    d.passEnv.put(name, v);
  }

  /** A namespace or service account name: a DNS label, as Kubernetes wants it. */
  private static String dnsLabel(String option, String v) {
    if (!DNS_LABEL.matcher(v).matches()) {
      throw new UsageException(option + " takes a Kubernetes name (lower-case letters, digits and '-', at most 63,"
          + " starting and ending with a letter or digit), got '" + v + "'");
    }
    return v;
  }

  private static String value(String[] args, int i, String option) {
    if (i >= args.length || args[i].startsWith("--")) {
      throw new UsageException(option + " needs a value");
    }
    return args[i];
  }

  /** {@code text} as an absolute, normalised path; a usage error names {@code option} if it is not one. */
  static Path pathValue(String option, String text) {
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
}
