package dev.sandboxsdk.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpServer;
import dev.sandboxsdk.testkit.ProcStats;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A hostile command or client against what egress added to a real agent (a child JVM, so its
 * descriptors, threads and memory can be counted): the proxy (clients hanging up mid-answer,
 * hundreds held open, the largest value of every field), the routes (the largest policy, extreme
 * event windows, a body a byte a second, no token) and, isolated, the relay a command reaches
 * the proxy through. After each, the agent still runs a command, its descriptors and threads come
 * back to where they were, and its memory stays bounded.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class EgressAttackIT {
  /** Descriptors and threads allowed above the baseline once the attack is over. */
  private static final int SLACK = 4;
  private static final long BIG_BODY = 256L << 20;
  static HttpServer upstream;
  static int upPort;

  @TempDir Path dir;

  @BeforeAll
  static void startUpstream() throws IOException {
    upstream = dev.sandboxsdk.testkit.HelloUpstream.start(200, java.util.concurrent.Executors.newCachedThreadPool());
    upstream.createContext("/big", ex -> {
      ex.sendResponseHeaders(200, BIG_BODY);
      byte[] chunk = new byte[64 * 1024];
      try (OutputStream out = ex.getResponseBody()) {
        for (long sent = 0; sent < BIG_BODY; sent += chunk.length) {
          out.write(chunk);
        }
      } catch (IOException e) {
        // the proxy hung up: what the test is about
      }
    });
    upPort = upstream.getAddress().getPort();
  }

  @AfterAll
  static void stopUpstream() {
    upstream.stop(0);
  }

  ChildAgent agent(String isolation, String policy) throws IOException {
    Path file = dir.resolve("policy.json");
    Files.writeString(file, policy);
    return ChildAgent.start(List.of(), "--isolation", isolation, "--egress-policy", file.toString(),
        "--egress-test-hosts", "up.test=127.0.0.1", "--request-timeout-seconds", "3");
  }

  static final String OPEN = "{\"mode\":\"open\",\"rules\":[\"allow 127.0.0.1/32\"]}";

  /** The JSON body of an answer read whole. */
  static JsonNode body(String response) throws IOException {
    return TestAgent.JSON.readTree(response.substring(response.indexOf("\r\n\r\n") + 4));
  }

  static JsonNode exec(ChildAgent agent, String command) throws IOException {
    String json = TestAgent.JSON.writeValueAsString(java.util.Map.of("command", command, "timeoutMs", 30_000));
    return body(agent.call("POST", "/api/execute", json));
  }

  static int proxyPort(ChildAgent agent) throws IOException {
    String url = body(agent.call("GET", "/api/egress/policy", null)).path("proxyUrl").asText();
    return Integer.parseInt(url.substring(url.lastIndexOf(':') + 1));
  }

  /** What the agent holds now: descriptors, threads, resident KiB. */
  record Stats(long fds, long threads, long rssKib) {
    static Stats of(long pid) {
      return new Stats(ProcStats.fds(pid), ProcStats.threads(pid), ProcStats.rssKib(pid));
    }
  }

  /** Baseline once the proxy's idle pool threads have ended and nothing is in flight. */
  static Stats settled(ChildAgent agent) throws InterruptedException {
    Thread.sleep(1_500);
    ProcStats.awaitSteadyFds(agent.pid);
    return Stats.of(agent.pid);
  }

  /** The agent runs a command, and its descriptors and threads come back to the baseline. */
  static Stats assertRecovered(ChildAgent agent, Stats base, String attack) throws Exception {
    assertThat(exec(agent, "echo served").path("stdout").asText()).as(attack).isEqualTo("served\n");
    boolean back = ChildAgent.await(15_000, () -> agent.fds() <= base.fds() + SLACK
        && agent.threads() <= base.threads() + SLACK);
    Stats after = Stats.of(agent.pid);
    assertThat(back).as("%s: %s, baseline %s; threads %s", attack, after, base, agent.threadNames()).isTrue();
    assertThat(after.rssKib()).as("%s: RSS bounded", attack).isLessThan(base.rssKib() + 128 * 1024);
    return after;
  }

  static Socket open(int port, String text) throws IOException {
    Socket s = new Socket();
    s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 30_000);
    s.setSoTimeout(20_000);
    s.getOutputStream().write(text.getBytes(StandardCharsets.ISO_8859_1));
    s.getOutputStream().flush();
    return s;
  }

  /** Everything until the proxy closes, or what came before a reset. */
  static String readAll(Socket s) throws IOException {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    byte[] b = new byte[8192];
    try {
      for (int n; (n = s.getInputStream().read(b)) >= 0; ) {
        out.write(b, 0, n);
      }
    } catch (SocketException reset) {
      // the proxy closed with bytes of ours unread
    }
    return out.toString(StandardCharsets.ISO_8859_1);
  }

  static String get(String target, String extraHeaders) {
    return "GET http://up.test:" + upPort + target + " HTTP/1.1\r\nHost: up.test:" + upPort + "\r\n" + extraHeaders
        + "\r\n";
  }

  @Test
  void theProxyOutlivesHangUpsHeldConnectionsAndTheLargestFields() throws Exception {
    try (ChildAgent agent = agent("none", OPEN)) {
      int proxy = proxyPort(agent);
      try (Socket s = open(proxy, get("/", ""))) {
        assertThat(readAll(s)).startsWith("HTTP/1.1 200").endsWith("hello from upstream");
      }
      Stats base = settled(agent);

      // Clients that hang up while a 256 MiB answer streams to them, half of them by a reset.
      for (int i = 0; i < 40; i++) {
        try (Socket s = open(proxy, get("/big", ""))) {
          if (i % 2 == 0) {
            s.setSoLinger(true, 0);
          }
          assertThat(s.getInputStream().readNBytes(100 * 1024)).hasSize(100 * 1024);
        }
      }
      Stats hungUp = assertRecovered(agent, base, "hang-ups mid-answer");

      // Hundreds held open without a byte: the cap admits 256, answers the rest 503 without a thread.
      List<Socket> held = new ArrayList<>();
      long peakThreads;
      try {
        for (int i = 0; i < 400; i++) {
          held.add(open(proxy, ""));
        }
        assertThat(ChildAgent.await(10_000, () -> agent.threads() >= base.threads() + 256)).isTrue();
        peakThreads = agent.threads();
        try (Socket s = open(proxy, get("/", ""))) {
          assertThat(readAll(s)).startsWith("HTTP/1.1 503").endsWith("egress refused by connection-limit\n");
        }
      } finally {
        for (Socket s : held) {
          s.close();
        }
      }
      assertThat(peakThreads).as("one pool thread per handshake, no more").isLessThan(base.threads() + 256 + 32);
      Stats afterHeld = assertRecovered(agent, base, "400 held connections");

      // The largest value of every field.
      assertThat(answer(proxy, "CONNECT up.test:0 HTTP/1.1\r\n\r\n")).startsWith("HTTP/1.1 400");
      assertThat(answer(proxy, "CONNECT up.test:99999 HTTP/1.1\r\n\r\n")).startsWith("HTTP/1.1 400");
      assertThat(answer(proxy, "CONNECT up.test:65535 HTTP/1.1\r\n\r\n")).matches("(?s)HTTP/1.1 (200|502) .*");
      assertThat(answer(proxy, "CONNECT " + "a".repeat(64 * 1024) + ":443 HTTP/1.1\r\n\r\n"))
          .startsWith("HTTP/1.1 431");
      assertThat(answer(proxy, "CONNECT " + "a".repeat(16_000) + ":443 HTTP/1.1\r\n\r\n")).startsWith("HTTP/1.1 400");
      assertThat(answer(proxy, get("/", "Content-Length: 9223372036854775807\r\n"))).startsWith("HTTP/1.1 400");
      assertThat(answer(proxy, get("/", "Content-Length: 99999999999999999999\r\n"))).startsWith("HTTP/1.1 400");
      // The largest length accepted, and a huge chunk, each cut short by the client's end: the
      // exchange ends then, rather than holding the server and a place until the idle timeout.
      for (String cut : List.of(get("/", "Content-Length: 999999999999999999\r\n") + "x",
          get("/", "Transfer-Encoding: chunked\r\n") + "ffffffffffffffffffff\r\nx")) {
        long t0 = System.nanoTime();
        String answer = answer(proxy, cut);
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0)).as("%s: %s", cut, answer).isLessThan(5_000);
      }
      Stats afterFields = assertRecovered(agent, base, "the largest fields");
      System.err.printf("egress proxy attacks: baseline %s; after hang-ups %s; 400 held: peak %d threads, after %s;"
          + " after the largest fields %s%n", base, hungUp, peakThreads, afterHeld, afterFields);
    }
  }

  /** The proxy's whole answer to a request written at once; the proxy must close within the read timeout. */
  static String answer(int proxy, String request) throws IOException {
    try (Socket s = open(proxy, request)) {
      s.shutdownOutput();
      return readAll(s);
    }
  }

  @Test
  void theRoutesTakeTheLargestPolicyAndExtremeWindowsAndRefuseSlowAndTokenlessClients() throws Exception {
    try (ChildAgent agent = agent("none", OPEN)) {
      int proxy = proxyPort(agent);
      agent.call("GET", "/api/egress/events", null);
      Stats base = settled(agent);

      // 1,000 rules, as long as the 256 KiB body allows, then the same with 512-character rules.
      String label = "a".repeat(59);
      String name = String.join(".", label, label, label, label);
      StringBuilder largest = new StringBuilder("{\"mode\":\"open\",\"rules\":[");
      for (int i = 0; i < 999; i++) {
        largest.append("\"deny d").append(i).append('.').append(name).append(":1-65535\",");
      }
      largest.append("\"allow 127.0.0.1/32\"]}");
      assertThat(largest.length()).isBetween(250 * 1024, 256 * 1024);
      String put = agent.call(ChildAgent.request("PUT", "/api/egress/policy", largest.toString()), 30_000);
      assertThat(put).startsWith("HTTP/1.1 200");
      assertThat(body(put).path("rules").size()).isEqualTo(1_000);
      try (Socket s = open(proxy, get("/", ""))) {
        assertThat(readAll(s)).as("decided past 999 rules").startsWith("HTTP/1.1 200");
      }
      String padded = "\"deny" + " ".repeat(512 - "denyx.test".length()) + "x.test\""; // 512 characters
      String tooLarge = "{\"mode\":\"open\",\"rules\":[" + String.join(",", java.util.Collections.nCopies(1_000, padded))
          + "]}";
      // Refused by its Content-Length before it is read: a client that sends on meets a reset, as
      // with any early answer, so this one is sent by a client that reads while it writes.
      java.net.http.HttpResponse<String> refused = java.net.http.HttpClient.newHttpClient().send(
          java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:" + agent.port
              + "/api/egress/policy")).header("Authorization", "Bearer " + ChildAgent.TOKEN)
              .header("Content-Type", "application/json").PUT(java.net.http.HttpRequest.BodyPublishers.ofString(tooLarge))
              .build(), java.net.http.HttpResponse.BodyHandlers.ofString());
      assertThat(refused.statusCode()).as(refused.body()).isEqualTo(413);
      assertThat(agent.call(ChildAgent.request("PUT", "/api/egress/policy", "{\"mode\":\"open\",\"rules\":["
          + padded.replace("deny ", "deny  ") + "]}"), 30_000)).startsWith("HTTP/1.1 400");
      assertThat(agent.call(ChildAgent.request("PUT", "/api/egress/policy", "{\"mode\":\"open\",\"rules\":["
          + padded + "]}"), 30_000)).startsWith("HTTP/1.1 200");

      // Windows at the ends of a long.
      JsonNode all = body(agent.call("GET", "/api/egress/events?limit=" + Long.MAX_VALUE, null));
      assertThat(all.path("events").size()).isBetween(1, 1_000);
      JsonNode none = body(agent.call("GET", "/api/egress/events?since=" + Long.MAX_VALUE, null));
      assertThat(none.path("events").size()).isZero();
      assertThat(none.path("more").asBoolean()).isFalse();
      for (String q : List.of("since=-1", "limit=-1", "limit=0", "since=" + Long.MIN_VALUE, "limit=" + Long.MIN_VALUE,
          "since=9223372036854775808", "limit=99999999999999999999")) {
        assertThat(agent.call(ChildAgent.request("GET", "/api/egress/events?" + q, null), 10_000)).as(q)
            .startsWith("HTTP/1.1 400");
      }

      // A policy a byte a second: cut at the request deadline (3 s) while others are served.
      long start = System.nanoTime();
      try (Socket slow = agent.connect()) {
        slow.setSoTimeout(1_000);
        String head = ChildAgent.request("PUT", "/api/egress/policy", OPEN);
        int headEnd = head.indexOf("\r\n\r\n") + 4;
        slow.getOutputStream().write(head.substring(0, headEnd).getBytes(StandardCharsets.UTF_8));
        InputStream in = slow.getInputStream();
        for (int i = headEnd; i < head.length() && System.nanoTime() - start < TimeUnit.SECONDS.toNanos(30); i++) {
          try {
            slow.getOutputStream().write(head.charAt(i));
            if (in.read() < 0) {
              break;
            }
          } catch (SocketTimeoutException e) {
            if (i == headEnd) {
              assertThat(exec(agent, "echo meanwhile").path("stdout").asText()).isEqualTo("meanwhile\n");
            }
          } catch (SocketException e) {
            break;
          }
        }
      }
      long slowMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      assertThat(slowMs).as("cut at the request deadline").isBetween(2_500L, 20_000L);
      assertThat(body(agent.call("GET", "/api/egress/policy", null)).path("rules").size()).isEqualTo(1);

      // No token, or a wrong one: refused before the route, and the policy stands.
      for (String token : List.of("", "Authorization: Bearer wrong-token-0123456789\r\n")) {
        for (String route : List.of("GET /api/egress/policy", "GET /api/egress/events", "PUT /api/egress/policy")) {
          String request = route + " HTTP/1.1\r\nHost: agent\r\n" + token + "Connection: close\r\n"
              + "Content-Type: application/json\r\nContent-Length: " + OPEN.length() + "\r\n\r\n" + OPEN;
          assertThat(agent.call(request, 10_000)).as(route + " " + token).startsWith("HTTP/1.1 401");
        }
      }
      assertThat(body(agent.call("GET", "/api/egress/policy", null)).path("rules").size()).isEqualTo(1);
      Stats after = assertRecovered(agent, base, "the routes");
      System.err.printf("egress routes attacks: baseline %s, after %s; slow PUT cut after %d ms%n", base, after, slowMs);
    }
  }

  /**
   * Isolated, a command reaches the proxy only through the relay in its namespace, a JVM with a
   * 16 MiB heap: a command holding thousands of connections to it is refused past the relay's cap,
   * the preview proxy (the relay's other side) keeps working, and once the command ends the relay
   * serves egress again with its threads and descriptors back.
   */
  @Test
  void aCommandFloodingTheRelayIsCappedAndTheRelayRecovers() throws Exception {
    assumeTrue(EgressWiringIT.hasCurl(), "curl is not installed");
    ChildAgent agent;
    try {
      agent = agent("bwrap", OPEN);
    } catch (AssertionError | IOException e) {
      assumeTrue(false, "bwrap cannot run here: " + e.getMessage());
      return;
    }
    try (agent) {
      String curl = "curl -s -m 10 -w ' %{http_code}' http://up.test:" + upPort + "/";
      assertThat(exec(agent, curl).path("stdout").asText()).isEqualTo("hello from upstream 200");
      int proxy = proxyPort(agent);
      agent.call("POST", "/api/process/start", "{\"command\":\"python3 -m http.server 8765 --bind 127.0.0.1\","
          + "\"processId\":\"web\"}");
      agent.call("POST", "/api/expose-port", "{\"port\":8765}");
      assertThat(ChildAgent.await(15_000, () -> preview(agent).startsWith("HTTP/1.1 200"))).isTrue();
      long relay = relayPid(agent.pid);
      Thread.sleep(1_500);
      Stats relayBase = Stats.of(relay);
      Stats base = settled(agent);

      Files.writeString(agent.dir.resolve("ws").resolve("hog.py"), "import socket, time\nheld = []\n"
          + "for i in range(3000):\n    try:\n        held.append(socket.create_connection(('127.0.0.1', " + proxy
          + "), 5))\n    except OSError as e:\n        print('failed', e, flush=True)\n        break\n"
          + "print('held', len(held), flush=True)\ntime.sleep(600)\n");
      agent.call("POST", "/api/process/start", "{\"command\":\"python3 hog.py\",\"processId\":\"hog\"}");
      assertThat(ChildAgent.await(60_000, () -> logs(agent, "hog").contains("held "))).as(logs(agent, "hog")).isTrue();
      Stats relayPeak = Stats.of(relay);
      assertThat(ProcessHandle.of(relay).map(ProcessHandle::isAlive)).as("the relay lives").hasValue(true);
      assertThat(relayPeak.threads()).as("relay threads under the flood").isLessThan(2L * 320 + 40);
      assertThat(preview(agent)).as("the preview proxy during the flood").startsWith("HTTP/1.1 200");
      assertThat(exec(agent, curl).path("stdout").asText()).as("refused while the cap is held").endsWith(" 503");

      agent.call("DELETE", "/api/process/hog", null);
      assertThat(ChildAgent.await(30_000, () -> {
        try {
          return exec(agent, curl).path("stdout").asText().equals("hello from upstream 200");
        } catch (IOException e) {
          return false;
        }
      })).as("egress again once the command is gone").isTrue();
      boolean back = ChildAgent.await(15_000, () -> ProcStats.fds(relay) <= relayBase.fds() + SLACK
          && ProcStats.threads(relay) <= relayBase.threads() + SLACK);
      Stats relayAfter = Stats.of(relay);
      assertThat(back).as("relay %s, baseline %s", relayAfter, relayBase).isTrue();
      assertThat(relayPid(agent.pid)).as("the same relay").isEqualTo(relay);
      Stats after = assertRecovered(agent, base, "the relay flood");
      System.err.printf("relay flood: relay baseline %s, peak %s, after %s; agent baseline %s, after %s; %s%n",
          relayBase, relayPeak, relayAfter, base, after, logs(agent, "hog").strip());
    }
  }

  static String preview(ChildAgent agent) {
    try {
      return agent.call(ChildAgent.request("GET", "/proxy/8765/", null), 15_000);
    } catch (IOException e) {
      return e.toString();
    }
  }

  static String logs(ChildAgent agent, String id) {
    try {
      return body(agent.call("GET", "/api/process/" + id + "/logs", null)).path("stdout").asText();
    } catch (IOException e) {
      return e.toString();
    }
  }

  static long relayPid(long agentPid) {
    return ProcessHandle.of(agentPid).orElseThrow().descendants()
        .filter(p -> p.info().commandLine().orElse("").contains("RelayMain")).mapToLong(ProcessHandle::pid)
        .max().orElseThrow();
  }
}
