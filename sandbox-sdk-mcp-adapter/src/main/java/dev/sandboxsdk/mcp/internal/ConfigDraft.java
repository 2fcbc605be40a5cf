package dev.sandboxsdk.mcp.internal;

import dev.sandboxsdk.local.Isolation;
import dev.sandboxsdk.SandboxSpec;
import dev.sandboxsdk.mcp.internal.AdapterConfig.Kubernetes;
import dev.sandboxsdk.mcp.internal.AdapterConfig.UsageException;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.BiFunction;
import java.util.function.Predicate;

/**
 * What a command line said, option by option, before the options are checked against each other:
 * {@link AdapterOptions} fills it in, {@link #build()} checks the combination and makes the
 * {@link AdapterConfig}.
 */
final class ConfigDraft {
  final Map<String, String> env;
  boolean http;
  boolean stdio;
  int port = 8080;
  String bind = "127.0.0.1";
  String tokenFile;
  boolean noAuth;
  String agentUrl;
  String agentTokenFile;
  String provider;
  final SandboxSpec.Builder spec = SandboxSpec.builder();
  boolean pidsLimit;
  String kubeconfig;
  String context;
  String namespace;
  String serviceAccount;
  String pullPolicy = "IfNotPresent";
  boolean podIp;
  Boolean network;
  Isolation isolation;
  String stateDir;
  String egressPolicyFile;
  final EgressSecretOptions egressSecrets = new EgressSecretOptions();
  final Map<String, String> passEnv = new LinkedHashMap<>();
  int maxOutput = 16_384;
  int maxSandboxes = 8;
  int keepAliveSeconds = 15;
  int maxConnections;
  int maxCalls = 64;
  final List<String> hosts = new ArrayList<>();
  final List<String> origins = new ArrayList<>();
  /** The options given that apply to one transport or provider only, in order, for the error message. */
  private final List<String> httpOnly = new ArrayList<>();
  private final List<String> imageOnly = new ArrayList<>();
  private final List<String> kubernetesOnly = new ArrayList<>();

  ConfigDraft(Map<String, String> env) {
    this.env = env;
  }

  /** Notes that {@code option}, which applies to {@code scope} only, was given. */
  void given(AdapterOptions.Scope scope, String option) {
    switch (scope) {
      case HTTP -> httpOnly.add(option);
      case IMAGE -> addOnce(imageOnly, option);
      case KUBERNETES -> addOnce(kubernetesOnly, option);
      case ANY -> {
      }
    }
  }

  private static void addOnce(List<String> options, String option) {
    if (!options.contains(option)) {
      options.add(option);
    }
  }

  /** Checks the options against each other and makes the configuration. */
  AdapterConfig build() {
    String httpToken = httpToken();
    if (agentUrl != null && provider != null) {
      throw new UsageException("--agent-url conflicts with --provider " + provider + ": --agent-url drives one"
          + " remote agent instead of creating sandboxes; give one of them");
    }
    SandboxMode mode = agentUrl != null ? SandboxMode.REMOTE
        : SandboxMode.valueOf((provider != null ? provider : "local").toUpperCase(Locale.ROOT));
    checkProviderOptions(mode);
    if (!egressSecrets.isEmpty() && egressPolicyFile == null) {
      throw new UsageException(egressSecrets.first() + " needs --egress-policy: the proxy that puts secrets into"
          + " requests runs only with a policy, which must allow the secrets' hosts");
    }
    egressSecrets.checkPassEnv(passEnv);
    Kubernetes kubernetes = mode == SandboxMode.KUBERNETES ? kubernetes() : null;
    Path state = stateDir();
    if (mode == SandboxMode.LOCAL && isolation == Isolation.NONE && network != null) {
      throw new UsageException("--network applies to isolated local sandboxes (--isolation isolated or required);"
          + " with --isolation none commands always have this machine's network");
    }
    SandboxSpec containerSpec = containerSpec(mode);
    URI agent = agentUrl();
    String agentToken = agentToken(agent);
    return new AdapterConfig(http, port, bind, httpToken, noAuth, mode, containerSpec, agent, agentToken,
        Map.copyOf(passEnv),
        maxOutput, List.copyOf(hosts), List.copyOf(origins), maxSandboxes, Duration.ofSeconds(keepAliveSeconds),
        maxConnections, maxCalls, isolation != null ? isolation : Isolation.ISOLATED, network != null && network, state,
        kubernetes, egressPolicyFile != null ? EgressPolicyFiles.read(egressPolicyFile) : null, egressSecrets.secrets());
  }

