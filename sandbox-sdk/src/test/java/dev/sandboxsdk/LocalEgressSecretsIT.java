package dev.sandboxsdk;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.sandboxsdk.contract.ItEgressAudit;
import dev.sandboxsdk.local.LocalProvider;
import dev.sandboxsdk.local.LocalSandbox;
import dev.sandboxsdk.testkit.HelloUpstream;
import dev.sandboxsdk.testkit.ProxyClients;
import dev.sandboxsdk.testkit.SecretSearch;
import dev.sandboxsdk.testkit.SecretUpstream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A real {@link LocalSandbox} with egress secrets: curl, python3, node and git send the
 * placeholders, the HTTPS upstream ({@link SecretUpstream}) gets the values in the bound headers,
 * and nothing the command can read holds a value: not its environment, not {@code /proc/PID/environ}
 * or {@code cmdline} of any process it sees, not the memory of any process it may read, not the
 * workspace or the CA bundle. The secrets file is gone once the agent is up, the agent's command
 * line never shows a value, and the audit names the secrets. The upstream has a test certificate
 * the agent trusts through {@code --egress-test-trust}, and is reached by test names
 * ({@code --egress-test-hosts}), as in the agent's EgressSecretsAgentIT. A client that is not
 * installed skips its test (CI installs them all).
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class LocalEgressSecretsIT {
  private static final String VALUE = "sk-live-SDK-" + random(12);
  private static final String TOKEN = "ghp_SDK" + random(16);
  private static final EgressPolicy POLICY = EgressPolicy.allowList("secret.test", "git.test", "127.0.0.1/32");
  private static final EgressSecret SECRET = EgressSecret.of("API_KEY", VALUE, "secret.test").withHeader("X-Api-Key");
  private static final EgressSecret GIT_SECRET = EgressSecret.of("GIT_TOKEN", TOKEN, "git.test")
      .withHeader("Authorization");
  private static final String HOSTS = "secret.test=127.0.0.1,git.test=127.0.0.1";
  private static SecretUpstream upstream;
  private static Path trust;

  @BeforeAll
  static void startUpstream() throws IOException {
    upstream = SecretUpstream.start("secret.test", "git.test", "other.test");
    if (has("git")) {
      upstream.addRepository("private", TOKEN, Map.of("README.md", "private readme\n"));
    }
    trust = Files.createTempFile("sdk-test-upstream-ca-", ".pem");
    Files.writeString(trust, upstream.pem());
  }

  @AfterAll
  static void stopUpstream() throws IOException {
    upstream.close();
    Files.deleteIfExists(trust);
  }

  private static LocalSandbox.Builder sandbox() {
    return LocalSandbox.builder().egressPolicy(POLICY).egressSecret(SECRET).egressSecret(GIT_SECRET)
        .agentArgument("--egress-test-hosts").agentArgument(HOSTS)
        .agentArgument("--egress-test-trust").agentArgument(trust.toString());
  }

  private static String url(String path) {
    return "https://secret.test:" + upstream.port() + path;
  }

  private static String lastKey() {
    return upstream.last().header("X-Api-Key");
  }

  @Test
  void commandsUseTheSecretThroughTheProxyWithoutEverSeeingIt() throws Exception {
    assumeTrue(has("curl"), "curl is not installed");
    List<Path> before = secretsFiles();
    try (LocalSandbox sandbox = sandbox().start()) {
      assertThat(secretsFiles()).as("the secrets file is deleted once the agent is up").isSubsetOf(before);
      assertThat(commandLine(sandbox.agentPid())).contains("--egress-secrets").doesNotContain(VALUE, TOKEN);

      assertThat(sandbox.exec("printf %s \"$API_KEY\"").stdout()).matches("sandbox-secret-[0-9a-f]{32}");
      ExecResult curl = bash(sandbox, ProxyClients.curl(url("/v1"), "X-Api-Key", "API_KEY"));
      assertThat(curl.stdout()).as("%s: %s", curl, curl.stderr()).isEqualTo("200 " + HelloUpstream.BODY);
      assertThat(lastKey()).isEqualTo(VALUE);

      ExecResult env = sandbox.exec("env");
      assertThat(env.stdout()).contains("API_KEY=sandbox-secret-", "GIT_TOKEN=sandbox-secret-", "SSL_CERT_FILE=")
          .doesNotContain(VALUE, TOKEN);
      ExecResult keyFile = sandbox.exec("printf %s \"$API_KEY\" > key.txt; cat /proc/self/environ"
          + " | tr '\\0' '\\n' | grep -c =sandbox-secret-; grep -c sandbox-secret- key.txt");
      assertThat(keyFile.stdout()).as("the placeholders are where the values are not").isEqualTo("2\n1\n");
      assertNowhereReadable(sandbox);
      try (Stream<Path> files = Files.walk(sandbox.workspace())) {
        for (Path f : files.filter(Files::isRegularFile).toList()) {
          assertThat(Files.readString(f, StandardCharsets.ISO_8859_1)).as("%s", f).doesNotContain(VALUE, TOKEN);
        }
      }

      List<EgressEvent> events = ItEgressAudit.onceAny(sandbox, e -> e.host().equals("secret.test") && e.allowed());
      assertThat(events).filteredOn(e -> e.host().equals("secret.test") && e.allowed())
          .isNotEmpty().allSatisfy(e -> assertThat(e.secrets()).containsExactly("API_KEY"));
      assertThat(events.toString()).doesNotContain(VALUE, TOKEN);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"python3", "node"})
  void pythonAndNodeSendThePlaceholderAndTheUpstreamGetsTheValue(String client) {
    assumeTrue(has(client), client + " is not installed");
    try (LocalSandbox sandbox = sandbox().start()) {
      String script = client.equals("node") ? ProxyClients.node(url("/node"), "X-Api-Key", "API_KEY")
          : ProxyClients.python(url("/py"), "X-Api-Key", "API_KEY");
      ExecResult r = bash(sandbox, script);
      assertThat(r.stdout()).as("%s: %s", r, r.stderr()).isEqualTo("200 " + HelloUpstream.BODY);
      assertThat(upstream.last().target()).isEqualTo(client.equals("node") ? "/node" : "/py");
      assertThat(lastKey()).isEqualTo(VALUE);
      assertNowhereReadable(sandbox);
    }
  }

  @Test
  void gitClonesAPrivateRepositoryWithATokenItNeverSees() {
    // in a header (http.extraHeader) and in the URL (Basic credentials the proxy decodes)
    assumeTrue(has("git"), "git is not installed");
    try (LocalSandbox sandbox = sandbox().start()) {
      String repo = "https://git.test:" + upstream.port() + "/private.git";
      int before = upstream.received().size();
      ExecResult clone = bash(sandbox, ProxyClients.gitClone(repo, "GIT_TOKEN", "repo", "README.md"));
      assertThat(clone.stdout()).as("%s: %s", clone, clone.stderr()).isEqualTo("private readme\n");
      List<SecretUpstream.Received> got = upstream.received().subList(before, upstream.received().size());
      assertThat(got).as("what the git host received").isNotEmpty()
          .anyMatch(r -> r.method().equals("POST") && r.target().equals("/private.git/git-upload-pack"))
          .allSatisfy(r -> assertThat(r.header("Authorization")).isEqualTo("Bearer " + TOKEN));

      before = upstream.received().size();
      ExecResult basic = bash(sandbox, ProxyClients.gitCloneWithUrlCredentials(repo, "GIT_TOKEN", "basic", "README.md"));
      assertThat(basic.stdout()).as("%s: %s", basic, basic.stderr()).isEqualTo("private readme\n");
      String credentials = Base64.getEncoder().encodeToString(("x-access-token:" + TOKEN).getBytes(StandardCharsets.UTF_8));
      assertThat(upstream.received().subList(before, upstream.received().size()))
          .as("the token in the URL, sent as Basic credentials").filteredOn(r -> r.header("Authorization") != null)
          .isNotEmpty().allSatisfy(r -> assertThat(r.header("Authorization")).isEqualTo("Basic " + credentials));
      assertThat(sandbox.exec("cat basic/.git/config").stdout()).as("the clone keeps the placeholder only")
          .contains("x-access-token:sandbox-secret-").doesNotContain(TOKEN);

      ExecResult anonymous = sandbox.exec("GIT_TERMINAL_PROMPT=0 git clone -q " + repo + " anonymous");
      assertThat(anonymous.exitCode()).as("without the token the host refuses: %s", anonymous).isNotZero();
      assertThat(anonymous.stderr()).as("git's answer to a 401").contains("could not read Username");
      assertThat(upstream.last().header("Authorization")).isNull();
      assertNowhereReadable(sandbox);
      assertThat(ItEgressAudit.onceAny(sandbox, e -> e.host().equals("git.test") && e.allowed()))
          .filteredOn(e -> e.host().equals("git.test") && e.allowed())
          .isNotEmpty().anyMatch(e -> e.secrets().equals(List.of("GIT_TOKEN")));
    }
  }

  /** Neither value is in a file of the workspace or the CA directory, an environment, a command line, or memory. */
  private static void assertNowhereReadable(LocalSandbox sandbox) {
    for (String value : List.of(VALUE, TOKEN)) {
      ExecResult search = bash(sandbox, SecretSearch.script(value, "\"$SANDBOX_WORKSPACE\"",
          "\"$(dirname \"$SSL_CERT_FILE\")\""));
      assertThat(search.stdout()).as("%s: %s", search, search.stderr()).contains("files: none\n").doesNotContain("memory: found in");
      if (has("python3")) {
        assertThat(search.stdout()).as("the memory of at least the command's shell was searched")
            .containsPattern("memory: found none \\(scanned [1-9]");
      }
    }
  }

  @Test
  void aPlaceholderSentToAnotherHostIsRefusedAndTheAuditNamesTheSecret() {
    assumeTrue(has("curl"), "curl is not installed");
    try (LocalSandbox sandbox = sandbox().agentArgument("--egress-test-hosts")
        .agentArgument(HOSTS + ",other.test=127.0.0.1").start()) {
      int before = upstream.received().size();
      String out = sandbox.exec("curl -s -m 20 -w ' %{http_code}' -H \"X-Api-Key: $API_KEY\" http://other.test:"
          + upstream.port() + "/").stdout();
      assertThat(out).contains("secret-to-unbound-host (API_KEY)").endsWith(" 403");
      // over TLS to the host of another secret, which the proxy intercepts and so reads
      ExecResult toGitHost = bash(sandbox, ProxyClients.curl("https://git.test:" + upstream.port() + "/leak",
          "X-Api-Key", "API_KEY"));
      assertThat(toGitHost.stdout()).as("%s: %s", toGitHost, toGitHost.stderr())
          .isEqualTo("403 egress denied by secret-to-unbound-host (API_KEY)\n");
      assertThat(upstream.received()).hasSize(before);
      List<EgressEvent> events = ItEgressAudit.once(sandbox, all -> all.stream().map(EgressEvent::host).toList()
          .containsAll(List.of("other.test", "git.test")));
      for (String host : List.of("other.test", "git.test")) {
        assertThat(events).filteredOn(e -> e.host().equals(host)).singleElement().satisfies(e -> {
          assertThat(e.allowed()).isFalse();
          assertThat(e.rule()).isEqualTo("secret-to-unbound-host");
          assertThat(e.secrets()).containsExactly("API_KEY");
        });
      }
      assertThat(events.toString()).doesNotContain(VALUE, TOKEN);
    }
  }

  @Test
  void aFailedStartDeletesTheSecretsFileAndItsMessageHasNoValue() throws Exception {
    List<Path> before = secretsFiles();
    assertThatThrownBy(() -> sandbox().agentArgument("--egress-test-trust").agentArgument("/nonexistent/ca.pem").start())
        .isInstanceOf(SandboxException.class).hasMessageContaining("--egress-test-trust")
        .satisfies(e -> assertThat(e.toString()).doesNotContain(VALUE));
    assertThat(secretsFiles()).isSubsetOf(before);
  }

  @Test
  void theLocalProviderKeepsTheValuesInMemoryAndOnlyItWakesTheSandbox() throws Exception {
    assumeTrue(has("curl"), "curl is not installed");
    Path state = Files.createTempDirectory("egress-secrets-state-");
    SandboxSpec spec = SandboxSpec.builder().name("secrets-1").egressPolicy(POLICY).egressSecret(SECRET)
        .agentArgument("--egress-test-hosts=" + HOSTS).agentArgument("--egress-test-trust=" + trust)
        .build();
    try (LocalProvider provider = LocalProvider.builder().stateDirectory(state).build();
        ManagedSandbox s = provider.create(spec)) {
      String curl = ProxyClients.curl(url("/provider"), "X-Api-Key", "API_KEY");
      assertThat(s.exec(Command.of("bash", "-c", curl), ExecOptions.defaults()).stdout()).isEqualTo("200 " + HelloUpstream.BODY);
      assertThat(lastKey()).isEqualTo(VALUE);
      s.shutdown();
      String record = Files.readString(state.resolve("sandboxes/secrets-1/sandbox.json"));
      assertThat(record.replaceAll("\\s", "")).contains("\"egressSecrets\":[\"API_KEY\"]");
      assertThat(record).doesNotContain(VALUE);

      try (LocalProvider other = LocalProvider.builder().stateDirectory(state).build();
          ManagedSandbox elsewhere = other.get("secrets-1").orElseThrow()) {
        assertThatThrownBy(elsewhere::wake).isInstanceOf(SandboxException.class)
            .hasMessageContaining("created with the egress secrets [API_KEY]").hasMessageNotContaining(VALUE);
      }
      s.wake();
      assertThat(s.exec(Command.of("bash", "-c", curl), ExecOptions.defaults()).stdout()).as("woken by its provider, with the secret").isEqualTo("200 " + HelloUpstream.BODY);
      assertThat(lastKey()).isEqualTo(VALUE);
      s.destroy();
    }
  }

  private static ExecResult bash(Sandbox sandbox, String script) {
    return sandbox.exec(Command.of("bash", "-c", script), ExecOptions.defaults());
  }

  private static List<Path> secretsFiles() throws IOException {
    try (Stream<Path> files = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
      return files.filter(p -> p.getFileName().toString().startsWith("sandbox-egress-secrets-")).toList();
    }
  }

  private static String random(int bytes) {
    byte[] b = new byte[bytes];
    new SecureRandom().nextBytes(b);
    return HexFormat.of().formatHex(b);
  }

  private static String commandLine(long pid) throws IOException {
    return new String(Files.readAllBytes(Path.of("/proc", Long.toString(pid), "cmdline")), StandardCharsets.UTF_8);
  }

  private static boolean has(String program) {
    return Stream.of(System.getenv("PATH").split(":")).anyMatch(d -> Files.isExecutable(Path.of(d, program)));
  }
}
