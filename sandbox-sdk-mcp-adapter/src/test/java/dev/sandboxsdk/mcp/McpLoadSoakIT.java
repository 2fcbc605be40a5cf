package dev.sandboxsdk.mcp;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sandboxsdk.contract.LoadRun;
import dev.sandboxsdk.testkit.ProcStats;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Load and soak of the runnable MCP server over Streamable HTTP, as a child JVM with the flags the
 * docs prescribe ({@code -Xms16m -Xmx256m -XX:+UseG1GC -XX:G1PeriodicGCInterval=5000}): 200
 * clients, each with its own connection per request, keep a {@code tools/call} in flight for a
 * duration (exec, and startProcess + killProcess + getProcessLogs). Zero errors are allowed, and
 * afterwards the server's descriptors and threads (read from /proc) must be back at their idle
 * baseline within a small tolerance, its descendants must be the local sandbox's agent and
 * watchdog only, and its RSS must stay within its bound.
 *
 * <p>The default build runs 10 s; {@code -Dsoak=true} runs 2 minutes, {@code -Dsoak.seconds=N}
 * any duration. Figures go to stdout ({@code [soak]} lines).
 */
@Timeout(value = 30, unit = TimeUnit.MINUTES)
class McpLoadSoakIT {
  private static final String TOKEN = "soak-it-token-3f9a0c7e51";
  private static final int CLIENTS = 200;
  private static final int SECONDS = Integer.getInteger("soak.seconds", Boolean.getBoolean("soak") ? 120 : 10);
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final Pattern READY = Pattern.compile("SANDBOX_MCP_READY http://[^:]+:(\\d+)/mcp");
  /** Threads beyond the idle baseline allowed after the load: see LoadSoakIT in sandbox-sdk (JIT threads, pool stragglers). */
  private static final int THREAD_TOLERANCE = 4;
  private static final int FD_TOLERANCE = 2;
  /**
   * The server's RSS bound: its 256 MiB heap plus 256 MiB for the rest (metaspace and code about
   * 50 MiB, G1's remembered sets, stacks of up to 200 handler threads and the SDK's OkHttp threads
   * at 1 MiB reserved each, of which only the touched pages count).
   */
  private static final long RSS_BOUND_KIB = (256L + 256L) * 1024;

  @TempDir
  static Path tmp;

  private static Process server;
  private static Path log;
  private static int port;
  private static String session;
  private static final AtomicInteger ids = new AtomicInteger(100);

  @BeforeAll
  static void startServer() throws Exception {
    String jar = System.getProperty("mcp.jar");
    assertThat(jar).as("system property mcp.jar (set by failsafe)").isNotNull();
    String java = ProcessHandle.current().info().command()
        .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    log = tmp.resolve("server.log");
    ProcessBuilder pb = new ProcessBuilder(java, "-Xms16m", "-Xmx256m", "-XX:+UseG1GC",
        "-XX:G1PeriodicGCInterval=5000",
        // the local agents' stderr (their warnings, e.g. about the watchdog) into the server's log
        "-Dorg.slf4j.simpleLogger.log.dev.sandboxsdk.internal.AgentLauncher=debug", "-jar", jar, "--http", "--port", "0",
        // 200 calls at once need a cap of at least 200 (the default 64 answers the rest "busy")
        "--max-concurrent-calls", "256", "--max-connections", "512")
        .directory(tmp.toFile()).redirectErrorStream(true).redirectOutput(log.toFile());
    pb.environment().put("SANDBOX_MCP_TOKEN", TOKEN);
    server = pb.start();
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (port == 0 && System.nanoTime() < until && server.isAlive()) {
      Matcher m = READY.matcher(Files.readString(log));
      if (m.find()) {
        port = Integer.parseInt(m.group(1));
      } else {
        Thread.sleep(50);
      }
    }
    assertThat(port).as("server ready; its log: %s", Files.readString(log)).isPositive();
    session = initialize();
  }

  @AfterAll
  static void stopServer() throws InterruptedException {
    if (server != null) {
      server.destroy();
      if (!server.waitFor(20, TimeUnit.SECONDS)) {
        server.destroyForcibly();
      }
    }
  }

