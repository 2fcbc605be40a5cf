package dev.sandboxsdk.agent;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandboxsdk.testkit.Await;
import dev.sandboxsdk.testkit.ProcStats;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;

/**
 * The packaged agent in a child JVM, so that a test can count its file descriptors and threads in
 * /proc and give it its own HTTP limits (the JDK server reads them once per JVM). Requests go
 * over raw sockets with {@code Connection: close}, so the test's own requests leave no
 * keep-alive connection behind in the count.
 */
final class ChildAgent implements AutoCloseable {
  static final String TOKEN = "child-token-0123456789";

  final Process process;
  final long pid;
  final int port;
  final Path dir;

  private ChildAgent(Process process, long pid, int port, Path dir) {
    this.process = process;
    this.pid = pid;
    this.port = port;
    this.dir = dir;
  }

  /** Starts {@code prefix... java -jar container-agent.jar --port 0 ... args} and waits until it is ready. */
  static ChildAgent start(List<String> prefix, String... args) throws IOException {
    Path dir = Files.createTempDirectory("child-agent");
    List<String> cmd = new ArrayList<>(prefix);
    cmd.addAll(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx256m",
        "-jar", AgentProcessIT.JAR.toAbsolutePath().toString(),
        "--port", "0", "--bind", "127.0.0.1", "--workspace", dir.resolve("ws").toString()));
    cmd.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(dir.resolve("agent.log").toFile());
    pb.environment().put(Main.TOKEN_ENV, TOKEN);
    Process p = pb.start();
    BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    String line = out.readLine();
    assertThat(line).as("ready line; agent log: %s", dir.resolve("agent.log")).isNotNull().startsWith(Main.READY_PREFIX);
    var ready = TestAgent.JSON.readTree(line.substring(Main.READY_PREFIX.length()));
    return new ChildAgent(p, ready.get("pid").asLong(), ready.get("port").asInt(), dir);
  }

  /** Open file descriptors of the agent. */
  int fds() {
    return (int) ProcStats.fds(pid);
  }

  /** Threads of the agent. */
  int threads() {
    return (int) ProcStats.threads(pid);
  }

  /**
   * Threads of the agent, without the process manager's pools ("agent-io" pumps and the JDK's
   * "process reaper"): they grow with the number of processes, not of connections, and idle out
   * after 60 s.
   */
  int connectionThreads() {
    return threadCounts().entrySet().stream()
        .filter(e -> !e.getKey().startsWith("agent-io") && !e.getKey().startsWith("process reaper"))
        .mapToInt(java.util.Map.Entry::getValue).sum();
  }

  /** Names of the agent's threads with how many have each (numbers in names dropped), for failure messages. */
  String threadNames() {
    return threadCounts().toString();
  }

  private java.util.Map<String, Integer> threadCounts() {
    return ProcStats.threadNames(pid);
  }

  /** Resident memory of the agent in KiB. */
  long rssKib() {
    return ProcStats.rssKib(pid);
  }

  Socket connect() throws IOException {
    Socket s = new Socket();
    s.connect(new InetSocketAddress("127.0.0.1", port), 30_000);
    return s;
  }

  /** A complete request with the token and {@code Connection: close}; {@code body} may be null. */
  static String request(String method, String path, String body) {
    StringBuilder r = new StringBuilder(method).append(' ').append(path).append(" HTTP/1.1\r\n")
        .append("Host: agent\r\nAuthorization: Bearer ").append(TOKEN).append("\r\nConnection: close\r\n");
    if (body != null) {
      r.append("Content-Type: application/json\r\nContent-Length: ")
          .append(body.getBytes(StandardCharsets.UTF_8).length).append("\r\n\r\n").append(body);
    } else {
      r.append("\r\n");
    }
    return r.toString();
  }

  /** Sends {@code request} on a new connection and returns the whole response, read until the agent closes. */
  String call(String request, int timeoutMs) throws IOException {
    try (Socket s = connect()) {
      s.setSoTimeout(timeoutMs);
      s.getOutputStream().write(request.getBytes(StandardCharsets.UTF_8));
      return readAll(s.getInputStream());
    }
  }

  String call(String method, String path, String body) throws IOException {
    String response = call(request(method, path, body), 30_000);
    assertThat(response).as(method + " " + path).startsWith("HTTP/1.1 200");
    return response;
  }

  /**
   * Like {@link #call(String, String, String)}, but a connection the agent refuses because it holds
   * its connection cap (closed without a byte) is retried for up to {@code timeoutMs}: right after a
   * flood of stalled clients that is the agent working as designed, not a failure.
   */
  String callOnceAdmitted(String method, String path, String body, long timeoutMs) throws IOException,
      InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    String response;
    while (true) {
      try {
        response = call(request(method, path, body), 30_000);
      } catch (java.net.SocketException refused) { // a reset: the agent closed before our request arrived
        response = "";
      }
      if (!response.isEmpty() || System.nanoTime() > deadline) {
        break;
      }
      Thread.sleep(100);
    }
    assertThat(response).as(method + " " + path).startsWith("HTTP/1.1 200");
    return response;
  }

  static String readAll(InputStream in) throws IOException {
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    in.transferTo(buf);
    return buf.toString(StandardCharsets.UTF_8);
  }

  /** Polls {@code condition} every 100 ms until it holds or {@code timeoutMs} passed; returns whether it held. */
  static boolean await(long timeoutMs, BooleanSupplier condition) throws InterruptedException {
    return Await.until(Duration.ofMillis(timeoutMs), Duration.ofMillis(100), condition);
  }


  @Override
  public void close() throws InterruptedException {
    process.destroy();
    if (!process.waitFor(15, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      process.waitFor(15, TimeUnit.SECONDS);
    }
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
    } catch (IOException ignored) {
      // best effort: a temp directory
    }
  }
}
