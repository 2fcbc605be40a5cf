package dev.sandboxsdk.agent;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The packaged agent started with {@code prefix... java -jar container-agent.jar args...}, as a
 * container entrypoint would start it, talked to with a JDK {@link HttpClient}. Its stderr goes to
 * a file, so a test can read what it said when it stopped.
 */
final class LaunchedAgent implements AutoCloseable {
  static final String TOKEN = "launched-token-0123456789";

  final Process process;
  final long pid;
  final URI url;
  final Path log;
  final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(30)).build();

  private LaunchedAgent(Process process, long pid, URI url, Path log) {
    this.process = process;
    this.pid = pid;
    this.url = url;
    this.log = log;
  }

  /** The agent's command line, before the options a test adds. */
  static List<String> command(List<String> prefix) {
    List<String> cmd = new ArrayList<>(prefix);
    cmd.addAll(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx256m",
        "-jar", AgentProcessIT.JAR.toAbsolutePath().toString(), "--port", "0", "--bind", "127.0.0.1"));
    return cmd;
  }

  /**
   * Starts the agent as nobody (uid 65534, through setpriv, which needs root) with the workspace
   * {@code dir/nobody-ws} and the temporary directory {@code dir/nobody-tmp}, both nobody's, and
   * its log in {@code dir/nobody.log}; {@code args} come after {@code --workspace}.
   */
  static LaunchedAgent startAsNobody(Path dir, String... args) throws IOException {
    Path ws = Files.createDirectories(dir.resolve("nobody-ws"));
    // JUnit's temporary directory is the test user's, mode 700: open the way to the workspace. Only
    // up to dir itself: its parent is the machine's /tmp, which must keep its 1777 (this loop once
    // made it 755, and apt-get then failed on the machine).
    for (Path p = ws; p != null && p.startsWith(dir); p = p.getParent()) {
      Files.setPosixFilePermissions(p, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
    }
    Files.setAttribute(ws, "unix:uid", 65534);
    Path tmp = Files.createDirectories(dir.resolve("nobody-tmp"));
    Files.setAttribute(tmp, "unix:uid", 65534);
    List<String> all = new ArrayList<>(List.of("--workspace", ws.toString()));
    all.addAll(List.of(args));
    return start(List.of("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"),
        Map.of("HOME", ws.toString(), "JAVA_TOOL_OPTIONS", "-Djava.io.tmpdir=" + tmp), dir.resolve("nobody.log"),
        all.toArray(new String[0]));
  }

  /** Starts the agent and returns once it printed its ready line; fails the test if it does not. */
  static LaunchedAgent start(List<String> prefix, Map<String, String> env, Path log, String... args) throws IOException {
    Process p = launch(prefix, env, log, args);
    BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    String line = out.readLine();
    assertThat(line).as("ready line; agent log: %s", readQuietly(log)).isNotNull().startsWith(Main.READY_PREFIX);
    JsonNode ready = TestAgent.JSON.readTree(line.substring(Main.READY_PREFIX.length()));
    return new LaunchedAgent(p, ready.get("pid").asLong(), URI.create(ready.get("url").asText()), log);
  }

  /** Starts the agent without waiting for it, for tests of refused starts. */
  static Process launch(List<String> prefix, Map<String, String> env, Path log, String... args) throws IOException {
    List<String> cmd = command(prefix);
    cmd.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(log.toFile());
    pb.environment().put(Main.TOKEN_ENV, TOKEN);
    pb.environment().putAll(env);
    return pb.start();
  }

  static String readQuietly(Path file) {
    try {
      return Files.readString(file);
    } catch (IOException e) {
      return "(unreadable: " + e + ")";
    }
  }

  HttpRequest.Builder request(String path) {
    return HttpRequest.newBuilder(url.resolve(path)).timeout(Duration.ofSeconds(60))
        .header("Authorization", "Bearer " + TOKEN);
  }

  /** Sends a request and returns the status and JSON body. */
  TestAgent.Response call(String method, String path, String json) {
    HttpRequest.Builder b = request(path);
    if (json != null) {
      b.header("Content-Type", "application/json");
    }
    b.method(method, json == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(json));
    try {
      HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
      return new TestAgent.Response(r.statusCode(), r.body().isEmpty() ? null : TestAgent.JSON.readTree(r.body()), r);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** {@link #call} that requires 200. */
  JsonNode ok(String method, String path, String json) {
    TestAgent.Response r = call(method, path, json);
    assertThat(r.status()).as("%s %s: %s", method, path, r.body()).isEqualTo(200);
    return r.body();
  }

  /** POST /api/execute. */
  JsonNode exec(String json) {
    return ok("POST", "/api/execute", json);
  }

  /** Opens an event stream (POST with a body). */
  SseReader stream(String path, String json) {
    HttpRequest r = request(path).timeout(Duration.ofMinutes(5)).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(json)).build();
    try {
      HttpResponse<InputStream> response = http.send(r, HttpResponse.BodyHandlers.ofInputStream());
      return new SseReader(response);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** Waits for the agent to exit; returns its status, or -1 if it is still running. */
  int awaitExit(long millis) throws InterruptedException {
    return process.waitFor(millis, TimeUnit.MILLISECONDS) ? process.exitValue() : -1;
  }

  @Override
  public void close() throws InterruptedException {
    process.destroy();
    if (!process.waitFor(20, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      process.waitFor(10, TimeUnit.SECONDS);
    }
  }
}