  @Test
  void twoHundredConcurrentToolCallsSeeNoErrorAndLeaveNothingBehind() throws Exception {
    // one of each call first: it starts the default sandbox (a child agent and its watchdog) and
    // loads what the server creates once; then the baseline is taken when nothing moves for 5 s
    for (int i = 0; i < 4; i++) {
      operation(CLIENTS, i); // a client number of its own: process ids must not collide with the load's
    }
    Snapshot idle = settle(null);
    System.out.printf("[soak] mcp server pid %d (-Xmx256m, G1); idle: %s%n", server.pid(), idle);

    LoadRun load = LoadRun.run("mcp-load", CLIENTS, SECONDS, 4, server.pid(), McpLoadSoakIT::operation);
    Snapshot loaded = Snapshot.take();
    Snapshot after = settle(idle);
    System.out.printf("[soak] mcp: %d clients, %.1f s, %d tools/call (%.0f calls/s), %d errors; peak RSS %d MiB;"
            + " right after: %s; settled: %s%n",
        CLIENTS, load.seconds(), load.units(), load.units() / load.seconds(), load.errors().size(),
        load.peakRssKib() / 1024, loaded, after);

    assertThat(load.errors()).as("errors (%d)", load.errors().size()).isEmpty();
    assertThat(load.units()).isGreaterThanOrEqualTo(CLIENTS);
    assertThat(after.descendants).as("the server's descendants (idle: %s); the server's log (its agents' warnings"
            + " included):%n%s", idle.descendants, logTail())
        .isEqualTo(idle.descendants);
    assertThat(after.fds).as("server fds (idle %d)", idle.fds).isLessThanOrEqualTo(idle.fds + FD_TOLERANCE);
    assertThat(after.threads).as("server threads (idle %d)", idle.threads)
        .isLessThanOrEqualTo(idle.threads + THREAD_TOLERANCE);
    assertThat(Math.max(load.peakRssKib(), loaded.rssKib)).as("server peak RSS in KiB (bound: 256 MiB heap + 256 MiB)")
        .isLessThan(RSS_BOUND_KIB);
    JsonNode running = call("listProcesses", "{\"status\":\"running\"}");
    assertThat(running.path("structuredContent").path("processes").size()).as("running processes: %s", running)
        .isZero();
  }

  /** The last 50 lines of the server's stderr, for a failure message (the directory is deleted after the test). */
  private static String logTail() throws IOException {
    List<String> lines = Files.readAllLines(log);
    return String.join("\n", lines.subList(Math.max(0, lines.size() - 50), lines.size()));
  }

  /** One unit of work, chosen by client and iteration; returns how many tools/call it made. */
  private static int operation(int client, int i) throws IOException {
    String tag = client + "-" + i;
    switch ((client + i) % 4) {
      case 0, 1 -> {
        JsonNode r = call("exec", "{\"command\":\"echo " + tag + "\"}");
        JsonNode s = r.path("structuredContent");
        check(s.path("exitCode").asInt(-1) == 0 && s.path("stdout").asText().equals(tag + "\n"), r);
        return 1;
      }
      case 2 -> {
        JsonNode r = call("exec", "{\"argv\":[\"sh\",\"-c\",\"echo " + tag + " >&2; exit 4\"]}");
        JsonNode s = r.path("structuredContent");
        // a failed command is a tool result with isError (the model sees the exit code), not a protocol error
        if (!(r.path("isError").asBoolean() && s.path("exitCode").asInt(-1) == 4
            && s.path("stderr").asText().equals(tag + "\n"))) {
          throw new AssertionError("unexpected result " + r);
        }
        return 1;
      }
      default -> {
        String id = "p-" + tag;
        JsonNode started = call("startProcess",
            "{\"processId\":\"" + id + "\",\"command\":\"echo up-" + tag + "; exec sleep 60\"}");
        check(started.path("structuredContent").path("process").path("id").asText().equals(id), started);
        // Kill only once it printed: a command killed before its first line has no output to
        // find (isolated, its bubblewrap takes a few ms to start, more under this load).
        int calls = 1;
        JsonNode logs;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        do {
          logs = call("getProcessLogs", "{\"processId\":\"" + id + "\"}");
          calls++;
          check(System.nanoTime() < deadline, logs);
        } while (!logs.path("structuredContent").path("stdout").asText().contains("up-" + tag));
        JsonNode killed = call("killProcess", "{\"processId\":\"" + id + "\",\"signal\":\"SIGKILL\"}");
        check(!killed.path("isError").asBoolean(), killed);
        logs = call("getProcessLogs", "{\"processId\":\"" + id + "\"}");
        check(logs.toString().contains("up-" + tag), logs);
        return calls + 2;
      }
    }
  }

