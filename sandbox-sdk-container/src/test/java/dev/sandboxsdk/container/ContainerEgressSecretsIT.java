package dev.sandboxsdk.container;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandboxsdk.Command;
import dev.sandboxsdk.EgressEvent;
import dev.sandboxsdk.EgressPolicy;
import dev.sandboxsdk.EgressSecret;
import dev.sandboxsdk.ExecOptions;
import dev.sandboxsdk.ExecResult;
import dev.sandboxsdk.contract.ItEgressAudit;
import dev.sandboxsdk.contract.SkipNotice;
import dev.sandboxsdk.testkit.HelloUpstream;
import dev.sandboxsdk.testkit.ProxyClients;
import dev.sandboxsdk.testkit.SecretSearch;
import dev.sandboxsdk.testkit.SecretUpstream;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A container sandbox with egress secrets against a real engine, the image's firewall leaving its
 * commands nothing but the agent's proxy: curl, python3, node and git (the clients of an image
 * built with {@code SANDBOX_PACKAGES="git ca-certificates curl python3 nodejs"}, {@code
 * -Dsandbox.clientsImage}, default {@code sandbox-agent:clients}) reach the HTTPS upstream with the
 * placeholders while it receives the values; no file, environment, command line or memory a command
 * can read holds a value; and a placeholder sent to a host its secret is not bound to is refused,
 * the audit naming the secret. The upstream ({@link SecretUpstream}) runs in this JVM on every
 * address of the host and is reached from the container at its network's gateway under test names
 * ({@code --egress-test-hosts}); the agent trusts its certificate through {@code
 * --egress-test-trust}, given the PEM text itself (no file of the test's exists in the container).
 */
@ExtendWith({ContainerEngine.class, ContainerEgressSecretsIT.ClientsImage.class})
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class ContainerEgressSecretsIT {
  /** The agent image with the clients installed (see docs/containers.md, "Container image"). */
  static final String CLIENTS_IMAGE = System.getProperty("sandbox.clientsImage", "sandbox-agent:clients");
  private static final String VALUE = "sk-live-ctr-" + random(12);
  private static final String TOKEN = "ghp_ctr" + random(16);
  private static SecretUpstream upstream;
  private static ContainerSandbox sandbox;
  private static String repo;

  /** Runs the class only where the engine has the clients image; under {@code CI=true} its absence fails. */
  static final class ClientsImage implements ExecutionCondition {
    @Override
    public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
      String missing = missingImage();
      if (missing == null) {
        return ConditionEvaluationResult.enabled("image " + CLIENTS_IMAGE);
      }
      if ("true".equals(System.getenv("CI"))) {
        throw new IllegalStateException("CI=true and " + missing);
      }
      return SkipNotice.disabled("container clients", missing + " (CI=true makes this a failure)", missing);
    }
  }

  @BeforeAll
  static void start() {
    upstream = SecretUpstream.start("secret.test", "git.test");
    upstream.addRepository("private", TOKEN, Map.of("README.md", "private readme\n"));
    String gateway;
    try (ContainerSandbox probe = ContainerSandbox.builder().image(CLIENTS_IMAGE).network(true).start()) {
      gateway = gateway(probe);
    }
    int port = upstream.port();
    sandbox = ContainerSandbox.builder().image(CLIENTS_IMAGE)
        .egressPolicy(EgressPolicy.allowList("secret.test:" + port, "git.test:" + port, gateway + ":" + port))
        .egressSecret(EgressSecret.of("API_KEY", VALUE, "secret.test").withHeader("X-Api-Key"))
        .egressSecret(EgressSecret.of("GIT_TOKEN", TOKEN, "git.test").withHeader("Authorization"))
        .agentArgument("--egress-test-hosts=secret.test=" + gateway + ",git.test=" + gateway + ",other.test=" + gateway)
        .agentArgument("--egress-test-trust=" + upstream.pem())
        .start();
    repo = "https://git.test:" + port + "/private.git";
  }

  @AfterAll
  static void stop() {
    if (sandbox != null) {
      sandbox.close();
    }
    if (upstream != null) {
      upstream.close();
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"curl", "python3", "node"})
  void eachClientSendsThePlaceholderAndTheUpstreamReceivesTheValue(String client) {
    String url = "https://secret.test:" + upstream.port() + "/" + client;
    String script = switch (client) {
      case "curl" -> ProxyClients.curl(url, "X-Api-Key", "API_KEY");
      case "python3" -> ProxyClients.python(url, "X-Api-Key", "API_KEY");
      default -> ProxyClients.node(url, "X-Api-Key", "API_KEY");
    };
    ExecResult r = bash(script);
    assertThat(r.stdout()).as("%s: %s", r, r.stderr()).isEqualTo("200 " + HelloUpstream.BODY);
    assertThat(upstream.last().target()).isEqualTo("/" + client);
    assertThat(upstream.last().header("X-Api-Key")).isEqualTo(VALUE);
    assertThat(ItEgressAudit.onceAny(sandbox, e -> e.host().equals("secret.test") && e.allowed()))
        .filteredOn(e -> e.host().equals("secret.test") && e.allowed())
        .isNotEmpty().allSatisfy(e -> assertThat(e.secrets()).containsExactly("API_KEY"));
  }

  @Test
  void gitClonesThePrivateRepositoryWithTheTokenInAHeaderOrInTheUrl() {
    int before = upstream.received().size();
    ExecResult header = bash(ProxyClients.gitClone(repo, "GIT_TOKEN", "/tmp/header", "README.md"));
    assertThat(header.stdout()).as("%s: %s", header, header.stderr()).isEqualTo("private readme\n");
    assertThat(upstream.received().subList(before, upstream.received().size())).as("what the git host received")
        .anyMatch(r -> r.method().equals("POST") && r.target().equals("/private.git/git-upload-pack"))
        .allSatisfy(r -> assertThat(r.header("Authorization")).isEqualTo("Bearer " + TOKEN));

    before = upstream.received().size();
    ExecResult url = bash(ProxyClients.gitCloneWithUrlCredentials(repo, "GIT_TOKEN", "/tmp/url", "README.md"));
    assertThat(url.stdout()).as("%s: %s", url, url.stderr()).isEqualTo("private readme\n");
    String basic = "Basic " + Base64.getEncoder().encodeToString(("x-access-token:" + TOKEN)
        .getBytes(StandardCharsets.UTF_8));
    assertThat(upstream.received().subList(before, upstream.received().size())).filteredOn(r -> r.header("Authorization") != null)
        .isNotEmpty().allSatisfy(r -> assertThat(r.header("Authorization")).isEqualTo(basic));

    ExecResult anonymous = bash("GIT_TERMINAL_PROMPT=0 git clone -q " + repo + " /tmp/anonymous");
    assertThat(anonymous.exitCode()).as("without the token the host refuses: %s", anonymous).isNotZero();
    assertThat(anonymous.stderr()).as("git's answer to a 401").contains("could not read Username");
    assertThat(ItEgressAudit.onceAny(sandbox, e -> e.host().equals("git.test") && e.allowed()))
        .filteredOn(e -> e.host().equals("git.test") && e.allowed())
        .anyMatch(e -> e.secrets().equals(List.of("GIT_TOKEN")));
  }

  @Test
  void theValuesAreInNoFileEnvironmentOrMemoryACommandCanRead() {
    // Leave the clients' traces first: a clone, and a file holding the placeholder.
    bash(ProxyClients.gitClone(repo, "GIT_TOKEN", "/workspace/traces", "README.md")
        + "; printf %s \"$API_KEY\" > /workspace/key.txt");
    assertThat(bash("printf %s \"$API_KEY\"").stdout()).matches("sandbox-secret-[0-9a-f]{32}");
    assertThat(bash("env").stdout()).contains("API_KEY=sandbox-secret-", "GIT_TOKEN=sandbox-secret-",
        "SSL_CERT_FILE=", "NODE_EXTRA_CA_CERTS=").doesNotContain(VALUE, TOKEN);
    for (String value : List.of(VALUE, TOKEN)) {
      ExecResult search = bash(SecretSearch.script(value, "/workspace", "/tmp", "/home/sandbox",
          "\"$(dirname \"$SSL_CERT_FILE\")\""));
      assertThat(search.stdout()).as("%s: %s", search, search.stderr()).contains("files: none\n")
          .containsPattern("memory: found none \\(scanned [1-9]");
    }
    ExecResult agent = bash("for p in /proc/[0-9]*; do [ \"$(cat $p/comm 2>/dev/null)\" = java ] && pid=${p#/proc/}; done; "
        + "echo agent=$pid; python3 -c \"import sys; open('/proc/%s/mem' % sys.argv[1], 'rb')\" $pid 2>&1 | tail -1; "
        + "cat /proc/$pid/environ >/dev/null 2>&1 || echo environ-unreadable");
    assertThat(agent.stdout()).as("the agent's memory and environment are out of the commands' reach")
        .containsPattern("agent=[0-9]+").contains("PermissionError", "environ-unreadable");
    assertThat(bash("grep -c sandbox-secret- /workspace/key.txt").stdout()).isEqualTo("1\n");
  }

  @Test
  void aPlaceholderSentToAHostItIsNotBoundToIsRefusedAndTheAuditNamesTheSecret() {
    int before = upstream.received().size();
    int port = upstream.port();
    // to the host of another secret (intercepted, so the proxy reads the request), and over plain HTTP
    ExecResult toGitHost = bash(ProxyClients.curl("https://git.test:" + port + "/leak", "X-Api-Key", "API_KEY"));
    assertThat(toGitHost.stdout()).as("%s: %s", toGitHost, toGitHost.stderr())
        .isEqualTo("403 egress denied by secret-to-unbound-host (API_KEY)\n");
    ExecResult plain = bash(ProxyClients.curl("http://other.test:" + port + "/leak", "X-Api-Key", "API_KEY"));
    assertThat(plain.stdout()).isEqualTo("403 egress denied by secret-to-unbound-host (API_KEY)\n");
    assertThat(upstream.received()).as("nothing reached the upstream").hasSize(before);

    List<EgressEvent> events = ItEgressAudit.once(sandbox, all -> all.stream()
        .filter(e -> e.rule().equals("secret-to-unbound-host")).map(EgressEvent::host).toList()
        .containsAll(List.of("git.test", "other.test")));
    assertThat(events).filteredOn(e -> !e.allowed() && e.rule().equals("secret-to-unbound-host"))
        .extracting(EgressEvent::host).contains("git.test", "other.test");
    assertThat(events).filteredOn(e -> e.rule().equals("secret-to-unbound-host"))
        .allSatisfy(e -> assertThat(e.secrets()).containsExactly("API_KEY"));
    assertThat(events.toString()).doesNotContain(VALUE, TOKEN);
  }

  private static ExecResult bash(String script) {
    return sandbox.exec(Command.of("bash", "-c", script), ExecOptions.defaults());
  }

  /** Why the clients image cannot be used, or null. */
  private static String missingImage() {
    try (ContainerProvider p = ContainerProvider.fromEnvironment()) {
      return p.hasImage(CLIENTS_IMAGE) ? null : "no image '" + CLIENTS_IMAGE + "' (-Dsandbox.clientsImage) on the engine at "
          + p.engineHost() + ": build it with --build-arg SANDBOX_PACKAGES=\"git ca-certificates curl python3 nodejs\""
          + " (docs/containers.md, \"Container image\")";
    }
  }

  /** The container's default gateway, from /proc/net/route (hex, little-endian). */
  private static String gateway(ContainerSandbox s) {
    String hex = s.exec("awk '$2 == \"00000000\" { print $3; exit }' /proc/net/route").stdout().trim();
    assertThat(hex).as("a default route").matches("[0-9A-Fa-f]{8}");
    long v = Long.parseLong(hex, 16);
    return (v & 0xff) + "." + (v >> 8 & 0xff) + "." + (v >> 16 & 0xff) + "." + (v >> 24 & 0xff);
  }

  private static String random(int bytes) {
    byte[] b = new byte[bytes];
    new SecureRandom().nextBytes(b);
    return HexFormat.of().formatHex(b);
  }
}
