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
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Clients that try to exhaust the proxy: a flood of held CONNECTs, slow handshakes, huge heads, idle
 * tunnels. After each, the proxy still serves, and the JVM's threads and descriptors come back to
 * what they were.
 */
class EgressHostileIT {
  private static final Duration HANDSHAKE = Duration.ofSeconds(2);
  private static final Duration IDLE = Duration.ofSeconds(3);

  EgressFixtures.HttpUpstream http;
  EgressProxy proxy;
  int baselineThreads;
  long baselineFds;

  @BeforeEach
  void start() throws Exception {
    http = new EgressFixtures.HttpUpstream();
    proxy = EgressProxy.builder().policy(EgressFixtures.policy()).resolver(new EgressFixtures.Resolver())
        .limits(EgressLimits.defaults().withHandshakeTimeout(HANDSHAKE).withIdleTimeout(IDLE)).start();
    assertServes(); // loads the classes and starts what a first request starts
    assertThat(Await.until(15_000, () -> proxy.liveConnections() == 0)).isTrue();
    Thread.sleep(1_500); // the pool's idle threads end
    baselineThreads = threads();
    baselineFds = fds();
  }

  @AfterEach
  void stop() throws IOException {
    proxy.close();
    http.close();
  }

  private void assertServes() throws IOException {
    try (Socket s = send(proxy, "GET http://allowed.test:" + http.port() + "/ok HTTP/1.1\r\nHost: allowed.test:"
        + http.port() + "\r\n\r\n")) {
      assertThat(readAll(s)).startsWith("HTTP/1.1 200").contains("hello GET /ok");
    }
  }

  private void assertBackToBaseline() throws InterruptedException {
    // Threads end within the pool's keep-alive (1 s); descriptors as soon as both sides closed.
    boolean back = Await.until(20_000, () -> proxy.liveConnections() == 0 && threads() <= baselineThreads
        && fds() <= baselineFds);
    assertThat(back).as("back to %d threads and %d fds, now %d and %d (%d live)", baselineThreads, baselineFds,
        threads(), fds(), proxy.liveConnections()).isTrue();
  }

  private String connect() {
    return "CONNECT allowed.test:" + http.port() + " HTTP/1.1\r\nHost: allowed.test:" + http.port() + "\r\n\r\n";
  }

  @Test
  void aFloodOfHeldConnectsIsCappedAndTheProxyServesOnceTheyClose() throws Exception {
    // a proxy whose handshake deadline a loaded machine cannot miss while it answers 256 at once
    proxy.close();
    proxy = EgressProxy.builder().policy(EgressFixtures.policy()).resolver(new EgressFixtures.Resolver())
        .limits(EgressLimits.defaults().withHandshakeTimeout(Duration.ofSeconds(30))).start();
    List<Socket> held = new ArrayList<>();
    int established = 0;
    int busy = 0;
    try {
      for (int i = 0; i < 300; i++) {
        held.add(send(proxy, connect()));
      }
      for (Socket s : held) {
        String head = readHead(s.getInputStream());
        if (head != null && head.startsWith("HTTP/1.1 200")) {
          established++;
        } else if (head != null && head.startsWith("HTTP/1.1 503")) {
          busy++;
        }
      }
      assertThat(established).isEqualTo(256);
      assertThat(busy).isEqualTo(44);
      try (Socket s = send(proxy, connect())) {
        assertThat(readAll(s)).startsWith("HTTP/1.1 503").endsWith("egress refused by connection-limit\n");
      }
    } finally {
      for (Socket s : held) {
        s.close();
      }
    }
    assertThat(Await.until(15_000, () -> proxy.liveConnections() == 0)).isTrue();
    assertServes();
    assertThat(proxy.audit().since(0)).filteredOn(e -> e.rule().equals("connection-limit")).hasSize(45);
    assertBackToBaseline();
  }

