package dev.sandboxsdk.mcp;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;

/**
 * A {@code java -jar sandbox-mcp.jar} child process and an MCP client of it, over stdio or over
 * Streamable HTTP, as a real client talks to it: initialize, then tools/call. Results are the
 * CallToolResult objects.
 */
abstract class JarClient implements AutoCloseable {
  static final ObjectMapper MAPPER = new ObjectMapper();

  /** {@code bytes} random bytes as hex: unique names and secrets for the provider tests. */
  static String randomHex(int bytes) {
    byte[] b = new byte[bytes];
    new java.security.SecureRandom().nextBytes(b);
    return java.util.HexFormat.of().formatHex(b);
  }

  /** The SHA-256 of {@code s}'s UTF-8 bytes in hex, as {@code sha256sum} prints it. */
  static String sha256Hex(String s) throws java.security.NoSuchAlgorithmException {
    return java.util.HexFormat.of().formatHex(
        java.security.MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8)));
  }
  static final Duration CALL_WAIT = Duration.ofSeconds(120);

  final Process process;
  final Path stderr;
  final AtomicInteger ids = new AtomicInteger();

  private JarClient(Process process, Path stderr) {
    this.process = process;
    this.stderr = stderr;
  }

  /** Starts the jar with {@code args} and initializes a session: over stdio, or over HTTP with {@code http}. */
  static JarClient start(boolean http, Path dir, List<String> args, Map<String, String> env) throws Exception {
    JarClient c = http ? Http.start(dir, args, env) : Stdio.start(dir, args, env);
    c.initialize();
    return c;
  }

  static Process launch(Path dir, List<String> args, Map<String, String> env, Path err) throws IOException {
    String jar = System.getProperty("mcp.jar");
    assertThat(jar).as("system property mcp.jar (set by failsafe)").isNotNull();
    String java = ProcessHandle.current().info().command()
        .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    List<String> command = new ArrayList<>(List.of(java, "-Xmx256m", "-jar", jar));
    command.addAll(args);
    ProcessBuilder pb = new ProcessBuilder(command).directory(dir.toFile()).redirectError(err.toFile());
    pb.environment().remove("SANDBOX_MCP_TOKEN");
    pb.environment().remove("SANDBOX_AGENT_TOKEN");
    pb.environment().putAll(env);
    return pb.start();
  }

  abstract String transport();

  abstract JsonNode request(String method, ObjectNode params) throws Exception;

  abstract void notify(String method) throws Exception;

  /** Ends the server as its client would: closes stdin, or sends SIGTERM to an HTTP server; waits for it to exit. */
  abstract void stop() throws Exception;

  /** Initializes a session and returns the InitializeResult. */
  JsonNode initialize() throws Exception {
    ObjectNode p = MAPPER.createObjectNode().put("protocolVersion", "2025-11-25");
    p.putObject("capabilities");
    p.putObject("clientInfo").put("name", "LifecycleWorkflowIT").put("version", "1");
    JsonNode r = request("initialize", p);
    assertThat(r.path("protocolVersion").asText()).isEqualTo("2025-11-25");
    notify("notifications/initialized");
    return r;
  }

  /** Calls a tool and returns its CallToolResult. */
  JsonNode call(String tool, ObjectNode arguments) throws Exception {
    ObjectNode p = MAPPER.createObjectNode().put("name", tool);
    p.set("arguments", arguments);
    return request("tools/call", p);
  }

  String stderr() throws IOException {
    return Files.readString(stderr, StandardCharsets.UTF_8);
  }

  static ObjectMapper mapper() {
    return MAPPER;
  }

  static ObjectNode message(int id, String method, ObjectNode params) {
    ObjectNode m = MAPPER.createObjectNode().put("jsonrpc", "2.0");
    if (id >= 0) {
      m.put("id", id);
    }
    m.put("method", method);
    if (params != null) {
      m.set("params", params);
    }
    return m;
  }

  static JsonNode result(String method, JsonNode response) {
    assertThat(response.has("error")).as("%s: %s", method, response).isFalse();
    return response.get("result");
  }

  @Override
  public void close() throws IOException {
    if (process.isAlive()) {
      try {
        stop();
      } catch (Exception e) {
        process.destroyForcibly();
      }
    }
    if (!process.isAlive() && process.exitValue() != 0 && process.exitValue() != 143) {
      System.err.println("[it] server stderr:\n" + stderr().lines().limit(80).collect(Collectors.joining("\n")));
    }
  }

  void awaitExit() throws InterruptedException {
    if (!process.waitFor(90, TimeUnit.SECONDS)) {
      process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      throw new AssertionError(transport() + " server did not exit within 90 s");
    }
  }

  /** Over stdin/stdout, one JSON-RPC message per line. */
  static final class Stdio extends JarClient {
    private final OutputStream stdin;
    private final Map<Integer, CompletableFuture<JsonNode>> pending = new ConcurrentHashMap<>();

    private Stdio(Process process, Path stderr) {
      super(process, stderr);
      this.stdin = process.getOutputStream();
      Thread reader = new Thread(this::read, "mcp-stdout");
      reader.setDaemon(true);
      reader.start();
    }

    static Stdio start(Path dir, List<String> args, Map<String, String> env) throws IOException {
      Path err = dir.resolve("stdio-stderr-" + System.nanoTime() + ".log");
      List<String> all = new ArrayList<>(List.of("--stdio"));
      all.addAll(args);
      return new Stdio(launch(dir, all, env, err), err);
    }

    @Override
    String transport() {
      return "stdio";
    }

    private void read() {
      try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(),
          StandardCharsets.UTF_8))) {
        for (String line; (line = in.readLine()) != null; ) {
          JsonNode m = MAPPER.readTree(line);
          if (m.hasNonNull("id")) {
            pending.computeIfAbsent(m.get("id").asInt(), k -> new CompletableFuture<>()).complete(m);
          }
        }
      } catch (IOException e) {
        // the process ended
      } finally {
        pending.values().forEach(f -> f.completeExceptionally(new IOException("the server's stdout ended")));
      }
    }

    @Override
    JsonNode request(String method, ObjectNode params) throws Exception {
      int id = ids.incrementAndGet();
      CompletableFuture<JsonNode> answer = pending.computeIfAbsent(id, k -> new CompletableFuture<>());
      send(message(id, method, params));
      return result(method, answer.get(CALL_WAIT.toSeconds(), TimeUnit.SECONDS));
    }

    @Override
    void notify(String method) throws Exception {
      send(message(-1, method, null));
    }

    private synchronized void send(ObjectNode m) throws IOException {
      stdin.write((MAPPER.writeValueAsString(m) + "\n").getBytes(StandardCharsets.UTF_8));
      stdin.flush();
    }

    @Override
    void stop() throws Exception {
      stdin.close();
      awaitExit();
      assertThat(process.exitValue()).as("stdio server's exit status after stdin closed").isZero();
    }
  }

  /** Over Streamable HTTP with a bearer token; answers come as JSON or as an SSE stream. */
  static final class Http extends JarClient {
    private static final String TOKEN = "lifecycle-workflow-token-0123456789";
    private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(30)).build();
    private final URI endpoint;
    private String session;

    private Http(Process process, Path stderr, URI endpoint) {
      super(process, stderr);
      this.endpoint = endpoint;
    }

    static Http start(Path dir, List<String> args, Map<String, String> env) throws Exception {
      Path err = dir.resolve("http-stderr-" + System.nanoTime() + ".log");
      Path token = Files.writeString(dir.resolve("token-" + System.nanoTime()), TOKEN + "\n");
      List<String> all = new ArrayList<>(List.of("--http", "--port", "0", "--token-file", token.toString()));
      all.addAll(args);
      Process p = launch(dir, all, env, err);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (System.nanoTime() < deadline) {
        String ready = Files.readString(err, StandardCharsets.UTF_8).lines()
            .filter(l -> l.startsWith("SANDBOX_MCP_READY ")).findFirst().orElse(null);
        if (ready != null) {
          return new Http(p, err, URI.create(ready.substring("SANDBOX_MCP_READY ".length()).strip()));
        }
        if (!p.isAlive()) {
          throw new AssertionError("the HTTP server exited: " + Files.readString(err, StandardCharsets.UTF_8));
        }
        Thread.sleep(50);
      }
      p.destroyForcibly();
      throw new AssertionError("no SANDBOX_MCP_READY line within 60 s");
    }

    @Override
    String transport() {
      return "http";
    }

    private HttpResponse<String> post(ObjectNode m) throws Exception {
      HttpRequest.Builder b = HttpRequest.newBuilder(endpoint).timeout(CALL_WAIT)
          .header("Authorization", "Bearer " + TOKEN)
          .header("Accept", "application/json, text/event-stream")
          .header("Content-Type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString(MAPPER.writeValueAsString(m)));
      if (session != null) {
        b.header("Mcp-Session-Id", session);
      }
      return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Override
    JsonNode request(String method, ObjectNode params) throws Exception {
      int id = ids.incrementAndGet();
      HttpResponse<String> r = post(message(id, method, params));
      assertThat(r.statusCode()).as("%s: %s", method, r.body()).isEqualTo(200);
      if (session == null) {
        session = r.headers().firstValue("Mcp-Session-Id").orElse(null);
      }
      String type = r.headers().firstValue("Content-Type").orElse("");
      if (type.startsWith("application/json")) {
        return result(method, MAPPER.readTree(r.body()));
      }
      // text/event-stream: the response is the data of the event whose message has our id
      for (String event : r.body().split("\n\n")) {
        StringBuilder data = new StringBuilder();
        for (String line : event.split("\n")) {
          if (line.startsWith("data:")) {
            data.append(line.substring(line.startsWith("data: ") ? 6 : 5));
          }
        }
        if (data.length() > 0) {
          JsonNode m = MAPPER.readTree(data.toString());
          if (m.path("id").asInt(-1) == id) {
            return result(method, m);
          }
        }
      }
      throw new AssertionError("no response to " + method + " in " + r.body());
    }

    @Override
    void notify(String method) throws Exception {
      assertThat(post(message(-1, method, null)).statusCode()).isEqualTo(202);
    }

    @Override
    void stop() throws Exception {
      process.destroy(); // SIGTERM, as a service manager stops it
      awaitExit();
    }
  }
}
