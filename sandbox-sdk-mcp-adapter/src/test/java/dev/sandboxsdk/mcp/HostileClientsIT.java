package dev.sandboxsdk.mcp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sandboxsdk.testkit.Await;
import dev.sandboxsdk.testkit.ProcStats;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The runnable jar's HTTP server against hostile and careless clients, as a child process whose
 * descriptors and threads are read from /proc: connections abandoned in every state on every
 * route, hundreds of slow senders, and what a sandboxed command sees of the server's environment.
 * The child runs with a 4 s request deadline (the default is 10 s) to keep this quick.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class HostileClientsIT {
  private static final String TOKEN = "hostile-it-token-5b8e1f03a9c4";
  private static final String PASSED = "passed-value-7d2c9e41";
  private static final String HOST_SECRET = "host-secret-value-e6a0b3";
  private static final int DEADLINE_SECONDS = 4;
  private static final String SLOW_OUTPUT = "{\"command\":\"for i in 1 2 3 4 5; do echo line $i; sleep 0.1; done\"}";
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final Pattern READY = Pattern.compile("SANDBOX_MCP_READY http://[^:]+:(\\d+)/mcp");

  @TempDir
  static Path tmp;

  private static Process child;
  private static int port;
  private static String session;
  private static int ids = 100;

  @BeforeAll
  static void startServer() throws Exception {
    Path log = tmp.resolve("server.log");
    child = launch(List.of(), List.of("--keep-alive-seconds", "1", "--max-connections", "900", "--pass-env", "PASSME"),
        log);
    port = awaitReady(child, log);
    session = initialize();
  }

  /** Starts the jar with a short request deadline, our token, a secret and a variable to pass. */
  private static Process launch(List<String> wrapper, List<String> options, Path log) throws IOException {
    String jar = System.getProperty("mcp.jar");
    assertThat(jar).as("system property mcp.jar (set by failsafe)").isNotNull();
    String java = ProcessHandle.current().info().command()
        .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    List<String> command = new ArrayList<>(wrapper);
    command.addAll(List.of(java, "-Dsun.net.httpserver.maxReqTime=" + DEADLINE_SECONDS, "-jar", jar,
        "--http", "--port", "0"));
    command.addAll(options);
    ProcessBuilder pb = new ProcessBuilder(command)
        .directory(tmp.toFile()).redirectErrorStream(true).redirectOutput(log.toFile());
    pb.environment().put("SANDBOX_MCP_TOKEN", TOKEN);
    pb.environment().put("HOSTSECRET", HOST_SECRET);
    pb.environment().put("PASSME", PASSED);
    pb.environment().remove("SANDBOX_AGENT_TOKEN");
    return pb.start();
  }

  private static int awaitReady(Process process, Path log) throws IOException, InterruptedException {
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (System.nanoTime() < until && process.isAlive()) {
      Matcher m = READY.matcher(Files.readString(log));
      if (m.find()) {
        return Integer.parseInt(m.group(1));
      }
      Thread.sleep(50);
    }
    throw new AssertionError("server not ready; its log: " + Files.readString(log));
  }

  @AfterAll
  static void stopServer() throws InterruptedException {
    if (child != null) {
      child.destroy();
      if (!child.waitFor(10, TimeUnit.SECONDS)) {
        child.destroyForcibly();
      }
    }
  }

  // ---- environment

  @Test
  @Order(1)
  void commandsSeeOnlyPassedVariablesNeverTheServersEnvironment() throws Exception {
    JsonNode result = call("exec", "{\"command\":\"env\"}");
    String stdout = result.path("structuredContent").path("stdout").asText();

    assertThat(stdout).as("a --pass-env name reaches the command, redacted")
        .contains("PASSME=[REDACTED:PASSME]").doesNotContain(PASSED);
    assertThat(stdout).as("the server's own token and other variables never reach the command")
        .doesNotContain("SANDBOX_MCP_TOKEN").doesNotContain(TOKEN)
        .doesNotContain("HOSTSECRET").doesNotContain(HOST_SECRET);
  }

  @Test
  @Order(1)
  void theServersOwnTokenIsRedactedIfACommandPrintsIt() throws Exception {
    JsonNode result = call("exec", "{\"command\":\"printf '%s' " + TOKEN + "\"}");

    assertThat(result.path("structuredContent").path("stdout").asText()).isEqualTo("[REDACTED:SANDBOX_MCP_TOKEN]");
    assertThat(result.toString()).doesNotContain(TOKEN);
  }

  // ---- abandoned connections

  @Test
  @Order(2)
  void connectionsAbandonedInEveryStateOnEveryRouteAreAllClosed() throws Exception {
    call("exec", "{\"command\":\"true\"}"); // the sandbox exists: its descriptors are part of the baseline
    // The same burst of calls once before the baseline: the pools that run them (ours and the SDK's)
    // keep idle threads for a while, which is not a leak; a thread per abandoned connection would be.
    for (int i = 0; i < 35; i++) {
      abandonAfterHeaders(request("POST /mcp", callJson("exec", SLOW_OUTPUT, true), session));
    }
    ping();
    awaitQuiet();
    Thread.sleep(1_000);
    long fds = fds();
    long threads = threads();
    List<String> routes = List.of("POST /mcp", "GET /mcp", "DELETE /mcp", "PUT /mcp", "POST /elsewhere",
        "GET /elsewhere");
    int abandoned = 0;
    for (int round = 0; round < 35; round++) {
      for (String route : routes) {
        // DELETE names no real session: it would end the one the SSE requests below use
        String full = request(route, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
            route.startsWith("DELETE") ? "0123456789abcdef" : session);
        abandon(full.substring(0, 5), false); // mid request line
        abandon(full.substring(0, full.indexOf("\r\n") + 12), false); // mid headers
        abandon(full.replace("Content-Length: ", "Content-Length: 1"), false); // mid body
        abandon(full, false); // mid response: sent all, gone before the answer
        abandon(full, true); // the same with a reset instead of a close
        abandoned += 5;
      }
      // mid SSE stream: a tools/call answered with progress, and the session's GET stream
      abandonAfterHeaders(request("POST /mcp", callJson("exec", SLOW_OUTPUT, true), session));
      abandonAfterHeaders(request("GET /mcp", null, initialize())); // a session has one GET stream at a time
      abandoned += 2;
    }
    assertThat(abandoned).isGreaterThanOrEqualTo(1_000);

    BooleanSupplier backToBaseline = () -> fds() <= fds && threads() <= threads + 4;
    assertThat(await(backToBaseline, 30)).as("descriptors (baseline %d) and threads (baseline %d + 4) after %d"
        + " abandoned connections, within 30 s: now %d, %d", fds, threads, abandoned, fds(), threads()).isTrue();
    long t0 = System.nanoTime();
    ping();
    System.out.printf("after %d abandoned connections: fds %d (baseline %d), threads %d (baseline %d), ping %.1f ms%n",
        abandoned, fds(), fds, threads(), threads, (System.nanoTime() - t0) / 1e6);
  }

  @Test
  @Order(3)
  void normalClientsAreServedWhileHundredsOfSlowOnesAreConnected() throws Exception {
    awaitQuiet();
    long fds = fds();
    List<Socket> slow = new ArrayList<>();
    long opened = System.nanoTime();
    try {
      for (int i = 0; i < 400; i++) {
        Socket s = connect();
        String partial = switch (i % 4) {
          case 0 -> "POST /mcp HT"; // request line
          case 1 -> "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: app"; // headers
          case 2 -> request("POST /mcp", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", session)
              .replace("Content-Length: ", "Content-Length: 100"); // body shorter than declared
          default -> request("POST /mcp", "{", session)
              .replace("Content-Length: 1", "Content-Length: 10000000000"); // declares 10 GB
        };
        s.getOutputStream().write(partial.getBytes(StandardCharsets.ISO_8859_1));
        s.getOutputStream().flush();
        slow.add(s);
      }
      long t0 = System.nanoTime();
      ping();
      double ms = (System.nanoTime() - t0) / 1e6;
      System.out.printf("ping with %d slow clients connected: %.1f ms%n", slow.size(), ms);
      // Answered while they were all still connected, not after the deadline dropped them.
      for (int i = 0; i < slow.size(); i++) {
        Socket s = slow.get(i);
        s.setSoTimeout(1);
        try {
          int b = s.getInputStream().read();
          fail("slow client %d was dropped or answered (read %d) before ping was served, %d ms after the first"
              + " connected", i, b, (System.nanoTime() - opened) / 1_000_000);
        } catch (SocketTimeoutException stillOpen) {
          // as it should be
        }
      }
      // The deadline ends them: the server closes each slow connection.
      for (int i = 0; i < slow.size(); i++) {
        Socket s = slow.get(i);
        s.setSoTimeout((DEADLINE_SECONDS + 10) * 1000);
        try {
          InputStream in = s.getInputStream();
          while (in.read() >= 0) {
            // an error response, if any, then the close
          }
        } catch (SocketTimeoutException stillOpen) {
          fail("slow client %d was still connected %d s after the request deadline", i, 10);
        } catch (IOException reset) {
          // closed as well
        }
      }
    } finally {
      for (Socket s : slow) {
        s.close();
      }
    }
    assertThat(await(() -> fds() <= fds, 15)).as("descriptors after the slow clients back to %d within 15 s (now %d)",
        fds, fds()).isTrue();
  }

  /**
   * Resuming the SSE stream as a hostile client: a Last-Event-ID of 100,000 characters, thousands
   * of resumes with garbage or another session's ids, and 200 resumes that hang up mid replay or
   * never read. Each gets a 4xx or its replay; descriptors and threads come back, RSS stays bounded.
   */
  @Test
  @Order(3)
  void hostileResumesOfTheSseStreamGetClientErrorsAndCostNothing() throws Exception {
    // An event id of this session (a tools/call with progress has several) and one of another.
    String own = firstEventId(session);
    String other = initialize();
    String foreign = firstEventId(other);
    ping();
    awaitQuiet();
    Thread.sleep(1_000);
    long fds = fds();
    long threads = threads();
    long rss = rssKib();
    List<String> bad = new ArrayList<>(List.of("x".repeat(100_000), "-".repeat(100_000), foreign, "", "\u00e9",
        "1-1-1", own + "0", own.replaceAll("-\\d+$", "-999999999999999999"), own.replaceAll("^[^-]+", "zz")));
    for (String id : bad) {
      Response r = exchange(request("GET /mcp", null, session).replace("\r\n\r\n", "\r\nLast-Event-ID: " + id + "\r\n\r\n"));
      assertThat(r.head()).as("Last-Event-ID %.40s", id).matches("(?s)HTTP/1.1 4\\d\\d .*");
    }
    for (int i = 0; i < 3_000; i++) {
      String id = i % 2 == 0 ? foreign : "garbage-" + i + "-" + i;
      Response r = exchange(request("GET /mcp", null, session).replace("\r\n\r\n", "\r\nLast-Event-ID: " + id + "\r\n\r\n"));
      assertThat(r.head()).as("Last-Event-ID %s", id).startsWith("HTTP/1.1 400");
    }
    // 200 resumes that hang up after the head (mid replay), 100 that never read and stay connected.
    String resume = request("GET /mcp", null, session).replace("\r\n\r\n", "\r\nLast-Event-ID: " + own + "\r\n\r\n");
    for (int i = 0; i < 200; i++) {
      abandonAfterHeaders(resume);
    }
    List<Socket> idle = new ArrayList<>();
    try {
      for (int i = 0; i < 100; i++) {
        Socket s = connect();
        s.setReceiveBufferSize(1024);
        s.getOutputStream().write(resume.getBytes(StandardCharsets.ISO_8859_1));
        idle.add(s);
      }
      Thread.sleep(1_000);
      long peakFds = fds();
      long peakThreads = threads();
      ping(); // served meanwhile
      for (Socket s : idle) {
        s.close();
      }
      // Settled is a moment at which both are back: a later reading may catch a descriptor the
      // server holds for an instant (a class file, /proc), which no leak is.
      boolean settled = await(() -> fds() <= fds && threads() <= threads + 4, 30);
      long after = rssKib();
      System.out.printf("hostile resumes: fds %d -> peak %d -> %d, threads %d -> peak %d -> %d, RSS %d -> %d KiB%n",
          fds, peakFds, fds(), threads, peakThreads, threads(), rss, after);
      assertThat(settled).as("descriptors back to %d and threads to %d + 4 within 30 s (now %d, %d)", fds, threads,
          fds(), threads()).isTrue();
      assertThat(after).as("RSS in KiB (baseline %d)", rss).isLessThan(rss + 256 * 1024);
      ping();
    } finally {
      for (Socket s : idle) {
        s.close();
      }
    }
  }

  /**
   * Waiting tools cancelled by their clients: waitForPort (a blocking call on a worker) and
   * watchFiles (on the SDK's stream), each for minutes on something that never comes. Once
   * cancelled, neither may keep a thread or a connection to the agent. The server's pools keep
   * idle threads for a minute, which is not a leak: a second round reuses them, where threads
   * still stuck in cancelled waits would add a new set per round.
   */
  @Test
  @Order(3)
  void cancelledWaitsForAPortOrForChangesKeepNoThreadsOrConnections() throws Exception {
    call("listFiles", "{}"); // the default sandbox exists before the baseline
    awaitQuiet();
    Thread.sleep(1_000);
    long fds = fds();
    long threads = threads();
    long rss = rssKib();
    int n = 20;
    long[] first = cancelledWaits(n, threads, fds);
    long[] second = cancelledWaits(n, threads, fds);
    long after = rssKib();
    System.out.printf("2 x %d cancelled waits: fds %d -> peak %d -> %d, threads %d -> peak %d -> %d -> peak %d -> %d,"
        + " RSS %d -> %d KiB%n", n, fds, Math.max(first[0], second[0]), fds(), threads, first[1], first[2], second[1],
        second[2], rss, after);
    assertThat(first[1]).as("threads while the calls ran (baseline %d)", threads).isGreaterThanOrEqualTo(threads + n);
    assertThat(second[2]).as("threads after the second round (after the first: %d)", first[2])
        .isLessThanOrEqualTo(first[2] + 4);
    assertThat(fds()).as("descriptors after the cancels (baseline %d)", fds).isLessThanOrEqualTo(fds);
    ping();
  }

  /**
   * Starts {@code n} waits, cancels them and hangs up; returns the descriptors and threads at the
   * peak, and the threads once the descriptors are back at {@code fds}.
   */
  private static long[] cancelledWaits(int n, long threads, long fds) throws Exception {
    List<Socket> calls = new ArrayList<>();
    List<Integer> callIds = new ArrayList<>();
    long peakFds;
    long peakThreads;
    try {
      for (int i = 0; i < n; i++) {
        callIds.add(ids);
        String call = i % 2 == 0 ? callJson("waitForPort", "{\"port\":9,\"mode\":\"tcp\",\"timeoutSeconds\":600}", false)
            : callJson("watchFiles", "{\"seconds\":300}", false);
        Socket s = connect();
        s.getOutputStream().write(request("POST /mcp", call, session).getBytes(StandardCharsets.UTF_8));
        calls.add(s);
      }
      await(() -> threads() >= threads + n, 15); // every call has started
      peakFds = fds();
      peakThreads = threads();
      for (int id : callIds) {
        Response r = exchange(request("POST /mcp", "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
            + "\"params\":{\"requestId\":" + id + ",\"reason\":\"hostile\"}}", session));
        assertThat(r.head()).startsWith("HTTP/1.1 202");
      }
    } finally {
      for (Socket s : calls) {
        s.close();
      }
    }
    await(() -> fds() <= fds, 30);
    Thread.sleep(6_000); // the HTTP handler threads of the hung-up calls idle out after 5 s
    return new long[] {peakFds, peakThreads, threads()};
  }

  /** The first SSE event id of a tools/call with progress in {@code sessionId}. */
  private static String firstEventId(String sessionId) throws IOException {
    Response r = exchange(request("POST /mcp", callJson("exec", SLOW_OUTPUT, true), sessionId));
    for (String line : r.body().split("\n")) {
      if (line.startsWith("id: ")) {
        return line.substring(4).strip();
      }
    }
    throw new AssertionError("no event id in " + r.head() + r.body());
  }

  private static long rssKib() {
    return ProcStats.rssKib(child.pid());
  }


  @Test
  @Order(4)
  void aFloodBeyondTheOpenFileLimitNeitherWedgesTheServerNorLeavesItDeaf() throws Exception {
    Path prlimit = Path.of("/usr/bin/prlimit");
    assumeTrue(Files.isExecutable(prlimit), "needs util-linux prlimit to lower the open-file limit");
    Path log = tmp.resolve("small.log");
    // 128 descriptors: the derived connection cap is 64, so accepting never meets EMFILE (which
    // made the JDK's accept loop spin at full CPU, with every later client refused for good).
    Process small = launch(List.of(prlimit.toString(), "--nofile=128:128"), List.of(), log);
    try {
      int p = awaitReady(small, log);
      List<Socket> flood = new ArrayList<>();
      try {
        for (int i = 0; i < 300; i++) {
          Socket s = new Socket();
          flood.add(s);
          try {
            s.connect(new java.net.InetSocketAddress(InetAddress.getLoopbackAddress(), p), 2_000);
            s.getOutputStream().write("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n".getBytes(StandardCharsets.US_ASCII));
          } catch (SocketTimeoutException backlogFull) {
            break; // the server accepts nothing any more: no use going on
          } catch (IOException closedBeyondTheCap) {
            // beyond the cap the server closes new connections: expected
          }
        }
      } finally {
        for (Socket s : flood) {
          s.close();
        }
      }
      String init = request("POST /mcp", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
          + "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"after\","
          + "\"version\":\"1\"}}}", null);
      String head = "";
      long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(DEADLINE_SECONDS + 10L);
      while (!head.startsWith("HTTP/1.1 200") && System.nanoTime() < until) {
        try (Socket s = new Socket()) {
          s.connect(new java.net.InetSocketAddress(InetAddress.getLoopbackAddress(), p), 2_000);
          s.setSoTimeout(2_000);
          s.getOutputStream().write(init.getBytes(StandardCharsets.UTF_8));
          head = readHead(s.getInputStream());
        } catch (IOException notYet) {
          Thread.sleep(200);
        }
      }
      assertThat(head).as("a normal client after the flood; server log: %s", Files.readString(log))
          .startsWith("HTTP/1.1 200");
    } finally {
      small.destroy();
      if (!small.waitFor(10, TimeUnit.SECONDS)) {
        small.destroyForcibly();
      }
    }
  }

  // ---- helpers

  private static long fds() {
    return ProcStats.fds(child.pid());
  }


  private static long threads() {
    return ProcStats.threads(child.pid());
  }


  /** Waits (up to a few seconds) until the count of descriptors stops changing. */
  private static void awaitQuiet() throws InterruptedException {
    ProcStats.awaitSteadyFds(child.pid());
  }


  /** Waits until {@code condition} holds; whether it did within {@code seconds}. */
  private static boolean await(BooleanSupplier condition, int seconds) throws InterruptedException {
    return Await.until(Duration.ofSeconds(seconds), Duration.ofMillis(100), condition);
  }


  private static Socket connect() throws IOException {
    Socket s = new Socket(InetAddress.getLoopbackAddress(), port);
    s.setSoTimeout(30_000);
    return s;
  }

  private static void abandon(String text, boolean reset) throws IOException {
    Socket s = connect();
    s.getOutputStream().write(text.getBytes(StandardCharsets.ISO_8859_1));
    s.getOutputStream().flush();
    if (reset) {
      s.setSoLinger(true, 0);
    }
    s.close();
  }

  /** Sends the request, reads the status line and headers of an SSE answer, and hangs up mid stream. */
  private static void abandonAfterHeaders(String text) throws IOException {
    try (Socket s = connect()) {
      s.getOutputStream().write(text.getBytes(StandardCharsets.ISO_8859_1));
      s.getOutputStream().flush();
      String head = readHead(s.getInputStream());
      assertThat(head).startsWith("HTTP/1.1 200").containsIgnoringCase("text/event-stream");
    }
  }

  private static String readHead(InputStream in) throws IOException {
    ByteArrayOutputStream head = new ByteArrayOutputStream();
    while (!head.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
      int b = in.read();
      if (b < 0) {
        break;
      }
      head.write(b);
    }
    return head.toString(StandardCharsets.ISO_8859_1);
  }

  private static String request(String route, String body, String sessionId) {
    byte[] bytes = body == null ? new byte[0] : body.getBytes(StandardCharsets.UTF_8);
    return route + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + TOKEN + "\r\n"
        + "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
        + (sessionId == null ? "" : "Mcp-Session-Id: " + sessionId + "\r\n")
        + "Content-Length: " + bytes.length + "\r\n\r\n" + (body == null ? "" : body);
  }

  /** One request on its own connection; the whole response (JSON, or an SSE stream to its end). */
  private static Response exchange(String text) throws IOException {
    try (Socket s = connect()) {
      OutputStream out = s.getOutputStream();
      out.write(text.getBytes(StandardCharsets.UTF_8));
      out.flush();
      s.shutdownOutput();
      InputStream in = s.getInputStream();
      String head = readHead(in);
      BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
      StringBuilder body = new StringBuilder();
      for (String line; (line = r.readLine()) != null; ) {
        body.append(line).append('\n');
        if (line.startsWith("data: ") && line.contains("\"result\"")) {
          break; // an SSE stream's answer; the stream may stay open a moment longer
        }
      }
      return new Response(head, body.toString());
    }
  }

  private record Response(String head, String body) {
  }

  private static String initialize() throws IOException {
    Response r = exchange(request("POST /mcp", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
        + "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"hostile\","
        + "\"version\":\"1\"}}}", null));
    Matcher m = Pattern.compile("(?i)mcp-session-id: (\\S+)").matcher(r.head());
    assertThat(m.find()).as("session id in %s", r.head()).isTrue();
    return m.group(1);
  }

  private static void ping() throws IOException {
    Response r = exchange(request("POST /mcp", "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}", session));
    assertThat(r.head()).startsWith("HTTP/1.1 200");
    assertThat(r.body()).contains("\"result\":{}");
  }

  private static String callJson(String tool, String arguments, boolean progress) {
    return "{\"jsonrpc\":\"2.0\",\"id\":" + (ids++) + ",\"method\":\"tools/call\",\"params\":{\"name\":\"" + tool
        + "\",\"arguments\":" + arguments + (progress ? ",\"_meta\":{\"progressToken\":1}" : "") + "}}";
  }

  private static JsonNode call(String tool, String arguments) throws IOException {
    Response r = exchange(request("POST /mcp", callJson(tool, arguments, false), session));
    for (String line : r.body().split("\n")) {
      if (line.startsWith("data: ") && line.contains("\"result\"")) {
        return MAPPER.readTree(line.substring(6)).path("result");
      }
    }
    throw new AssertionError("no result in " + r.head() + r.body());
  }
}
