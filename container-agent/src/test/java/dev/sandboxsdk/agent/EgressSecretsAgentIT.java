package dev.sandboxsdk.agent;

import static dev.sandboxsdk.agent.TestAgent.obj;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import dev.sandboxsdk.agent.egress.CertificateAuthority;
import dev.sandboxsdk.agent.egress.EgressPolicy;
import dev.sandboxsdk.agent.egress.SecretsFile;
import dev.sandboxsdk.testkit.Await;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Secrets in a real agent, used by real commands (curl, python3): the upstream gets the value, the
 * command and every file it can read hold only the placeholder, a placeholder to another host is
 * refused naming the secret, other hosts are tunnelled untouched, and hostile clients of the
 * intercepting proxy are cut at its bounds. The upstreams are loopback HTTPS servers with a test CA
 * the agent trusts through {@code egressTestTrust}.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class EgressSecretsAgentIT {
  static final String VALUE = "sk-live-0123456789abcdef";
  static CertificateAuthority upstreamCa;
  static HttpsServer bound;
  static HttpsServer other;
  static HttpServer plain;
  static final List<String> boundKeys = new CopyOnWriteArrayList<>();
  static final List<String> plainKeys = new CopyOnWriteArrayList<>();

  @BeforeAll
  static void startUpstreams() throws Exception {
    upstreamCa = CertificateAuthority.create("Test upstream CA");
    bound = https("secret.test", boundKeys);
    other = https("other.test", new CopyOnWriteArrayList<>());
    plain = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 50);
    serve(plain, plainKeys);
    plain.start();
  }

  static HttpsServer https(String name, List<String> keys) throws IOException {
    HttpsServer s = HttpsServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 50);
    s.setHttpsConfigurator(new HttpsConfigurator(upstreamCa.serverContext(name)));
    serve(s, keys);
    s.start();
    return s;
  }

  static void serve(HttpServer s, List<String> keys) {
    s.createContext("/", ex -> {
      String key = ex.getRequestHeaders().getFirst("X-Api-Key");
      keys.add(key == null ? "" : key);
      byte[] body = "hello from upstream".getBytes(StandardCharsets.UTF_8);
      ex.sendResponseHeaders(200, body.length);
      ex.getResponseBody().write(body);
      ex.close();
    });
  }

  @AfterAll
  static void stopUpstreams() {
    bound.stop(0);
    other.stop(0);
    plain.stop(0);
  }

  static TestAgent agent(String isolation) {
    EgressPolicy policy = EgressPolicy.builder(EgressPolicy.Mode.ALLOW_LIST).allow("secret.test").allow("other.test")
        .allow("plain.test").allow("127.0.0.1/32").build();
    byte[] file = ("[{\"name\":\"API_KEY\",\"value\":\"" + VALUE + "\",\"hosts\":[\"secret.test\"],"
        + "\"header\":\"X-Api-Key\"}]").getBytes(StandardCharsets.UTF_8);
    return TestAgent.start(b -> b.isolation(isolation).egressPolicy(policy)
        .egressTestHosts(Map.of("secret.test", "127.0.0.1", "other.test", "127.0.0.1", "plain.test", "127.0.0.1"))
        .egressSecrets(SecretsFile.parse(file)).egressTestTrust(List.of(upstreamCa.certificate())));
  }

  static JsonNode exec(TestAgent agent, String command) {
    TestAgent.Response r = agent.post("/api/execute", obj("command", command, "timeoutMs", 60_000));
    assertThat(r.status()).as("%s", r.body()).isEqualTo(200);
    return r.body();
  }

  static String out(TestAgent agent, String command) {
    return exec(agent, command).path("stdout").asText();
  }

  static boolean has(TestAgent agent, String program) {
    return exec(agent, "command -v " + program).path("exitCode").asInt() == 0;
  }

  static String url(HttpServer s, String name) {
    return (s instanceof HttpsServer ? "https://" : "http://") + name + ":" + s.getAddress().getPort();
  }

  @Test
  void commandsUseTheSecretWithoutEverSeeingIt() throws Exception {
    try (TestAgent agent = agent("none")) {
      assumeTrue(has(agent, "curl"), "curl is not installed");
      String placeholder = out(agent, "printf %s \"$API_KEY\"");
      assertThat(placeholder).matches("sandbox-secret-[0-9a-f]{32}");
      String env = out(agent, "env");
      assertThat(env).contains("SSL_CERT_FILE=", "NODE_EXTRA_CA_CERTS=", "REQUESTS_CA_BUNDLE=", "CURL_CA_BUNDLE=",
          "GIT_SSL_CAINFO=").doesNotContain(VALUE);

      JsonNode curl = exec(agent, "curl -sS -m 20 -H \"X-Api-Key: $API_KEY\" " + url(bound, "secret.test") + "/v1");
      assertThat(curl.path("stdout").asText()).as("%s", curl).isEqualTo("hello from upstream");
      assertThat(boundKeys).last().isEqualTo(VALUE);

      if (has(agent, "python3")) {
        String py = out(agent, "python3 -c \"import os, urllib.request as u; r = u.Request('" + url(bound, "secret.test")
            + "/py', headers={'X-Api-Key': os.environ['API_KEY']}); print(u.urlopen(r, timeout=20).read().decode())\"");
        assertThat(py).isEqualTo("hello from upstream\n");
        assertThat(boundKeys).last().isEqualTo(VALUE);
      }

      // Everything the command can read holds the placeholder, never the value (which is not in the
      // command line either: it is decoded into an unexported shell variable).
      String v = Base64.getEncoder().encodeToString(VALUE.getBytes(StandardCharsets.US_ASCII));
      JsonNode grep = exec(agent, "printf %s \"$API_KEY\" > key.txt; V=$(echo " + v + " | base64 -d); "
          + "grep -rlsF -- \"$V\" \"$SANDBOX_WORKSPACE\" /proc/self/environ \"$(dirname \"$SSL_CERT_FILE\")\"; "
          + "echo found=$?; grep -c sandbox-secret- /proc/self/environ key.txt");
      assertThat(grep.path("stdout").asText()).as("%s", grep).contains("found=1", "/proc/self/environ:1", "key.txt:1")
          .doesNotContain(VALUE);
      JsonNode events = EgressWiringIT.events(agent, 1);
      assertThat(events.toString()).doesNotContain(VALUE).contains("\"secrets\":[\"API_KEY\"]");
    }
  }

  @Test
  void aPlaceholderToAnotherHostIsRefusedAndOtherHostsAreTunnelledUntouched() throws Exception {
    try (TestAgent agent = agent("none")) {
      assumeTrue(has(agent, "curl"), "curl is not installed");
      String refused = out(agent, "curl -s -m 20 -w ' %{http_code}' -H \"X-Api-Key: $API_KEY\" "
          + url(plain, "plain.test") + "/");
      assertThat(refused).contains("secret-to-unbound-host (API_KEY)").endsWith(" 403");
      assertThat(plainKeys).isEmpty();
      JsonNode event = lastEvent(agent, "plain.test");
      assertThat(event.path("allowed").asBoolean()).isFalse();
      assertThat(event.path("rule").asText()).isEqualTo("secret-to-unbound-host");
      assertThat(event.path("secrets").toString()).isEqualTo("[\"API_KEY\"]");

      Files.writeString(agent.workspace.resolve("test-ca.pem"), upstreamCa.pem());
      String tunnel = out(agent, "curl -sv -m 20 --cacert test-ca.pem " + url(other, "other.test") + "/ 2>&1");
      assertThat(tunnel).as("the upstream's own certificate").contains("issuer: O=Sandbox SDK egress; CN=Test upstream CA")
          .contains("hello from upstream");
      JsonNode ours = exec(agent, "curl -s -m 20 " + url(other, "other.test") + "/");
      assertThat(ours.path("exitCode").asInt()).as("our bundle does not vouch for it: exit 60").isEqualTo(60);
      JsonNode tunnelled = lastEvent(agent, "other.test");
      assertThat(tunnelled.path("allowed").asBoolean()).isTrue();
      assertThat(tunnelled.path("secrets").size()).isZero();
    }
  }

  static JsonNode lastEvent(TestAgent agent, String host) throws InterruptedException {
    return lastEvent(agent, host, e -> true);
  }

  /**
   * The last event for {@code host} that matches, once there is one: the proxy records a
   * connection when it ends, which can be just after the command has its answer.
   */
  static JsonNode lastEvent(TestAgent agent, String host, java.util.function.Predicate<JsonNode> match)
      throws InterruptedException {
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
    JsonNode found = null;
    while (found == null && System.nanoTime() < deadline) {
      for (JsonNode e : agent.get("/api/egress/events?since=0&limit=1000").body().path("events")) {
        if (e.path("host").asText().equals(host) && match.test(e)) {
          found = e;
        }
      }
      if (found == null) {
        Thread.sleep(50);
      }
    }
    assertThat(found).as("an event for %s", host).isNotNull();
    return found;
  }

  @Test
  void hostileClientsAreCutAndTheAgentComesBackToItsBaseline() throws Exception {
    try (TestAgent agent = agent("none")) {
      assumeTrue(has(agent, "curl"), "curl is not installed");
      int proxyPort = URI.create(agent.get("/api/egress/policy").body().path("proxyUrl").asText()).getPort();
      X509Certificate ca = (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(
          Files.newInputStream(Path.of(out(agent, "printf %s \"$SSL_CERT_FILE\"")).resolveSibling("egress-ca.pem")));
      String port = Integer.toString(bound.getAddress().getPort());
      exec(agent, "curl -s -m 20 -H \"X-Api-Key: $API_KEY\" " + url(bound, "secret.test") + "/warm");
      Thread.sleep(1_500); // the proxy's idle pool threads end
      long baseThreads = egressThreads();
      long baseFds = fds();

      long start = System.nanoTime();
      try (Socket s = connect(proxyPort, "secret.test:" + port)) {
        s.getOutputStream().write(new byte[] {0x16, 0x03, 0x01}); // a ClientHello begun, never finished
        s.getOutputStream().flush();
        long ping = System.nanoTime();
        assertThat(agent.get("/api/ping").status()).as("the API answers meanwhile").isEqualTo(200);
        assertThat((System.nanoTime() - ping) / 1_000_000).isLessThan(5_000);
        assertThat(s.getInputStream().read()).isEqualTo(-1);
      }
      long millis = (System.nanoTime() - start) / 1_000_000;
      assertThat(millis).as("cut at the 10 s handshake deadline").isBetween(9_800L, 20_000L);
      assertThat(lastEvent(agent, "secret.test", e -> e.path("outcome").asText().equals("handshake-timeout")))
          .as("the connection is recorded as cut at the handshake deadline").isNotNull();

      try (Socket raw = connect(proxyPort, "secret.test:" + port);
          SSLSocket tls = (SSLSocket) trusting(ca).getSocketFactory().createSocket(raw, "secret.test",
              bound.getAddress().getPort(), true)) {
        tls.getOutputStream().write(("GET / HTTP/1.1\r\nHost: secret.test:" + port + "\r\nX-Pad: " + "a".repeat(20_000)
            + "\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
        tls.getOutputStream().flush();
        String answer = new String(tls.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
        assertThat(answer).startsWith("HTTP/1.1 431");
      }
      assertThat(Await.until(20_000, () -> egressThreads() <= baseThreads && fds() <= baseFds))
          .as("back to %d egress threads and %d fds, now %d and %d", baseThreads, baseFds, egressThreads(), fds())
          .isTrue();
    }
    assertThat(egressThreads()).as("none left after the agent stopped").isZero();
  }

  static Socket connect(int proxyPort, String authority) throws IOException {
    Socket s = new Socket(InetAddress.getLoopbackAddress(), proxyPort);
    s.setSoTimeout(30_000);
    s.getOutputStream().write(("CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n")
        .getBytes(StandardCharsets.ISO_8859_1));
    InputStream in = s.getInputStream();
    StringBuilder head = new StringBuilder();
    while (!head.toString().endsWith("\r\n\r\n")) {
      int c = in.read();
      assertThat(c).isNotNegative();
      head.append((char) c);
    }
    assertThat(head.toString()).startsWith("HTTP/1.1 200");
    return s;
  }

  static SSLContext trusting(X509Certificate ca) throws Exception {
    KeyStore store = KeyStore.getInstance("PKCS12");
    store.load(null, null);
    store.setCertificateEntry("ca", ca);
    TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    tmf.init(store);
    SSLContext c = SSLContext.getInstance("TLS");
    c.init(null, tmf.getTrustManagers(), null);
    return c;
  }

  static long egressThreads() {
    return Thread.getAllStackTraces().keySet().stream().filter(t -> t.isAlive() && t.getName().startsWith("egress-"))
        .count();
  }

  static long fds() {
    String[] names = new File("/proc/self/fd").list();
    return names == null ? 0 : names.length;
  }

  /** Isolated: the CA bundle is bound into the sandbox, and the proxy is the one way out. */
  @Test
  void isolatedCommandsUseTheSecretThroughTheRelay() throws Exception {
    TestAgent agent;
    try {
      agent = agent("bwrap");
    } catch (RuntimeException e) {
      assumeTrue(false, "bwrap cannot run here: " + e.getMessage());
      return;
    }
    try (agent) {
      assumeTrue(has(agent, "curl"), "curl is not installed");
      JsonNode curl = exec(agent, "curl -sS -m 20 -H \"X-Api-Key: $API_KEY\" " + url(bound, "secret.test") + "/iso");
      assertThat(curl.path("stdout").asText()).as("%s", curl).isEqualTo("hello from upstream");
      assertThat(boundKeys).last().isEqualTo(VALUE);
      JsonNode write = exec(agent, "echo x > \"$SSL_CERT_FILE\"");
      assertThat(write.path("exitCode").asInt()).as("the bundle is read-only").isNotZero();
    }
  }
}
