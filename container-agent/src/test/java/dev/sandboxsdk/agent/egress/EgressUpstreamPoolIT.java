package dev.sandboxsdk.agent.egress;

import static dev.sandboxsdk.agent.egress.EgressFixtures.readHead;
import static dev.sandboxsdk.agent.egress.EgressSecretsIT.exchange;
import static dev.sandboxsdk.agent.egress.EgressSecretsIT.through;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sandboxsdk.testkit.Await;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The proxy keeps its TLS connection to an intercepted server for the next request to it: one
 * server connection carries the requests of many client connections, each with the real value,
 * each answer whole and marked {@code Connection: close} to its client; a server that asks to close,
 * or closes while the connection is idle, gets a new connection; idle ones expire and close with the
 * proxy. The server is a keep-alive HTTPS server of the test's that counts its connections.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class EgressUpstreamPoolIT {
  private static final String VALUE = "sk-pool-0123456789";
  private CertificateAuthority upstreamCa;
  private KeepAliveServer server;
  private EgressSecrets secrets;
  private EgressProxy proxy;

  /**
   * Answers by path: /keep (length), /chunked, /close (asks to close), /drop (closes 100 ms after),
   * /chatty (writes an unasked answer 100 ms after).
   */
  static final class KeepAliveServer implements AutoCloseable {
    final ServerSocket socket;
    final AtomicInteger connections = new AtomicInteger();
    final AtomicInteger closedByPeer = new AtomicInteger();
    /** Unasked answers written (by /chatty). */
    final AtomicInteger unasked = new AtomicInteger();
    final List<String> keys = new CopyOnWriteArrayList<>();

    KeepAliveServer(ServerSocket socket) {
      this.socket = socket;
      EgressFixtures.serveEach(socket, "keep-alive-upstream", this::serve);
    }

    int port() {
      return socket.getLocalPort();
    }

    private void serve(Socket s) {
      connections.incrementAndGet();
      try (s) {
        InputStream in = s.getInputStream();
        OutputStream out = s.getOutputStream();
        int n = 0;
        String head;
        while ((head = readHead(in)) != null) {
          n++;
          for (String line : head.split("\r\n")) {
            if (line.toLowerCase(java.util.Locale.ROOT).startsWith("x-api-key:")) {
              keys.add(line.substring(10).strip());
            }
          }
          String path = head.substring(head.indexOf(' ') + 1, head.indexOf(" HTTP/"));
          String body = "answer " + n + " on connection " + connections.get();
          String answer = switch (path) {
            case "/chunked" -> "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                + Integer.toHexString(body.length()) + "\r\n" + body + "\r\n0\r\n\r\n";
            case "/close" -> "HTTP/1.1 200 OK\r\nContent-Length: " + body.length() + "\r\nConnection: close\r\n\r\n" + body;
            default -> "HTTP/1.1 200 OK\r\nContent-Length: " + body.length() + "\r\nConnection: keep-alive\r\n\r\n" + body;
          };
          out.write(answer.getBytes(StandardCharsets.ISO_8859_1));
          out.flush();
          if (path.equals("/close")) {
            return;
          }
          if (path.equals("/drop")) {
            Thread.sleep(100);
            return;
          }
          if (path.equals("/chatty")) { // an answer nobody asked for, written while the connection is idle
            Thread.sleep(100);
            out.write("HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nunasked!".getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            unasked.incrementAndGet();
          }
        }
        closedByPeer.incrementAndGet();
      } catch (IOException e) {
        closedByPeer.incrementAndGet(); // closed without close_notify
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }

    @Override
    public void close() throws IOException {
      socket.close();
    }
  }

  @BeforeEach
  void start() throws Exception {
    upstreamCa = CertificateAuthority.create("Pool test upstream CA");
    server = new KeepAliveServer(upstreamCa.serverContext("secret.test").getServerSocketFactory()
        .createServerSocket(0, 50, InetAddress.getLoopbackAddress()));
    secrets = SecretsFile.parse(("[{\"name\":\"API_KEY\",\"value\":\"" + VALUE + "\",\"hosts\":[\"secret.test\"],"
        + "\"header\":\"x-api-key\"}]").getBytes(StandardCharsets.UTF_8));
    EgressPolicy policy = EgressPolicy.builder(EgressPolicy.Mode.ALLOW_LIST).allow("secret.test")
        .allow("127.0.0.1/32").build();
    proxy = EgressProxy.builder().policy(policy).resolver(new EgressFixtures.Resolver()).secrets(secrets)
        .trust(EgressTrust.systemAnd(List.of(upstreamCa.certificate()))).start();
  }

  @AfterEach
  void stop() throws IOException {
    proxy.close();
    server.close();
  }

  /**
   * One request on a new client connection; returns once the proxy has ended that connection, so
   * its server connection is back in the pool (the client has its answer a moment before that).
   */
  private String get(String path) throws Exception {
    String answer;
    try (SSLSocket tls = through(proxy, "secret.test", server.port(), proxy.authority().certificate())) {
      answer = exchange(tls, "GET " + path + " HTTP/1.1\r\nHost: secret.test:" + server.port() + "\r\nX-Api-Key: "
          + secrets.placeholders().get("API_KEY") + "\r\n\r\n");
    }
    assertThat(Await.until(10_000, () -> proxy.liveConnections() == 0)).as("the proxy ended the connection").isTrue();
    return answer;
  }

  @Test
  void oneServerConnectionCarriesTheRequestsOfManyClientConnections() throws Exception {
    for (int i = 1; i <= 3; i++) {
      String answer = get("/keep");
      assertThat(answer).startsWith("HTTP/1.1 200 OK\r\n").contains("Connection: close\r\n")
          .doesNotContain("keep-alive").endsWith("answer " + i + " on connection 1");
    }
    assertThat(get("/chunked")).contains("Transfer-Encoding: chunked\r\n").endsWith("answer 4 on connection 1\r\n0\r\n\r\n");
    assertThat(server.connections).hasValue(1);
    assertThat(server.keys).hasSize(4).containsOnly(VALUE);
    assertThat(Await.until(5_000, () -> proxy.liveConnections() == 0)).isTrue();
    assertThat(proxy.upstreams().size()).isEqualTo(1);
    assertThat(proxy.audit().since(0)).hasSize(4).allSatisfy(e -> {
      assertThat(e.secrets()).containsExactly("API_KEY");
      assertThat(e.bytesDown()).isPositive();
    });
  }

  @Test
  void aServerThatAsksToCloseOrClosesWhileIdleGetsANewConnection() throws Exception {
    assertThat(get("/close")).endsWith("answer 1 on connection 1");
    assertThat(get("/keep")).endsWith("answer 1 on connection 2");
    assertThat(get("/drop")).endsWith("answer 2 on connection 2");
    // The server closes that connection 100 ms later: the pooled connection is found closed, not used.
    assertThat(Await.until(5_000, () -> server.connections.get() == 2 && proxy.upstreams().size() == 1)).isTrue();
    Thread.sleep(300);
    assertThat(get("/keep")).endsWith("answer 1 on connection 3");
    assertThat(server.keys).hasSize(4).containsOnly(VALUE);
  }

  @Test
  void aConnectionTheServerWroteToWhileIdleIsNeverHandedOut() throws Exception {
    assertThat(get("/chatty")).endsWith("answer 1 on connection 1");
    assertThat(Await.until(10_000, () -> server.unasked.get() == 1)).isTrue();
    String next = get("/keep");
    assertThat(next).as("not the unasked answer").doesNotContain("unasked!").endsWith("answer 1 on connection 2");
    assertThat(server.keys).hasSize(2).containsOnly(VALUE);
  }

  @Test
  void idleConnectionsExpireAndCloseWithTheProxy() throws Exception {
    get("/keep");
    assertThat(Await.until(5_000, () -> proxy.upstreams().size() == 1)).isTrue();
    assertThat(Await.until(UpstreamPool.IDLE_SECONDS * 1000L + 5_000, () -> server.closedByPeer.get() == 1))
        .as("the server sees its idle connection closed").isTrue();
    assertThat(proxy.upstreams().size()).isZero();
    get("/keep");
    assertThat(Await.until(5_000, () -> proxy.upstreams().size() == 1)).isTrue();
    proxy.close();
    assertThat(Await.until(5_000, () -> server.closedByPeer.get() == 2)).as("closed with the proxy").isTrue();
  }
}
