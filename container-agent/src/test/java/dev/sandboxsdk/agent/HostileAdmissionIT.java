package dev.sandboxsdk.agent;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Clients without the bearer token (strangers, and holders of a preview URL) must not keep the
 * token's holders from the API, however many connections they open or hold: the agent gives them
 * only a share of its connection cap. Each test runs the packaged agent in a child JVM with
 * {@code --max-connections 64}, attacks it, measures authenticated calls meanwhile, and counts
 * the agent's descriptors and threads in /proc afterwards.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class HostileAdmissionIT {
  final List<ChildAgent> agents = new ArrayList<>();
  final List<Socket> sockets = new ArrayList<>();

  @AfterEach
  void cleanUp() throws Exception {
    for (Socket s : sockets) {
      s.close();
    }
    for (ChildAgent a : agents) {
      a.close();
    }
  }

  static final String EXEC = ChildAgent.request("POST", "/api/execute", "{\"command\":\"echo ok\"}");

  /** Runs {@code n} authenticated execs, each on a new connection; returns how many succeeded. */
  static int execs(ChildAgent agent, int n) {
    return execs(agent, n, 0).ok();
  }

  /** How many execs succeeded of how many ran, and the first few failures with their times. */
  record Served(int ok, int ran, List<String> firstFailures) {}

  /**
   * Runs at least {@code n} authenticated execs, each on a new connection, and goes on until
   * {@code forMs} passed.
   */
  static Served execs(ChildAgent agent, int n, long forMs) {
    int ok = 0;
    int i = 0;
    List<String> failures = new ArrayList<>();
    long start = System.nanoTime();
    long end = start + TimeUnit.MILLISECONDS.toNanos(forMs);
    for (; i < n || System.nanoTime() < end; i++) {
      long t0 = System.nanoTime();
      String failure;
      try {
        String r = agent.call(EXEC, 10_000);
        boolean served = r.startsWith("HTTP/1.1 200") && r.contains("ok\\n");
        ok += served ? 1 : 0;
        failure = served ? null : r.isEmpty() ? "empty" : r.substring(0, Math.min(12, r.length()));
      } catch (IOException e) {
        failure = e.getClass().getSimpleName(); // refused or reset: a failed call
      }
      if (failure != null && failures.size() < 5) {
        long now = System.nanoTime();
        failures.add(failure + " after " + TimeUnit.NANOSECONDS.toMillis(now - t0) + " ms at "
            + TimeUnit.NANOSECONDS.toMillis(now - start) + " ms");
      }
    }
    return new Served(ok, i, failures);
  }

  /**
   * 100 connections without a token keep sending an unfinished request a byte a second (in its
   * headers, or in a body declared after them) and are reopened as soon as the agent closes them; authenticated execs meanwhile for 25 s (past two
   * header deadlines), each on a new connection. Before the fix the strangers held the whole cap
   * and almost every exec was refused.
   */
  @Test
  void clientsWithoutTheTokenHoldingUnfinishedRequestsCannotStarveAuthenticatedOnes() throws Exception {
    execsStillServedWhile("unauthenticated", 100, HostileAdmissionIT::holdUnfinished);
  }

  /**
   * 150 connections that send nothing, each reopened as soon as the agent closes it, on an agent
   * with 64 connections; authenticated execs meanwhile for 25 s, each on a new connection. Before
   * the fix the silent ones held the cap until the JDK server's 30 s idle deadline and, reopened,
   * kept every exec out; now the kernel hands them over only after the header deadline and the
   * agent closes them a second later.
   */
  @Test
  void clientsThatConnectAndSendNothingCannotStarveAuthenticatedOnes() throws Exception {
    execsStillServedWhile("silent", 150, HostileAdmissionIT::holdSilent);
  }

  /** An attacker that keeps {@code n} connections of its kind open until {@code stop}, counting each it opens. */
  interface Holder {
    void hold(ChildAgent agent, int n, AtomicBoolean stop, AtomicInteger opened);
  }

  /**
   * On an agent with 64 connections, {@code holder} keeps {@code n} connections and reopens each
   * the agent closes; authenticated execs run meanwhile for 25 s (past two header deadlines), each
   * on a new connection: at least 99 % succeed, and the agent's descriptors and threads settle.
   */
  void execsStillServedWhile(String kind, int n, Holder holder) throws Exception {
    ChildAgent agent = agent("--max-connections", "64");
    agent.call("GET", "/api/ping", null);
    int baseFds = agent.fds();
    int baseThreads = agent.connectionThreads();
    AtomicBoolean stop = new AtomicBoolean();
    AtomicInteger opened = new AtomicInteger();
    Thread attacker = new Thread(() -> holder.hold(agent, n, stop, opened), kind + "-holder");
    attacker.setDaemon(true);
    attacker.start();
    Served ok;
    long ms;
    try {
      assertThat(ChildAgent.await(10_000, () -> opened.get() >= n)).as("the holder opened its connections").isTrue();
      Thread.sleep(1_000);
      long start = System.nanoTime();
      ok = execs(agent, 200, 25_000);
      ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    } finally {
      stop.set(true);
      attacker.join(10_000);
    }
    System.out.printf("%d %s holders (%d connections opened in all): %d of %d authenticated execs succeeded in %d ms"
        + " (first failures: %s)%n", n, kind, opened.get(), ok.ok(), ok.ran(), ms, ok.firstFailures());
    assertThat(ok.ok()).as("authenticated execs that succeeded of %d", ok.ran()).isGreaterThanOrEqualTo(ok.ran() * 99 / 100);
    assertThat(opened.get()).as("the agent closed and the holder reopened connections").isGreaterThan(n);
    assertSettled(agent, baseFds, baseThreads);
  }

  /** Keeps {@code n} connections open that send nothing, reopening each the agent closes, until {@code stop}. */
  static void holdSilent(ChildAgent agent, int n, AtomicBoolean stop, AtomicInteger opened) {
    java.net.InetSocketAddress address = new java.net.InetSocketAddress("127.0.0.1", agent.port);
    try (java.nio.channels.Selector selector = java.nio.channels.Selector.open()) {
      int open = 0;
      while (!stop.get()) {
        for (; open < n && !stop.get(); open++) {
          java.nio.channels.SocketChannel c = java.nio.channels.SocketChannel.open(address);
          c.configureBlocking(false);
          c.register(selector, java.nio.channels.SelectionKey.OP_READ);
          opened.incrementAndGet();
        }
        selector.select(50);
        for (java.nio.channels.SelectionKey k : selector.selectedKeys()) {
          java.nio.channels.SocketChannel c = (java.nio.channels.SocketChannel) k.channel();
          try {
            if (c.read(java.nio.ByteBuffer.allocate(256)) >= 0) {
              continue; // an answer without a request would be a defect; the test sees it as no close
            }
          } catch (IOException e) {
            // reset: closed as well
          }
          k.cancel();
          c.close();
          open--;
        }
        selector.selectedKeys().clear();
      }
      for (java.nio.channels.SelectionKey k : selector.keys()) {
        k.channel().close();
      }
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /**
   * 80 requests through a preview URL (its cookie, no bearer token) to a server that accepts and
   * never answers, on an agent with 64 connections: the API stays reachable during the hold, the
   * exchanges past the preview share get 429 at once, and the held ones end within the preview
   * cut-off, not the proxy timeout. Before the fix the API was unreachable for the whole hold.
   */
  @Test
  void previewClientsHoldingRequestsToASilentServerLeaveTheApiReachable() throws Exception {
    ChildAgent agent = agent("--max-connections", "64", "--proxy-timeout-ms", "120000");
    int port = silentServer(agent);
    String cookie = previewCookie(agent, port);
    int baseFds = agent.fds();
    int baseThreads = agent.connectionThreads();
    List<Socket> held = new ArrayList<>();
    int failedToSend = 0;
    for (int i = 0; i < 80; i++) {
      try {
        Socket s = agent.connect();
        sockets.add(s);
        s.getOutputStream().write(("GET /proxy/" + port + "/hold HTTP/1.1\r\nHost: agent\r\nCookie: " + cookie + "\r\n\r\n")
            .getBytes(StandardCharsets.US_ASCII));
        held.add(s);
      } catch (IOException e) {
        failedToSend++; // closed at the cap before the request was written
      }
    }
    Thread.sleep(1_000);
    long start = System.nanoTime();
    int ok = execs(agent, 20);
    long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    int refused = 0;
    int closed = 0;
    int cut = 0;
    long holdStart = System.nanoTime();
    for (Socket s : held) {
      s.setSoTimeout(45_000);
      String answer = readAnswer(s);
      refused += answer.startsWith("HTTP/1.1 429") ? 1 : 0;
      cut += answer.startsWith("HTTP/1.1 504") ? 1 : 0;
      closed += answer.isEmpty() ? 1 : 0; // accepted while the cap was full (429s not yet closed): closed at once
      s.close(); // a browser would keep the 16 it may reuse; the agent closes them after 30 s idle
    }
    long holdMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - holdStart);
    System.out.printf("80 preview requests held to a silent server: %d of 20 authenticated execs succeeded in %d ms;"
        + " %d preview requests refused with 429 and %d at the cap, %d cut with 504 within %d ms%n", ok, ms, refused,
        closed, cut, holdMs);
    assertThat(ok).as("authenticated execs during the hold").isEqualTo(20);
    // How many get their 429 before the JDK's cap closes the rest at accept depends on how fast the
    // agent runs (32 and 32 on a loaded machine); either way none of them reaches the server.
    assertThat(refused).as("preview requests past their share, answered 429").isPositive();
    assertThat(refused + closed + failedToSend).as("preview requests past their share, answered 429 or closed at the cap")
        .isEqualTo(80 - 16);
    assertThat(cut).as("held preview requests cut by the preview silence limit").isEqualTo(16);
    assertThat(holdMs).as("the cut-off is 30 s, not the 120 s proxy timeout").isLessThan(40_000);
    assertSettled(agent, baseFds, baseThreads);
  }

  /**
   * An answer to a request without the token (a ping, a 401, a 404) closes its connection, so a
   * stranger cannot park idle connections in the cap; with the token the connection is kept.
   */
  @Test
  void answersWithoutTheTokenCloseTheConnectionAnswersWithItKeepIt() throws Exception {
    ChildAgent agent = agent("--max-connections", "64");
    for (String request : new String[] {"GET /api/ping HTTP/1.1\r\nHost: agent\r\n\r\n",
        "GET /api/version HTTP/1.1\r\nHost: agent\r\n\r\n", "GET /nowhere HTTP/1.1\r\nHost: agent\r\n\r\n",
        "GET /api/version HTTP/1.1\r\nHost: agent\r\nAuthorization: Bearer wrong\r\n\r\n"}) {
      try (Socket s = agent.connect()) {
        s.setSoTimeout(5_000);
        s.getOutputStream().write(request.getBytes(StandardCharsets.US_ASCII));
        String answer = readAnswer(s);
        assertThat(answer).as(request).startsWith("HTTP/1.1 ").containsIgnoringCase("connection: close");
        assertThat(HostileClientsIT.endOfStream(s)).as("closed by the agent: %s", request).isTrue();
      }
    }
    String withToken = "GET /api/ping HTTP/1.1\r\nHost: agent\r\nAuthorization: Bearer " + ChildAgent.TOKEN + "\r\n\r\n";
    try (Socket s = agent.connect()) {
      s.setSoTimeout(5_000);
      for (int i = 0; i < 2; i++) {
        s.getOutputStream().write(withToken.getBytes(StandardCharsets.US_ASCII));
        String answer = readAnswer(s);
        assertThat(answer).as("request %d on one connection", i).startsWith("HTTP/1.1 200")
            .doesNotContainIgnoringCase("connection: close");
        s.getInputStream().readNBytes(Integer.parseInt(answer.replaceAll("(?s).*[Cc]ontent-[Ll]ength: (\\d+).*", "$1")));
      }
    }
  }

  ChildAgent agent(String... args) throws IOException {
    ChildAgent a = ChildAgent.start(List.of(), args);
    agents.add(a);
    return a;
  }

  static void assertSettled(ChildAgent agent, int baseFds, int baseThreads) throws Exception {
    boolean settled = ChildAgent.await(20_000, () -> agent.fds() <= baseFds + HostileClientsIT.SLACK
        && agent.connectionThreads() <= baseThreads + HostileClientsIT.SLACK);
    assertThat(settled).as("fds %d (baseline %d), threads %d (baseline %d): %s", agent.fds(), baseFds,
        agent.connectionThreads(), baseThreads, agent.threadNames()).isTrue();
    assertThat(agent.call(EXEC, 10_000)).startsWith("HTTP/1.1 200");
  }

  /**
   * Keeps {@code n} connections sending an unfinished request without a token, a byte a second
   * each, reopening every one the agent closes, until {@code stop}.
   */
  static void holdUnfinished(ChildAgent agent, int n, AtomicBoolean stop, AtomicInteger opened) {
    Socket[] held = new Socket[n];
    // Headers never finished; headers done but a body that trickles, to a route that needs the
    // token (answered 401) and to the one that does not (ping).
    byte[][] starts = {"POST /api/execute HTTP/1.1\r\nHost: agent\r\nX-Slow: ".getBytes(StandardCharsets.US_ASCII),
        "POST /api/execute HTTP/1.1\r\nHost: agent\r\nContent-Length: 100000\r\n\r\n{".getBytes(StandardCharsets.US_ASCII),
        "GET /api/ping HTTP/1.1\r\nHost: agent\r\nContent-Length: 100000\r\n\r\n{".getBytes(StandardCharsets.US_ASCII)};
    long lastTrickle = 0;
    while (!stop.get()) {
      boolean trickle = System.nanoTime() - lastTrickle > TimeUnit.SECONDS.toNanos(1);
      lastTrickle = trickle ? System.nanoTime() : lastTrickle;
      for (int i = 0; i < n && !stop.get(); i++) {
        try {
          if (held[i] == null) {
            held[i] = agent.connect();
            held[i].getOutputStream().write(starts[i % starts.length]);
            opened.incrementAndGet();
          } else if (trickle) {
            held[i].getOutputStream().write('x');
          }
        } catch (IOException e) {
          close(held[i]);
          held[i] = null;
        }
      }
      sleep(20);
    }
    for (Socket s : held) {
      close(s);
    }
  }

  /** Starts a server in the sandbox that accepts connections and never answers; exposes it. */
  static int silentServer(ChildAgent agent) throws Exception {
    Files.writeString(agent.dir.resolve("ws").resolve("silent.py"), "import socket, sys\n"
        + "s = socket.socket()\ns.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
        + "s.bind(('127.0.0.1', int(sys.argv[1])))\ns.listen(512)\nheld = []\n"
        + "while True:\n    held.append(s.accept())\n");
    int port = PortWatchIT.freePort();
    agent.call("POST", "/api/process/start", "{\"command\":\"exec python3 silent.py " + port + "\"}");
    assertThat(ChildAgent.await(20_000, () -> {
      try (Socket s = new Socket("127.0.0.1", port)) {
        return true;
      } catch (IOException e) {
        return false;
      }
    })).as("the silent server listens").isTrue();
    agent.call("POST", "/api/expose-port", "{\"port\":" + port + "}");
    return port;
  }

  /** The preview cookie an exposure's URL gives a browser. */
  static String previewCookie(ChildAgent agent, int port) throws Exception {
    String list = agent.call("GET", "/api/exposed-ports", null);
    String url = TestAgent.JSON.readTree(list.substring(list.indexOf("\r\n\r\n") + 4)).path("ports").get(0)
        .path("url").asText();
    String token = url.substring(url.indexOf("sandbox-preview-token=") + "sandbox-preview-token=".length());
    String r = agent.call("GET /proxy/" + port + "/?sandbox-preview-token=" + token
        + " HTTP/1.1\r\nHost: agent\r\nConnection: close\r\n\r\n", 10_000);
    assertThat(r).startsWith("HTTP/1.1 302");
    int at = r.toLowerCase(java.util.Locale.ROOT).indexOf("set-cookie: ") + "set-cookie: ".length();
    return r.substring(at, r.indexOf(';', at));
  }

  /** The status line and headers of the answer, or "" if the agent closed without one. */
  static String readAnswer(Socket s) {
    StringBuilder b = new StringBuilder();
    try {
      InputStream in = s.getInputStream();
      while (!b.toString().endsWith("\r\n\r\n")) {
        int c = in.read();
        if (c < 0) {
          break;
        }
        b.append((char) c);
      }
    } catch (IOException e) {
      // closed or timed out: what arrived is the answer
    }
    return b.toString();
  }

  static void close(Socket s) {
    try {
      if (s != null) {
        s.close();
      }
    } catch (IOException e) {
      // closing
    }
  }

  static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
