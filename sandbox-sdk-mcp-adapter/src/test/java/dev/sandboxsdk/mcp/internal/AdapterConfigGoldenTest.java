package dev.sandboxsdk.mcp.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.sandboxsdk.SandboxSpec;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Pins the option parsing byte for byte: the help text, every field a representative command line
 * parses to, and the exact message of each kind of mistake (including which one wins when a
 * command line has several).
 */
class AdapterConfigGoldenTest {
  @TempDir
  Path tmp;

  private Path token;
  private Path kubeconfig;

  @BeforeEach
  void files() throws IOException {
    token = Files.writeString(tmp.resolve("token"), "t0k3n\n");
    kubeconfig = Files.writeString(tmp.resolve("kubeconfig"), "apiVersion: v1\n");
  }

  @Test
  void helpTextIsUnchanged() throws IOException {
    try (InputStream in = getClass().getResourceAsStream("adapter-usage.txt")) {
      assertThat(AdapterConfig.USAGE).isEqualTo(new String(in.readAllBytes(), StandardCharsets.UTF_8));
    }
  }

  @Test
  void representativeCommandLinesParseToTheSameConfig() {
    Map<String, String> env = Map.of("API_KEY", "sk-secret-value", "B_KEY", "b-secret-value");
    assertThat(describe(parse(env))).isEqualTo("http=false port=8080 bind=127.0.0.1 httpToken=null noAuth=false"
        + " mode=LOCAL spec=null agentUrl=null agentToken=null passEnv={} maxOutputBytes=16384 allowedHosts=[]"
        + " allowedOrigins=[] maxSandboxes=8 keepAlive=PT15S maxConnections=0 maxConcurrentCalls=64"
        + " localIsolation=ISOLATED localNetwork=false stateDir=null kubernetes=null");
    assertThat(describe(parse(env, "--http", "--port", "0", "--bind", "localhost", "--token-file", token.toString(),
        "--allow-host", "Example.COM", "--allow-origin", "http://A.example", "--allow-host", "b", "--keep-alive-seconds",
        "5", "--max-connections", "64", "--max-concurrent-calls", "7", "--max-output-bytes", "1000", "--max-sandboxes",
        "3", "--pass-env", "API_KEY", "B_KEY", "--isolation", "required", "--network", "on", "--state-dir",
        tmp.resolve("state/../state").toString(), "--provider", "local")))
        .isEqualTo("http=true port=0 bind=localhost httpToken=t0k3n noAuth=false mode=LOCAL spec=null agentUrl=null"
            + " agentToken=null passEnv={API_KEY=sk-secret-value, B_KEY=b-secret-value} maxOutputBytes=1000"
            + " allowedHosts=[example.com, b] allowedOrigins=[http://a.example] maxSandboxes=3 keepAlive=PT5S"
            + " maxConnections=64 maxConcurrentCalls=7 localIsolation=REQUIRED localNetwork=true stateDir=<tmp>/state"
            + " kubernetes=null");
    assertThat(describe(parse(env, "--provider", "container", "--image", "registry.example/agent:1", "--memory", "512m",
        "--cpus", "1.5", "--pids-limit", "100", "--network", "on", "--pass-env", "API_KEY", "--stdio")))
        .isEqualTo("http=false port=8080 bind=127.0.0.1 httpToken=null noAuth=false mode=CONTAINER"
            + " spec=[image=registry.example/agent:1 memory=536870912 cpus=1.5 pids=100 network=true env={}]"
            + " agentUrl=null agentToken=null passEnv={API_KEY=sk-secret-value} maxOutputBytes=16384 allowedHosts=[]"
            + " allowedOrigins=[] maxSandboxes=8 keepAlive=PT15S maxConnections=0 maxConcurrentCalls=64"
            + " localIsolation=ISOLATED localNetwork=true stateDir=null kubernetes=null");
    assertThat(describe(parse(env, "--provider", "kubernetes", "--namespace", "agents", "--kubeconfig",
        kubeconfig.toString(), "--context", "ctx", "--service-account", "sa", "--image-pull-policy", "Always",
        "--k8s-access", "pod-ip", "--image", "x", "--memory", "1g", "--cpus", "2")))
        .isEqualTo("http=false port=8080 bind=127.0.0.1 httpToken=null noAuth=false mode=KUBERNETES"
            + " spec=[image=x memory=1073741824 cpus=2.0 pids=512 network=false env={}] agentUrl=null agentToken=null"
            + " passEnv={} maxOutputBytes=16384 allowedHosts=[] allowedOrigins=[] maxSandboxes=8 keepAlive=PT15S"
            + " maxConnections=0 maxConcurrentCalls=64 localIsolation=ISOLATED localNetwork=false stateDir=null"
            + " kubernetes=Kubernetes[kubeconfig=<tmp>/kubeconfig, context=ctx, namespace=agents, serviceAccount=sa,"
            + " imagePullPolicy=Always, podIp=true]");
    assertThat(describe(parse(Map.of("SANDBOX_AGENT_TOKEN", "agent-tok", "SANDBOX_MCP_TOKEN", "mcp-tok"),
        "--agent-url", "https://agent.example:3000", "--http")))
        .isEqualTo("http=true port=8080 bind=127.0.0.1 httpToken=mcp-tok noAuth=false mode=REMOTE spec=null"
            + " agentUrl=https://agent.example:3000 agentToken=agent-tok passEnv={} maxOutputBytes=16384"
            + " allowedHosts=[] allowedOrigins=[] maxSandboxes=8 keepAlive=PT15S maxConnections=0"
            + " maxConcurrentCalls=64 localIsolation=ISOLATED localNetwork=false stateDir=null kubernetes=null");
    assertThat(describe(parse(Map.of(), "--agent-url", "http://agent:1", "--agent-token-file", token.toString(),
        "--http", "--no-auth", "--bind", "::1")))
        .isEqualTo("http=true port=8080 bind=::1 httpToken=null noAuth=true mode=REMOTE spec=null"
            + " agentUrl=http://agent:1 agentToken=t0k3n passEnv={} maxOutputBytes=16384 allowedHosts=[]"
            + " allowedOrigins=[] maxSandboxes=8 keepAlive=PT15S maxConnections=0 maxConcurrentCalls=64"
            + " localIsolation=ISOLATED localNetwork=false stateDir=null kubernetes=null");
  }