  private static void check(boolean ok, JsonNode result) {
    if (!ok || result.path("isError").asBoolean()) {
      throw new AssertionError("unexpected result " + result);
    }
  }

  /** Back within the tolerances of {@code idle}, or, without it (the baseline), 5 s without a descriptor or thread appearing. */
  private static Snapshot settle(Snapshot idle) throws InterruptedException {
    return ProcStats.settle(Snapshot.take(), Snapshot::take,
        (previous, s) -> s.fds == previous.fds && s.threads <= previous.threads,
        (s, quiet) -> idle == null ? quiet >= 5 : s.descendants.equals(idle.descendants)
            && s.fds <= idle.fds + FD_TOLERANCE && s.threads <= idle.threads + THREAD_TOLERANCE);
  }

  private record Snapshot(long fds, long threads, long rssKib, Map<String, Integer> descendants) {
    static Snapshot take() {
      long pid = server.pid();
      return new Snapshot(ProcStats.count(pid, "fd"), ProcStats.count(pid, "task"), ProcStats.rssKib(pid),
          ProcStats.descendantsByName(pid));
    }

    @Override
    public String toString() {
      return "fds " + fds + ", threads " + threads + ", RSS " + rssKib / 1024 + " MiB, descendants " + descendants;
    }
  }

  private static String initialize() throws IOException {
    String[] response = exchange("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
        + "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"soak\","
        + "\"version\":\"1\"}}}", null);
    Matcher m = Pattern.compile("(?i)mcp-session-id: (\\S+)").matcher(response[0]);
    assertThat(m.find()).as("session id in %s", response[0]).isTrue();
    return m.group(1);
  }

  /** A tools/call; returns its result, or throws with what came instead. */
  private static JsonNode call(String tool, String arguments) throws IOException {
    String body = "{\"jsonrpc\":\"2.0\",\"id\":" + ids.incrementAndGet() + ",\"method\":\"tools/call\","
        + "\"params\":{\"name\":\"" + tool + "\",\"arguments\":" + arguments + "}}";
    String[] r = exchange(body, session);
    for (String line : r[1].split("\n")) {
      String json = line.startsWith("data: ") ? line.substring(6) : line;
      if (json.startsWith("{") && json.contains("\"result\"")) {
        return MAPPER.readTree(json).path("result");
      }
    }
    throw new IOException("no result for " + tool + ": " + r[0] + r[1]);
  }

  /** Head and body of one request on its own connection. */
  private static String[] exchange(String body, String sessionId) throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    String head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + TOKEN + "\r\n"
        + "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
        + (sessionId == null ? "" : "Mcp-Session-Id: " + sessionId + "\r\nMCP-Protocol-Version: 2025-06-18\r\n")
        + "Content-Length: " + bytes.length + "\r\nConnection: close\r\n\r\n";
    try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
      s.setSoTimeout(60_000);
      OutputStream out = s.getOutputStream();
      out.write(head.getBytes(StandardCharsets.US_ASCII));
      out.write(bytes);
      out.flush();
      InputStream in = s.getInputStream();
      ByteArrayOutputStream h = new ByteArrayOutputStream();
      int state = 0;
      for (int b; state < 4 && (b = in.read()) >= 0; ) {
        h.write(b);
        state = (b == '\r' && (state == 0 || state == 2)) || (b == '\n' && (state == 1 || state == 3)) ? state + 1 : 0;
      }
      String responseHead = h.toString(StandardCharsets.ISO_8859_1);
      if (!responseHead.startsWith("HTTP/1.1 200")) {
        throw new IOException("HTTP status " + responseHead.lines().findFirst().orElse("(none)"));
      }
      BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
      StringBuilder text = new StringBuilder();
      for (String line; (line = r.readLine()) != null; ) {
        text.append(line).append('\n');
        if (line.contains("\"result\"") || line.contains("\"error\"")) {
          break; // the answer; an SSE stream may stay open a moment longer
        }
      }
      return new String[] {responseHead, text.toString()};
    }
  }
}