  /** Checks the transport's options; returns the HTTP token, null for stdio or {@code --no-auth}. */
  private String httpToken() {
    if (http && stdio) {
      throw new UsageException("choose one of --stdio and --http");
    }
    if (!http && !httpOnly.isEmpty()) {
      throw new UsageException(appliesTo(httpOnly, "--http only"));
    }
    if (!http) {
      return null;
    }
    if (tokenFile != null && noAuth) {
      throw new UsageException("choose one of --token-file and --no-auth");
    }
    String httpToken = token(tokenFile, "--token-file");
    if (httpToken != null && noAuth) {
      throw new UsageException("--no-auth conflicts with SANDBOX_MCP_TOKEN being set");
    }
    if (httpToken == null && !noAuth) {
      throw new UsageException("--http needs a token: --token-file F or env SANDBOX_MCP_TOKEN"
          + " (or --no-auth on a loopback address)");
    }
    if (noAuth && !AdapterConfig.isLoopback(bind)) {
      throw new UsageException("--no-auth is only allowed on a loopback bind address, not " + bind);
    }
    return httpToken;
  }

  /**
   * Which command lines a provider option applies to: the option (or group) was given, the
   * providers it applies to, and the message for any other.
   */
  private record ProviderRule(Predicate<ConfigDraft> given, Set<SandboxMode> appliesTo,
      BiFunction<ConfigDraft, SandboxMode, String> message) {
  }

  /** The options that apply to some providers only, checked in this order. */
  private static final List<ProviderRule> PROVIDER_RULES = List.of(
      new ProviderRule(d -> !d.imageOnly.isEmpty(), EnumSet.of(SandboxMode.CONTAINER, SandboxMode.KUBERNETES),
          (d, mode) -> appliesTo(d.imageOnly, "--provider container or kubernetes only")),
      new ProviderRule(d -> d.pidsLimit, EnumSet.of(SandboxMode.CONTAINER),
          (d, mode) -> "--pids-limit applies to --provider container only" + (mode == SandboxMode.KUBERNETES
              ? " (on Kubernetes the kubelet's podPidsLimit sets it for every pod of a node)" : "")),
      new ProviderRule(d -> !d.kubernetesOnly.isEmpty(), EnumSet.of(SandboxMode.KUBERNETES),
          (d, mode) -> appliesTo(d.kubernetesOnly, "--provider kubernetes only")),
      new ProviderRule(d -> d.network != null, EnumSet.complementOf(EnumSet.of(SandboxMode.REMOTE)),
          (d, mode) -> "--network applies to --provider local, container or kubernetes, not to a remote agent"),
      new ProviderRule(d -> d.isolation != null, EnumSet.of(SandboxMode.LOCAL),
          (d, mode) -> "--isolation applies to --provider local only (a container or pod is isolated by its engine)"),
      new ProviderRule(d -> d.egressPolicyFile != null, EnumSet.complementOf(EnumSet.of(SandboxMode.REMOTE)),
          (d, mode) -> "--egress-policy applies to --provider local, container or kubernetes, not to a remote agent"
              + " (it has its own --egress-policy)"),
      new ProviderRule(d -> !d.egressSecrets.isEmpty(), EnumSet.complementOf(EnumSet.of(SandboxMode.REMOTE)),
          (d, mode) -> "--egress-secret applies to --provider local, container or kubernetes, not to a remote agent"
              + " (it has its own --egress-secrets)"),
      new ProviderRule(d -> d.stateDir != null, EnumSet.of(SandboxMode.LOCAL),
          (d, mode) -> "--state-dir applies to --provider local only (a container or Kubernetes provider's"
              + " persistent sandboxes live on its engine or cluster)"));

