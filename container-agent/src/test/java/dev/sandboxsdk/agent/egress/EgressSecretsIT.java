package dev.sandboxsdk.agent.egress;

import static dev.sandboxsdk.agent.egress.EgressFixtures.fds;
import static dev.sandboxsdk.agent.egress.EgressFixtures.readAll;
import static dev.sandboxsdk.agent.egress.EgressFixtures.readHead;
import static dev.sandboxsdk.agent.egress.EgressFixtures.send;
import static dev.sandboxsdk.agent.egress.EgressFixtures.threads;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sandboxsdk.testkit.Await;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Secrets through a real proxy: HTTPS to a bound host is intercepted and the placeholder replaced
 * in the bound header; a placeholder anywhere else is refused naming the secret; other hosts are
 * tunnelled untouched; the proxy's own TLS verifies the upstream; hostile clients are cut at the
 * tunnel's deadlines, and threads and descriptors come back to what they were.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class EgressSecretsIT {
  private static final Duration HANDSHAKE = Duration.ofSeconds(2);
  static final String VALUE = "real-value-7f3a";

  CertificateAuthority upstreamCa;
  EgressFixtures.HttpUpstream bound;
  EgressFixtures.HttpUpstream other;
  EgressFixtures.HttpUpstream plain;
  EgressSecrets secrets;
  EgressProxy proxy;

  @BeforeEach
  void start() throws Exception {
    upstreamCa = CertificateAuthority.create("Test upstream CA");
    bound = new EgressFixtures.HttpUpstream(upstreamCa.serverContext("secret.test").getServerSocketFactory()
        .createServerSocket(0, 50, InetAddress.getLoopbackAddress()));
    other = new EgressFixtures.HttpUpstream(upstreamCa.serverContext("other.test").getServerSocketFactory()
        .createServerSocket(0, 50, InetAddress.getLoopbackAddress()));
    plain = new EgressFixtures.HttpUpstream();
    secrets = SecretsFile.parse(("[{\"name\":\"API_KEY\",\"value\":\"" + VALUE + "\",\"hosts\":[\"secret.test\"],"
        + "\"header\":\"x-api-key\"}]").getBytes(StandardCharsets.UTF_8));
    proxy = proxy(EgressTrust.systemAnd(List.of(upstreamCa.certificate())));
  }

  EgressProxy proxy(EgressTrust trust) throws IOException {
    EgressPolicy policy = EgressPolicy.builder(EgressPolicy.Mode.ALLOW_LIST).allow("secret.test")
        .allow("other.test").allow("allowed.test").allow("127.0.0.1/32").build();
    return EgressProxy.builder().policy(policy).resolver(new EgressFixtures.Resolver()).secrets(secrets).trust(trust)
        .limits(EgressLimits.defaults().withHandshakeTimeout(HANDSHAKE)).start();
  }

  @AfterEach
  void stop() throws IOException {
    proxy.close();
    bound.close();
    other.close();
    plain.close();
  }

  String placeholder() {
    return secrets.placeholders().get("API_KEY");
  }

  /** A TLS client through a CONNECT, trusting {@code ca}, offering {@code alpn}. */
  static SSLSocket through(EgressProxy proxy, String host, int port, X509Certificate ca, String... alpn)
      throws Exception {
    Socket s = send(proxy, "CONNECT " + host + ":" + port + " HTTP/1.1\r\nHost: " + host + ":" + port + "\r\n\r\n");
    String head = readHead(s.getInputStream());
    assertThat(head).startsWith("HTTP/1.1 200");
    SSLSocket tls = (SSLSocket) trusting(ca).getSocketFactory().createSocket(s, host, port, true);
    SSLParameters p = tls.getSSLParameters();
    p.setEndpointIdentificationAlgorithm("HTTPS");
    if (alpn.length > 0) {
      p.setApplicationProtocols(alpn);
    }
    tls.setSSLParameters(p);
    tls.startHandshake();
    return tls;
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

  static String exchange(Socket s, String request) throws IOException {
    s.getOutputStream().write(request.getBytes(StandardCharsets.ISO_8859_1));
    s.getOutputStream().flush();
    InputStream in = s.getInputStream();
    return new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
  }

  EgressEvent lastEvent() throws InterruptedException {
    assertThat(Await.until(10_000, () -> proxy.liveConnections() == 0)).isTrue();
    List<EgressEvent> all = proxy.audit().since(0);
    return all.get(all.size() - 1);
  }

  @Test
  void theBoundHeaderReachesTheBoundHostWithTheRealValue() throws Exception {
    String host = "secret.test:" + bound.port();
    try (SSLSocket tls = through(proxy, "secret.test", bound.port(), proxy.authority().certificate(), "h2",
        "http/1.1")) {
      assertThat(tls.getApplicationProtocol()).as("ALPN: http/1.1 only").isEqualTo("http/1.1");
      X509Certificate seen = (X509Certificate) tls.getSession().getPeerCertificates()[0];
      assertThat(seen.getIssuerX500Principal()).isEqualTo(proxy.authority().certificate().getSubjectX500Principal());
      String answer = exchange(tls, "POST /v1/messages?q=1 HTTP/1.1\r\nHost: " + host + "\r\nX-Api-Key: "
          + placeholder() + "\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\r\nhello");
      assertThat(answer).startsWith("HTTP/1.1 200").contains("hello POST /v1/messages?q=1 HTTP/1.1")
          .contains("body=hello").doesNotContain(VALUE);
    }
    String head = bound.heads.get(bound.heads.size() - 1);
    assertThat(head).as("the client's connection header is its own: the proxy keeps its connection to the server")
        .contains("X-Api-Key: " + VALUE + "\r\n").doesNotContain(placeholder()).doesNotContainIgnoringCase("connection:");
    EgressEvent e = lastEvent();
    assertThat(e.host()).isEqualTo("secret.test");
    assertThat(e.allowed()).isTrue();
    assertThat(e.secrets()).containsExactly("API_KEY");
    assertThat(e.outcome()).isEqualTo("closed");
    assertThat(e.toString()).doesNotContain(VALUE);
  }

  @Test
  void aPlaceholderAnywhereElseIsRefusedNamingTheSecret() throws Exception {
    try (Socket s = send(proxy, "GET http://allowed.test:" + plain.port() + "/ HTTP/1.1\r\nHost: allowed.test:"
        + plain.port() + "\r\nX-Api-Key: " + placeholder() + "\r\n\r\n")) {
      assertThat(readAll(s)).startsWith("HTTP/1.1 403").contains("secret-to-unbound-host");
    }
    EgressEvent e = lastEvent();
    assertThat(e.allowed()).isFalse();
    assertThat(e.rule()).isEqualTo(EgressSecrets.UNBOUND_HOST);
    assertThat(e.secrets()).containsExactly("API_KEY");
    assertThat(plain.heads).isEmpty();

    try (SSLSocket tls = through(proxy, "secret.test", bound.port(), proxy.authority().certificate())) {
      String answer = exchange(tls, "GET / HTTP/1.1\r\nHost: secret.test:" + bound.port() + "\r\nAuthorization: Bearer "
          + placeholder() + "\r\n\r\n");
      assertThat(answer).startsWith("HTTP/1.1 403").contains("secret-outside-bound-header (API_KEY)");
    }
    e = lastEvent();
    assertThat(e.rule()).isEqualTo(EgressSecrets.UNBOUND_HEADER);
    assertThat(e.secrets()).containsExactly("API_KEY");
    assertThat(bound.heads).as("nothing reached the upstream").isEmpty();
  }

  @Test
  void otherHostsAreTunnelledUntouched() throws Exception {
    try (SSLSocket tls = through(proxy, "other.test", other.port(), upstreamCa.certificate())) {
      X509Certificate seen = (X509Certificate) tls.getSession().getPeerCertificates()[0];
      assertThat(seen.getIssuerX500Principal()).as("the upstream's own certificate")
          .isEqualTo(upstreamCa.certificate().getSubjectX500Principal());
      String answer = exchange(tls, "GET /x HTTP/1.1\r\nHost: other.test\r\nX-Api-Key: " + placeholder() + "\r\n\r\n");
      assertThat(answer).startsWith("HTTP/1.1 200");
    }
    assertThat(other.heads.get(0)).as("a tunnel is never read").contains(placeholder());
    EgressEvent e = lastEvent();
    assertThat(e.allowed()).isTrue();
    assertThat(e.secrets()).isEmpty();
  }

  @Test
  void anInterceptedClientNamingAnotherServerIsRefused() throws Exception {
    Socket s = send(proxy, "CONNECT secret.test:" + bound.port() + " HTTP/1.1\r\nHost: secret.test\r\n\r\n");
    assertThat(readHead(s.getInputStream())).startsWith("HTTP/1.1 200");
    try (SSLSocket tls = (SSLSocket) trusting(proxy.authority().certificate()).getSocketFactory().createSocket(s,
        "other.test", bound.port(), true)) {
      tls.startHandshake(); // no name check here: the proxy's certificate names secret.test
      assertThat(exchange(tls, "GET / HTTP/1.1\r\nHost: secret.test\r\n\r\n")).isEmpty();
    } catch (IOException e) {
      // closed by the proxy
    }
    EgressEvent e = lastEvent();
    assertThat(e.rule()).isEqualTo(Decision.SNI_MISMATCH);
    assertThat(e.allowed()).isFalse();
    assertThat(bound.heads).isEmpty();
  }

  @Test
  void anUpstreamTheProxyDoesNotTrustGetsNoRequest() throws Exception {
    proxy.close();
    proxy = proxy(EgressTrust.system());
    try (SSLSocket tls = through(proxy, "secret.test", bound.port(), proxy.authority().certificate())) {
      String answer = exchange(tls, "GET / HTTP/1.1\r\nHost: secret.test:" + bound.port() + "\r\nX-Api-Key: "
          + placeholder() + "\r\n\r\n");
      assertThat(answer).startsWith("HTTP/1.1 502");
    }
    assertThat(lastEvent().outcome()).isEqualTo("connect-failed");
    assertThat(bound.heads).isEmpty();
  }

  @Test
  void hostileClientsAreCutAtTheTunnelsBoundsAndLeaveNothingBehind() throws Exception {
    try (SSLSocket warm = through(proxy, "secret.test", bound.port(), proxy.authority().certificate())) {
      exchange(warm, "GET / HTTP/1.1\r\nHost: secret.test:" + bound.port() + "\r\n\r\n");
    }
    assertThat(Await.until(10_000, () -> proxy.liveConnections() == 0)).isTrue();
    Thread.sleep(1_500);
    int baseThreads = threads();
    long baseFds = fds();

    long start = System.nanoTime();
    try (Socket s = send(proxy, "CONNECT secret.test:" + bound.port() + " HTTP/1.1\r\nHost: secret.test\r\n\r\n")) {
      assertThat(readHead(s.getInputStream())).startsWith("HTTP/1.1 200");
      s.getOutputStream().write(new byte[] {0x16, 0x03, 0x01}); // a ClientHello begun, never finished
      s.getOutputStream().flush();
      assertThat(s.getInputStream().read()).isEqualTo(-1);
    }
    long millis = (System.nanoTime() - start) / 1_000_000;
    assertThat(millis).isBetween(HANDSHAKE.toMillis() - 200, HANDSHAKE.toMillis() + 8_000);
    assertThat(lastEvent().outcome()).isEqualTo("handshake-timeout");

    try (SSLSocket tls = through(proxy, "secret.test", bound.port(), proxy.authority().certificate())) {
      String answer = exchange(tls, "GET / HTTP/1.1\r\nHost: secret.test\r\nX-Pad: " + "a".repeat(20_000)
          + "\r\n\r\n");
      assertThat(answer).startsWith("HTTP/1.1 431");
    }
    assertThat(lastEvent().rule()).isEqualTo("request-head-too-large");
    int served = bound.heads.size();
    assertThat(served).isEqualTo(1);

    boolean back = Await.until(20_000, () -> proxy.liveConnections() == 0 && threads() <= baseThreads
        && fds() <= baseFds);
    assertThat(back).as("back to %d threads and %d fds, now %d and %d", baseThreads, baseFds, threads(), fds())
        .isTrue();
  }
}
