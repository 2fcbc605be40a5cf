package dev.sandboxsdk.agent.egress;

import static dev.sandboxsdk.agent.egress.EgressFixtures.readAll;
import static dev.sandboxsdk.agent.egress.EgressFixtures.readHead;
import static dev.sandboxsdk.agent.egress.EgressFixtures.send;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandboxsdk.testkit.Await;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ProxySelector;
import java.net.Socket;
import java.net.StandardProtocolFamily;
import java.net.URI;
import java.net.UnixDomainSocketAddress;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.function.Predicate;
import javax.net.ssl.SNIHostName;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The proxy against real loopback upstreams (HTTP and TLS), reached through test names. */
class EgressProxyIT {
  @TempDir
  static Path dir;
  static EgressFixtures.Tls tls;
  static EgressFixtures.HttpUpstream http;
  static EgressFixtures.TlsUpstream tlsUpstream;

  EgressFixtures.Resolver resolver;
  EgressProxy proxy;

  @BeforeAll
  static void upstreams() throws Exception {
    tls = new EgressFixtures.Tls();
    http = new EgressFixtures.HttpUpstream();
    tlsUpstream = new EgressFixtures.TlsUpstream(tls.server);
  }

  @AfterAll
  static void stopUpstreams() throws IOException {
    http.close();
    tlsUpstream.close();
  }

  @BeforeEach
  void start() throws IOException {
    resolver = new EgressFixtures.Resolver();
    proxy = EgressProxy.builder().policy(EgressFixtures.policy()).resolver(resolver)
        .limits(EgressLimits.defaults().withHandshakeTimeout(Duration.ofSeconds(3))).start();
  }

  @AfterEach
  void stop() {
    proxy.close();
  }

  private EgressEvent awaitEvent(String host) throws InterruptedException {
    return awaitEvent(e -> e.host().equals(host));
  }

  private EgressEvent awaitEvent(Predicate<EgressEvent> match) throws InterruptedException {
    assertThat(Await.until(15_000, () -> proxy.audit().since(0).stream().anyMatch(match)))
        .as("an event matching in %s", proxy.audit().since(0)).isTrue();
    return proxy.audit().since(0).stream().filter(match).reduce((a, b) -> b).orElseThrow();
  }

  @Test
  void tunnelsAnAllowedConnect() throws Exception {
    String request = "GET /through HTTP/1.1\r\nHost: allowed.test\r\n\r\n";
    String answer;
    try (Socket s = send(proxy, "CONNECT allowed.test:" + http.port() + " HTTP/1.1\r\nHost: allowed.test:"
        + http.port() + "\r\n\r\n")) {
      assertThat(readHead(s.getInputStream())).startsWith("HTTP/1.1 200 Connection established\r\n");
      s.getOutputStream().write(request.getBytes(StandardCharsets.ISO_8859_1));
      answer = readAll(s);
    }
    assertThat(answer).startsWith("HTTP/1.1 200 OK").endsWith("hello GET /through HTTP/1.1 host=allowed.test"
        + " connection= body=");
    EgressEvent e = awaitEvent("allowed.test");
    assertThat(e.allowed()).isTrue();
    assertThat(e.rule()).isEqualTo("allow 127.0.0.1/32");
    assertThat(e.address()).isEqualTo("127.0.0.1");
    assertThat(e.port()).isEqualTo(http.port());
    assertThat(e.bytesUp()).isEqualTo(request.length());
    assertThat(e.bytesDown()).isEqualTo(answer.length());
    assertThat(e.outcome()).isEqualTo("closed");
    assertThat(e.closedAt()).isAfterOrEqualTo(e.time());
    assertThat(resolver.lookups).containsEntry("allowed.test", 1);
  }

  @Test
  void forwardsAnAbsoluteFormRequestInOriginForm() throws Exception {
    String answer;
    try (Socket s = send(proxy, "POST http://allowed.test:" + http.port() + "/p?q=1 HTTP/1.1\r\nHost: Allowed.Test:"
        + http.port() + "\r\nProxy-Connection: keep-alive\r\nProxy-Authorization: Basic eDp5\r\n"
        + "Content-Length: 5\r\n\r\nhello")) {
      answer = readAll(s);
    }
    assertThat(answer).startsWith("HTTP/1.1 200 OK")
        .endsWith("hello POST /p?q=1 HTTP/1.1 host=Allowed.Test:" + http.port() + " connection=close body=hello");
    assertThat(http.heads.get(http.heads.size() - 1)).doesNotContainIgnoringCase("proxy-");
    EgressEvent e = awaitEvent("allowed.test");
    assertThat(e.allowed()).isTrue();
    assertThat(e.bytesDown()).isEqualTo(answer.length());
    assertThat(e.bytesUp()).isGreaterThan(5);
  }