  @Test
  void aClientSendingOneByteASecondIsCutAtTheHandshakeDeadline() throws Exception {
    ExecutorService slow = Executors.newFixedThreadPool(20);
    try {
      List<Future<Long>> cuts = new ArrayList<>();
      for (int i = 0; i < 20; i++) {
        cuts.add(slow.submit(() -> trickle(connect())));
      }
      // while they all hold a handshake open, the proxy answers others
      assertThat(Await.until(HANDSHAKE.toMillis(), () -> proxy.liveConnections() >= 10)).isTrue();
      assertServes();
      for (Future<Long> cut : cuts) {
        long millis = cut.get();
        // cut at the deadline, not before; the upper bound only allows for a loaded machine
        assertThat(millis).isBetween(HANDSHAKE.toMillis() - 200, HANDSHAKE.toMillis() + 10_000);
      }
    } finally {
      slow.shutdownNow();
    }
    assertThat(Await.until(15_000, () -> proxy.audit().since(0).stream()
        .filter(e -> "handshake-timeout".equals(e.outcome())).count() == 20)).isTrue();
    assertBackToBaseline();
  }

  /** Sends the text a byte a second; returns the milliseconds until the proxy closed the connection. */
  private long trickle(String text) throws IOException, InterruptedException {
    long start = System.nanoTime();
    try (Socket s = new Socket(InetAddress.getLoopbackAddress(), proxy.port())) {
      s.setSoTimeout(1_000);
      OutputStream out = s.getOutputStream();
      InputStream in = s.getInputStream();
      for (int i = 0; i < text.length(); i++) {
        try {
          out.write(text.charAt(i));
          out.flush();
          if (in.read() < 0) {
            break;
          }
        } catch (java.net.SocketTimeoutException e) {
          continue; // still open: the next byte after a second
        } catch (SocketException e) {
          break; // reset: closed
        }
      }
    }
    return (System.nanoTime() - start) / 1_000_000;
  }

  @Test
  void aHeadOf64KibIsAnswered431() throws Exception {
    StringBuilder head = new StringBuilder("GET http://allowed.test:" + http.port() + "/ HTTP/1.1\r\nHost: allowed.test:"
        + http.port() + "\r\n");
    while (head.length() < 64 * 1024) {
      head.append("X-Pad-").append(head.length()).append(": ").append("a".repeat(100)).append("\r\n");
    }
    head.append("\r\n");
    int served = http.heads.size();
    for (int i = 0; i < 5; i++) {
      try (Socket s = send(proxy, head.toString())) {
        assertThat(readAll(s)).startsWith("HTTP/1.1 431 Request Header Fields Too Large\r\n");
      }
    }
    assertThat(http.heads).hasSize(served);
    assertServes();
    assertBackToBaseline();
  }

  @Test
  void anIdleTunnelIsClosedAfterTheIdleTimeout() throws Exception {
    long start = System.nanoTime();
    try (Socket s = send(proxy, connect())) {
      assertThat(readHead(s.getInputStream())).startsWith("HTTP/1.1 200");
      assertThat(s.getInputStream().read()).isEqualTo(-1);
    }
    long millis = (System.nanoTime() - start) / 1_000_000;
    assertThat(millis).isBetween(IDLE.toMillis() - 100, IDLE.toMillis() + 10_000);
    assertThat(Await.until(15_000, () -> proxy.audit().since(0).stream()
        .anyMatch(e -> "idle-timeout".equals(e.outcome())))).isTrue();
    assertBackToBaseline();
  }

  @Test
  void manyShortConnectionsLeaveNothingBehind() throws Exception {
    ExecutorService clients = Executors.newFixedThreadPool(16);
    try {
      List<Future<String>> answers = new ArrayList<>();
      for (int i = 0; i < 400; i++) {
        int n = i;
        answers.add(clients.submit(() -> {
          String text = n % 2 == 0 ? connect() + "GET /t HTTP/1.1\r\nHost: allowed.test\r\n\r\n"
              : "CONNECT denied.test:443 HTTP/1.1\r\n\r\n";
          try (Socket s = send(proxy, text)) {
            return new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
          }
        }));
      }
      for (int i = 0; i < answers.size(); i++) {
        assertThat(answers.get(i).get()).contains(i % 2 == 0 ? "hello GET /t" : "HTTP/1.1 403");
      }
    } finally {
      clients.shutdownNow();
    }
    assertThat(Await.until(15_000, () -> proxy.audit().lastSequence() >= 401)).isTrue();
    assertBackToBaseline();
  }
}