  /** Rejects options of other providers than {@code mode}'s: the first rule of {@link #PROVIDER_RULES} broken. */
  private void checkProviderOptions(SandboxMode mode) {
    for (ProviderRule rule : PROVIDER_RULES) {
      if (rule.given().test(this) && !rule.appliesTo().contains(mode)) {
        throw new UsageException(rule.message().apply(this, mode));
      }
    }
  }

  private Kubernetes kubernetes() {
    Path config = null;
    if (kubeconfig != null) {
      config = AdapterOptions.pathValue("--kubeconfig", kubeconfig);
      if (!Files.isRegularFile(config) || !Files.isReadable(config)) {
        throw new UsageException("--kubeconfig " + kubeconfig + ": no such readable file");
      }
    }
    return new Kubernetes(config, context, namespace, serviceAccount, pullPolicy, podIp);
  }

  private Path stateDir() {
    if (stateDir == null) {
      return null;
    }
    Path state = AdapterOptions.pathValue("--state-dir", stateDir);
    if (Files.exists(state) && !Files.isDirectory(state)) {
      throw new UsageException("--state-dir " + stateDir + " exists and is not a directory");
    }
    return state;
  }

  private SandboxSpec containerSpec(SandboxMode mode) {
    if (network != null) {
      spec.network(network);
    }
    if (mode == SandboxMode.KUBERNETES) {
      return spec.build(); // the passed variables go with each call: see passEnvPerCall
    } else if (mode == SandboxMode.CONTAINER) {
      try { // the passed variables travel in the container's environment: its rules apply to their names
        SandboxSpec.builder().env(passEnv);
      } catch (IllegalArgumentException e) {
        throw new UsageException("--pass-env with --provider container: " + e.getMessage());
      }
      return spec.build();
    }
    return null;
  }

  private URI agentUrl() {
    if (agentUrl == null) {
      return null;
    }
    URI agent;
    try {
      agent = new URI(agentUrl);
    } catch (URISyntaxException e) {
      throw new UsageException("--agent-url is not a URL: " + e.getMessage());
    }
    if (!"http".equals(agent.getScheme()) && !"https".equals(agent.getScheme()) || agent.getHost() == null) {
      throw new UsageException("--agent-url must be an http(s) URL with a host, got '" + agentUrl + "'");
    }
    return agent;
  }

  private String agentToken(URI agent) {
    if (agent == null) {
      if (agentTokenFile != null) {
        throw new UsageException("--agent-token-file needs --agent-url");
      }
      return null;
    }
    String agentToken = token(agentTokenFile, "--agent-token-file");
    if (agentToken == null) {
      throw new UsageException("--agent-url needs the agent's token: --agent-token-file F or env SANDBOX_AGENT_TOKEN");
    }
    return agentToken;
  }

  /** The token in {@code file} if given, else in the environment variable that stands in for {@code option}. */
  private String token(String file, String option) {
    if (file != null) {
      return readToken(file, option);
    }
    String name = AdapterOptions.option(option).env();
    String s = env.get(name);
    return s == null || s.isEmpty() ? null : AdapterConfig.checkToken(s, name);
  }

  /** "--a, --b apply to {@code where}", or "--a applies to ..." for one option. */
  private static String appliesTo(List<String> options, String where) {
    return String.join(", ", options) + (options.size() == 1 ? " applies" : " apply") + " to " + where;
  }

  private static String readToken(String file, String option) {
    try {
      String t = Files.readString(Path.of(file), StandardCharsets.UTF_8);
      t = t.endsWith("\r\n") ? t.substring(0, t.length() - 2) : t.endsWith("\n") ? t.substring(0, t.length() - 1) : t;
      if (t.isEmpty()) {
        throw new UsageException(option + " " + file + " is empty");
      }
      return AdapterConfig.checkToken(t, option + " " + file);
    } catch (IOException e) {
      throw new UsageException(option + " " + file + " cannot be read: " + e);
    }
  }
}