  @Test
  void aChunkedBodyIsRelayedUntilTheAnswerEnds() throws Exception {
    try (Socket s = send(proxy, "POST http://allowed.test:" + http.port() + "/c HTTP/1.1\r\nHost: allowed.test:"
        + http.port() + "\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")) {
      assertThat(readAll(s)).startsWith("HTTP/1.1 200 OK").contains("hello POST /c HTTP/1.1");
    }
    EgressEvent e = awaitEvent("allowed.test");
    assertThat(e.outcome()).isEqualTo("closed");
    assertThat(http.heads.get(http.heads.size() - 1)).containsIgnoringCase("transfer-encoding: chunked");
  }

  @Test
  void aJdkHttpClientGoesThroughTheProxy() throws Exception {
    HttpClient client = HttpClient.newBuilder()
        .proxy(ProxySelector.of(new InetSocketAddress("127.0.0.1", proxy.port()))).build();
    HttpResponse<String> ok = client.send(HttpRequest.newBuilder(URI.create("http://allowed.test:" + http.port()
        + "/jdk")).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(ok.statusCode()).isEqualTo(200);
    assertThat(ok.body()).startsWith("hello GET /jdk HTTP/1.1");
    HttpResponse<String> denied = client.send(HttpRequest.newBuilder(URI.create("http://denied.test:" + http.port()
        + "/")).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(denied.statusCode()).isEqualTo(403);
    assertThat(denied.body()).isEqualTo("egress denied by deny denied.test\n");
  }

  private SSLSocket tlsThrough(String connectHost, String sni) throws IOException {
    Socket s = send(proxy, "CONNECT " + connectHost + ":" + tlsUpstream.port() + " HTTP/1.1\r\n\r\n");
    assertThat(readHead(s.getInputStream())).startsWith("HTTP/1.1 200");
    SSLSocket ssl = (SSLSocket) tls.client.getSocketFactory().createSocket(s, sni, tlsUpstream.port(), true);
    SSLParameters params = ssl.getSSLParameters();
    params.setServerNames(List.of(new SNIHostName(sni)));
    params.setEndpointIdentificationAlgorithm("HTTPS");
    ssl.setSSLParameters(params);
    return ssl;
  }

  @Test
  void tunnelsTlsWhoseServerNameIsTheConnectHost() throws Exception {
    try (SSLSocket ssl = tlsThrough("tls.test.", "TLS.test")) {
      ssl.startHandshake();
      ssl.getOutputStream().write("ping\n".getBytes(StandardCharsets.UTF_8));
      ssl.getOutputStream().flush();
      assertThat(new String(ssl.getInputStream().readAllBytes(), StandardCharsets.UTF_8)).isEqualTo("tls-hello ping\n");
    }
    EgressEvent e = awaitEvent("tls.test");
    assertThat(e.allowed()).isTrue();
    assertThat(e.bytesUp()).isPositive();
    assertThat(e.bytesDown()).isPositive();
  }

  @Test
  void refusesTlsWhoseServerNameIsAnotherHost() throws Exception {
    try (SSLSocket ssl = tlsThrough("tls.test", "other.test")) {
      assertThatThrownBy(ssl::startHandshake).isInstanceOf(IOException.class);
    }
    EgressEvent e = awaitEvent("tls.test");
    assertThat(e.allowed()).isFalse();
    assertThat(e.rule()).isEqualTo(Decision.SNI_MISMATCH);
    assertThat(e.bytesUp()).as("nothing reached the server").isZero();
  }

  @Test
  void refusesDeniedHostsWithTheRuleThatDecided() throws Exception {
    try (Socket s = send(proxy, "CONNECT denied.test:443 HTTP/1.1\r\n\r\n")) {
      assertThat(readAll(s)).startsWith("HTTP/1.1 403 Forbidden\r\n").endsWith("egress denied by deny denied.test\n");
    }
    try (Socket s = send(proxy, "CONNECT public.test:443 HTTP/1.1\r\n\r\n")) {
      assertThat(readAll(s)).startsWith("HTTP/1.1 403").endsWith("egress denied by no-rule\n");
    }
    try (Socket s = send(proxy, "GET http://loopback2.test:" + http.port() + "/ HTTP/1.1\r\nHost: loopback2.test:"
        + http.port() + "\r\n\r\n")) {
      assertThat(readAll(s)).startsWith("HTTP/1.1 403").endsWith("egress denied by private-address\n");
    }
    try (Socket s = send(proxy, "CONNECT nowhere.test:443 HTTP/1.1\r\n\r\n")) {
      assertThat(readAll(s)).startsWith("HTTP/1.1 502").endsWith("egress refused by unresolvable\n");
    }
    EgressEvent denied = awaitEvent("denied.test");
    assertThat(denied.allowed()).isFalse();
    assertThat(denied.rule()).isEqualTo("deny denied.test");
    assertThat(denied.outcome()).isEqualTo("refused");
    assertThat(awaitEvent("loopback2.test").address()).isEqualTo("127.0.0.2");
    assertThat(resolver.lookups).doesNotContainKey("denied.test"); // refused before any lookup
  }

  @Test
  void aNameResolvingToLoopbackOrMetadataIsRefusedUnlessAnAddressRuleAllowsIt() throws Exception {
    proxy.update(EgressFixtures.withoutLoopback());
    for (String host : List.of("allowed.test", "meta.test", "2130706433", "0x7f.1", "0177.0.0.1", "[::ffff:127.0.0.1]")) {
      try (Socket s = send(proxy, "CONNECT " + host + ":" + http.port() + " HTTP/1.1\r\n\r\n")) {
        assertThat(readAll(s)).as(host).startsWith("HTTP/1.1 403").endsWith("egress denied by private-address\n");
      }
    }
    assertThat(awaitEvent("127.0.0.1").rule()).isEqualTo(Decision.PRIVATE_ADDRESS); // the odd literals' address
    assertThat(awaitEvent("meta.test").address()).isEqualTo("169.254.169.254");
    // the update back applies to the very next connection
    proxy.update(EgressFixtures.policy());
    try (Socket s = send(proxy, "CONNECT allowed.test:" + http.port() + " HTTP/1.1\r\n\r\n")) {
      assertThat(readHead(s.getInputStream())).startsWith("HTTP/1.1 200");
    }
    proxy.update(EgressPolicy.off());
    try (Socket s = send(proxy, "CONNECT allowed.test:" + http.port() + " HTTP/1.1\r\n\r\n")) {
      assertThat(readAll(s)).endsWith("egress denied by mode-off\n");
    }
  }

  @Test
  void answersMalformedAndMismatchedRequestsWith400() throws Exception {
    for (String bad : List.of("HELLO\r\n\r\n", "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
        "GET https://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "CONNECT allowed.test HTTP/1.1\r\n\r\n",
        "CONNECT allowed.test:99999 HTTP/1.1\r\n\r\n", "GET http://allowed.test/ HTTP/1.1\r\n\r\n",
        "GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n folded\r\n\r\n",
        "GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        "GET http://u@allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n")) {
      try (Socket s = send(proxy, bad)) {
        assertThat(readAll(s)).as(bad).startsWith("HTTP/1.1 400 Bad Request\r\n");
      }
    }
    try (Socket s = send(proxy, "GET http://allowed.test:" + http.port() + "/ HTTP/1.1\r\nHost: denied.test\r\n\r\n")) {
      assertThat(readAll(s)).startsWith("HTTP/1.1 400").endsWith("egress refused by host-mismatch\n");
    }
    EgressEvent mismatch = awaitEvent(e -> e.port() == http.port());
    assertThat(mismatch.rule()).isEqualTo(Decision.HOST_MISMATCH);
    assertThat(mismatch.allowed()).isFalse();
    assertThat(http.heads).noneMatch(h -> h.contains("denied.test"));
  }

  @Test
  void servesAUnixDomainServerChannel() throws Exception {
    proxy.close();
    Path socket = dir.resolve("egress.sock");
    ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
    server.bind(UnixDomainSocketAddress.of(socket));
    proxy = EgressProxy.builder().policy(EgressFixtures.policy()).resolver(resolver).start(server);
    assertThat(proxy.port()).isEqualTo(-1);
    try (SocketChannel ch = SocketChannel.open(UnixDomainSocketAddress.of(socket))) {
      ch.write(ByteBuffer.wrap(("GET http://allowed.test:" + http.port() + "/unix HTTP/1.1\r\nHost: allowed.test:"
          + http.port() + "\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1)));
      ByteBuffer buf = ByteBuffer.allocate(4096);
      StringBuilder sb = new StringBuilder();
      while (ch.read(buf) >= 0) {
        sb.append(new String(buf.array(), 0, buf.position(), StandardCharsets.ISO_8859_1));
        buf.clear();
      }
      assertThat(sb.toString()).startsWith("HTTP/1.1 200").contains("hello GET /unix");
    }
  }

  @Test
  void closeEndsLiveTunnelsAndLeavesNoThread() throws Exception {
    Socket held = send(proxy, "CONNECT allowed.test:" + http.port() + " HTTP/1.1\r\n\r\n");
    assertThat(readHead(held.getInputStream())).startsWith("HTTP/1.1 200");
    assertThat(proxy.liveConnections()).isEqualTo(1);
    int port = proxy.port();
    proxy.close();
    assertThat(held.getInputStream().read()).isEqualTo(-1);
    held.close();
    assertThat(awaitEvent("allowed.test").outcome()).isEqualTo("proxy-closed");
    assertThat(Await.until(10_000, () -> Thread.getAllStackTraces().keySet().stream()
        .noneMatch(t -> t.getName().startsWith("egress-")))).as("no egress thread left").isTrue();
    assertThatThrownBy(() -> new Socket("127.0.0.1", port).close()).isInstanceOf(IOException.class);
  }
}
