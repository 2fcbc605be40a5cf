package dev.sandboxsdk;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import dev.sandboxsdk.agent.egress.CertificateAuthority;
import dev.sandboxsdk.local.LocalProvider;
import dev.sandboxsdk.local.LocalSandbox;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A real {@link LocalSandbox} with an egress secret: curl (and python3 where present) send the
 * placeholder, the loopback HTTPS upstream gets the value in the bound header, and nothing the
 * command can read holds the value: not its environment, not {@code /proc/self/environ}, not the
 * workspace. The secrets file is gone once the agent is up, the agent's command line never shows
 * the value, and the audit names the secret. The upstream has a test CA the agent trusts through
 * {@code --egress-test-trust}, and is reached by a test name ({@code --egress-test-hosts}), as in
 * the agent's EgressSecretsAgentIT.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class LocalEgressSecretsIT {
  private static final String VALUE = "sk-live-SDK-0123456789abcdef";
  private static final EgressPolicy POLICY = EgressPolicy.allowList("secret.test", "127.0.0.1/32");
  private static final EgressSecret SECRET = EgressSecret.of("API_KEY", VALUE, "secret.test").withHeader("X-Api-Key");
  private static final List<String> keys = new CopyOnWriteArrayList<>();
  private static HttpsServer upstream;
  private static Path trust;

  @BeforeAll
  static void startUpstream() throws IOException {
    CertificateAuthority ca = CertificateAuthority.create("SDK test upstream CA");
    upstream = HttpsServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 50);
    upstream.setHttpsConfigurator(new HttpsConfigurator(ca.serverContext("secret.test")));
    upstream.createContext("/", ex -> {
      String key = ex.getRequestHeaders().getFirst("X-Api-Key");
      keys.add(key == null ? "" : key);
      byte[] body = "hello from upstream".getBytes(StandardCharsets.UTF_8);
      ex.sendResponseHeaders(200, body.length);
      ex.getResponseBody().write(body);
      ex.close();
    });
    upstream.start();
    trust = Files.createTempFile("sdk-test-upstream-ca-", ".pem");
    Files.writeString(trust, ca.pem());
  }

  @AfterAll
  static void stopUpstream() throws IOException {
    upstream.stop(0);
    Files.deleteIfExists(trust);
  }

  private static LocalSandbox.Builder sandbox() {
    return LocalSandbox.builder().egressPolicy(POLICY).egressSecret(SECRET)
        .agentArgument("--egress-test-hosts").agentArgument("secret.test=127.0.0.1")
        .agentArgument("--egress-test-trust").agentArgument(trust.toString());
  }

  private static String url(String path) {
    return "https://secret.test:" + upstream.getAddress().getPort() + path;
  }

  @Test
  void commandsUseTheSecretThroughTheProxyWithoutEverSeeingIt() throws Exception {
    assumeTrue(has("curl"), "curl is not installed");
    List<Path> before = secretsFiles();
    try (LocalSandbox sandbox = sandbox().start()) {
      assertThat(secretsFiles()).as("the secrets file is deleted once the agent is up").isSubsetOf(before);
      assertThat(commandLine(sandbox.agentPid())).contains("--egress-secrets").doesNotContain(VALUE);

      assertThat(sandbox.exec("printf %s \"$API_KEY\"").stdout()).matches("sandbox-secret-[0-9a-f]{32}");
      ExecResult curl = sandbox.exec("curl -sS -m 20 -H \"X-Api-Key: $API_KEY\" " + url("/v1"));
      assertThat(curl.stdout()).as("%s", curl).isEqualTo("hello from upstream");
      assertThat(keys).last().isEqualTo(VALUE);
      if (sandbox.exec("command -v python3").exitCode() == 0) {
        ExecResult py = sandbox.exec("python3 -c \"import os, urllib.request as u; r = u.Request('" + url("/py")
            + "', headers={'X-Api-Key': os.environ['API_KEY']}); print(u.urlopen(r, timeout=20).read().decode())\"");
        assertThat(py.stdout()).as("%s", py).isEqualTo("hello from upstream\n");
        assertThat(keys).last().isEqualTo(VALUE);
      }

      ExecResult env = sandbox.exec("env");
      assertThat(env.stdout()).contains("API_KEY=sandbox-secret-", "SSL_CERT_FILE=").doesNotContain(VALUE);
      // The value, decoded inside the command only, is in none of the files it can read.
      String v = Base64.getEncoder().encodeToString(VALUE.getBytes(StandardCharsets.US_ASCII));
      ExecResult grep = sandbox.exec("printf %s \"$API_KEY\" > key.txt; V=$(echo " + v + " | base64 -d); "
          + "grep -rlsF -- \"$V\" \"$SANDBOX_WORKSPACE\" /proc/self/environ; echo found=$?; "
          + "grep -c sandbox-secret- /proc/self/environ key.txt");
      assertThat(grep.stdout()).as("%s", grep).contains("found=1", "/proc/self/environ:1", "key.txt:1")
          .doesNotContain(VALUE);
      try (Stream<Path> files = Files.walk(sandbox.workspace())) {
        for (Path f : files.filter(Files::isRegularFile).toList()) {
          assertThat(Files.readString(f, StandardCharsets.ISO_8859_1)).as("%s", f).doesNotContain(VALUE);
        }
      }

      List<EgressEvent> events = sandbox.egress().events(0, 1000).events();
      assertThat(events).filteredOn(e -> e.host().equals("secret.test") && e.allowed())
          .isNotEmpty().allSatisfy(e -> assertThat(e.secrets()).containsExactly("API_KEY"));
      assertThat(events.toString()).doesNotContain(VALUE);
    }
  }

  @Test
  void aPlaceholderSentToAnotherHostIsRefusedAndTheAuditNamesTheSecret() {
    assumeTrue(has("curl"), "curl is not installed");
    try (LocalSandbox sandbox = sandbox().agentArgument("--egress-test-hosts")
        .agentArgument("secret.test=127.0.0.1,other.test=127.0.0.1").start()) {
      int before = keys.size();
      String out = sandbox.exec("curl -s -m 20 -w ' %{http_code}' -H \"X-Api-Key: $API_KEY\" http://other.test:"
          + upstream.getAddress().getPort() + "/").stdout();
      assertThat(out).contains("secret-to-unbound-host (API_KEY)").endsWith(" 403");
      assertThat(keys).hasSize(before);
      assertThat(sandbox.egress().events(0, 1000).events()).filteredOn(e -> e.host().equals("other.test"))
          .singleElement().satisfies(e -> {
            assertThat(e.allowed()).isFalse();
            assertThat(e.rule()).isEqualTo("secret-to-unbound-host");
            assertThat(e.secrets()).containsExactly("API_KEY");
          });
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
        .agentArgument("--egress-test-hosts=secret.test=127.0.0.1").agentArgument("--egress-test-trust=" + trust)
        .build();
    try (LocalProvider provider = LocalProvider.builder().stateDirectory(state).build();
        ManagedSandbox s = provider.create(spec)) {
      String curl = "curl -sS -m 20 -H \"X-Api-Key: $API_KEY\" " + url("/provider");
      assertThat(s.exec(curl).stdout()).isEqualTo("hello from upstream");
      assertThat(keys).last().isEqualTo(VALUE);
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
      assertThat(s.exec(curl).stdout()).as("woken by its provider, with the secret").isEqualTo("hello from upstream");
      assertThat(keys).last().isEqualTo(VALUE);
      s.destroy();
    }
  }

  private static List<Path> secretsFiles() throws IOException {
    try (Stream<Path> files = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
      return files.filter(p -> p.getFileName().toString().startsWith("sandbox-egress-secrets-")).toList();
    }
  }

  private static String commandLine(long pid) throws IOException {
    return new String(Files.readAllBytes(Path.of("/proc", Long.toString(pid), "cmdline")), StandardCharsets.UTF_8);
  }

  private static boolean has(String program) {
    return Stream.of(System.getenv("PATH").split(":")).anyMatch(d -> Files.isExecutable(Path.of(d, program)));
  }
}