  @Test
  void mistakesAreReportedWithTheSameMessages() {
    Map<String, String> agent = Map.of("SANDBOX_AGENT_TOKEN", "agent-tok");
    Map<String, String> mcp = Map.of("SANDBOX_MCP_TOKEN", "mcp-tok");
    List<String> messages = new ArrayList<>();
    messages.add(error(Map.of(), "--bogus"));
    messages.add(error(Map.of(), "--port"));
    messages.add(error(Map.of(), "--port", "--http"));
    messages.add(error(Map.of(), "--http", "--no-auth", "--port", "70000"));
    messages.add(error(Map.of(), "--stdio", "--http", "--port", "x"));
    messages.add(error(Map.of(), "--stdio", "--http"));
    messages.add(error(Map.of(), "--port", "1", "--port", "2", "--memory", "1g"));
    messages.add(error(Map.of(), "--memory", "1g", "--memory", "2g", "--cpus", "1"));
    messages.add(error(Map.of(), "--pids-limit", "100", "--provider", "kubernetes"));
    messages.add(error(Map.of(), "--pids-limit", "100"));
    messages.add(error(Map.of(), "--namespace", "x", "--context", "c", "--namespace", "y"));
    messages.add(error(agent, "--network", "on", "--agent-url", "http://a:1"));
    messages.add(error(Map.of(), "--isolation", "none", "--provider", "container"));
    messages.add(error(Map.of(), "--state-dir", "/tmp/x", "--provider", "container"));
    messages.add(error(Map.of(), "--provider", "kubernetes", "--kubeconfig", tmp.resolve("none").toString()));
    messages.add(error(Map.of(), "--isolation", "none", "--network", "on"));
    messages.add(error(Map.of(), "--agent-url", "http://a b"));
    messages.add(error(Map.of(), "--agent-url", "file:///x"));
    messages.add(error(Map.of(), "--agent-url", "http://a:1"));
    messages.add(error(Map.of(), "--agent-token-file", "x"));
    messages.add(error(Map.of(), "--http", "--token-file", token.toString(), "--no-auth"));
    messages.add(error(mcp, "--http", "--no-auth"));
    messages.add(error(Map.of(), "--http"));
    messages.add(error(Map.of(), "--http", "--no-auth", "--bind", "0.0.0.0"));
    messages.add(error(Map.of(), "--namespace", "Bad_Name", "--provider", "kubernetes"));
    messages.add(error(Map.of(), "--image-pull-policy", "Sometimes"));
    messages.add(error(Map.of(), "--k8s-access", "x"));
    messages.add(error(Map.of(), "--network", "yes"));
    messages.add(error(Map.of(), "--isolation", "bwrap"));
    messages.add(error(Map.of(), "--provider", "docker"));
    messages.add(error(Map.of(), "--pass-env", "SANDBOX_MCP_TOKEN"));
    messages.add(error(Map.of(), "--pass-env"));
    messages.add(error(Map.of("A", "a-secret-value"), "--pass-env", "A", "--port"));
    messages.add(error(Map.of(), "--pass-env", "bad-name"));
    messages.add(error(Map.of(), "--pass-env", "UNSET_HERE"));
    messages.add(error(Map.of(), "--max-output-bytes", "10"));
    messages.add(error(Map.of(), "--provider", "container", "--image", "a b"));
    messages.add(error(agent, "--agent-url", "http://a:1", "--provider", "local"));
    messages.add(error(Map.of(), "--state-dir", token.toString()));
    assertThat(String.join("\n", messages).replace(tmp.toString(), "<tmp>")).isEqualTo(String.join("\n",
        "unknown option '--bogus'",
        "--port needs a value",
        "--port needs a value",
        "--port must be between 0 and 65535, got 70000",
        "--port takes a number, got 'x'",
        "choose one of --stdio and --http",
        "--port, --port apply to --http only",
        "--memory, --cpus apply to --provider container or kubernetes only",
        "--pids-limit applies to --provider container only (on Kubernetes the kubelet's podPidsLimit sets it for"
            + " every pod of a node)",
        "--pids-limit applies to --provider container only",
        "--namespace, --context apply to --provider kubernetes only",
        "--network applies to --provider local, container or kubernetes, not to a remote agent",
        "--isolation applies to --provider local only (a container or pod is isolated by its engine)",
        "--state-dir applies to --provider local only (a container or Kubernetes provider's persistent sandboxes"
            + " live on its engine or cluster)",
        "--kubeconfig <tmp>/none: no such readable file",
        "--network applies to isolated local sandboxes (--isolation isolated or required); with --isolation none"
            + " commands always have this machine's network",
        "--agent-url is not a URL: Illegal character in authority at index 7: http://a b",
        "--agent-url must be an http(s) URL with a host, got 'file:///x'",
        "--agent-url needs the agent's token: --agent-token-file F or env SANDBOX_AGENT_TOKEN",
        "--agent-token-file needs --agent-url",
        "choose one of --token-file and --no-auth",
        "--no-auth conflicts with SANDBOX_MCP_TOKEN being set",
        "--http needs a token: --token-file F or env SANDBOX_MCP_TOKEN (or --no-auth on a loopback address)",
        "--no-auth is only allowed on a loopback bind address, not 0.0.0.0",
        "--namespace takes a Kubernetes name (lower-case letters, digits and '-', at most 63, starting and ending"
            + " with a letter or digit), got 'Bad_Name'",
        "--image-pull-policy must be Always, IfNotPresent or Never, got 'Sometimes'",
        "--k8s-access must be port-forward or pod-ip, got 'x'",
        "--network must be on or off, got 'yes'",
        "--isolation must be isolated, none or required, got 'bwrap'",
        "--provider must be local, container or kubernetes, got 'docker'",
        "--pass-env SANDBOX_MCP_TOKEN: the adapter's own token is never passed to sandboxes",
        "--pass-env needs a value",
        "--port needs a value",
        "--pass-env takes variable names, got 'bad-name'",
        "--pass-env UNSET_HERE: the variable is not set in the adapter's environment",
        "--max-output-bytes must be between 256 and 16777216, got 10",
        "--image: " + imageError("a b"),
        "--agent-url conflicts with --provider local: --agent-url drives one remote agent instead of creating"
            + " sandboxes; give one of them",
        "--state-dir <tmp>/token exists and is not a directory"));
  }

  private static String imageError(String image) {
    try {
      SandboxSpec.builder().image(image);
      return "(accepted)";
    } catch (IllegalArgumentException e) {
      return e.getMessage();
    }
  }

  private static AdapterConfig parse(Map<String, String> env, String... args) {
    return AdapterConfig.parse(args, env);
  }

  private static String error(Map<String, String> env, String... args) {
    Throwable t = catchThrowable(() -> AdapterConfig.parse(args, env));
    assertThat(t).as(String.join(" ", args)).isInstanceOf(AdapterConfig.UsageException.class);
    return t.getMessage();
  }

  private String describe(AdapterConfig c) {
    SandboxSpec s = c.containerSpec();
    String spec = s == null ? "null" : "[image=" + s.image() + " memory=" + s.memoryBytes() + " cpus=" + s.cpus()
        + " pids=" + s.pidsLimit() + " network=" + s.network() + " env=" + new TreeMap<>(s.env()) + "]";
    return ("http=" + c.http() + " port=" + c.port() + " bind=" + c.bind() + " httpToken=" + c.httpToken()
        + " noAuth=" + c.noAuth() + " mode=" + c.mode() + " spec=" + spec + " agentUrl=" + c.agentUrl()
        + " agentToken=" + c.agentToken() + " passEnv=" + new TreeMap<>(c.passEnv()) + " maxOutputBytes="
        + c.maxOutputBytes() + " allowedHosts=" + c.allowedHosts() + " allowedOrigins=" + c.allowedOrigins()
        + " maxSandboxes=" + c.maxSandboxes() + " keepAlive=" + c.keepAlive() + " maxConnections="
        + c.maxConnections() + " maxConcurrentCalls=" + c.maxConcurrentCalls() + " localIsolation="
        + c.localIsolation() + " localNetwork=" + c.localNetwork() + " stateDir=" + c.stateDir() + " kubernetes="
        + kubernetes(c.kubernetes())).replace(tmp.toString(), "<tmp>");
  }

  private static String kubernetes(AdapterConfig.Kubernetes k) {
    return k == null ? "null" : "Kubernetes[kubeconfig=" + k.kubeconfig() + ", context=" + k.context()
        + ", namespace=" + k.namespace() + ", serviceAccount=" + k.serviceAccount() + ", imagePullPolicy="
        + k.imagePullPolicy() + ", podIp=" + k.podIp() + "]";
  }
}
