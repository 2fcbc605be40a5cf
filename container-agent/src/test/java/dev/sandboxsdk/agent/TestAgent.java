package dev.sandboxsdk.agent;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A real agent started in this JVM on a free loopback port with a token and a temporary
 * workspace, plus a JDK {@link HttpClient} to talk to it. Close it to stop the agent and every
 * process it started.
 */
final class TestAgent implements AutoCloseable, BeforeAllCallback, AfterAllCallback {
  static final String TOKEN = "test-token-0123456789";
  static final ObjectMapper JSON = new ObjectMapper();

  private final Consumer<AgentConfig.Builder> customize;
  AgentServer server;
  Path workspace;
  final HttpClient http = HttpClient.newBuilder()
      .version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(30))
      .build();

  /**
   * An agent for a whole test class: {@code @RegisterExtension static final TestAgent agent = new
   * TestAgent(b -> b.graceMs(1000));} starts before the first test and stops after the last.
   * {@code customize} may change any option (token and workspace are preset).
   */
  TestAgent(Consumer<AgentConfig.Builder> customize) {
    this.customize = customize;
  }

  static TestAgent start() {
    return start(b -> { });
  }

  /** Starts an agent right away, for a test that needs its own. */
  static TestAgent start(Consumer<AgentConfig.Builder> customize) {
    TestAgent agent = new TestAgent(customize);
    agent.boot();
    return agent;
  }

  private void boot() {
    try {
      workspace = Files.createTempDirectory("agent-ws");
      AgentConfig.Builder b = AgentConfig.builder()
          .bind("127.0.0.1").port(0).workspace(workspace).token(TOKEN);
      // -Dsandbox.test.spawn=jdk runs the suite on the fallback spawn (the default is auto).
      String spawn = System.getProperty("sandbox.test.spawn");
      if (spawn != null) {
        b.spawn(spawn);
      }
      customize.accept(b);
      server = AgentServer.start(b.build());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    boot();
  }

  @Override
  public void afterAll(ExtensionContext context) {
    close();
  }

  URI uri(String pathAndQuery) {
    return server.uri().resolve(pathAndQuery);
  }

  HttpRequest.Builder request(String pathAndQuery) {
    return HttpRequest.newBuilder(uri(pathAndQuery))
        .timeout(Duration.ofSeconds(60))
        .header("Authorization", "Bearer " + TOKEN);
  }

  Response get(String path) {
    return send(request(path).GET().build());
  }

  Response delete(String path) {
    return send(request(path).DELETE().build());
  }

  Response post(String path, String json) {
    return send(request(path).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(json)).build());
  }

  Response post(String path, JsonNode json) {
    return post(path, json.toString());
  }

  Response send(HttpRequest request) {
    try {
      HttpResponse<String> r = http.send(request, HttpResponse.BodyHandlers.ofString());
      return new Response(r.statusCode(), r.body().isEmpty() ? null : JSON.readTree(r.body()), r);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** Opens an event stream (POST with a body, or GET when {@code json} is null). */
  SseReader stream(String path, String json) {
    HttpRequest.Builder b = request(path).timeout(Duration.ofMinutes(5));
    b = json == null ? b.GET() : b.header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(json));
    try {
      HttpResponse<InputStream> r = http.send(b.build(), HttpResponse.BodyHandlers.ofInputStream());
      return new SseReader(r);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** The ProcessInfo of a background process. */
  JsonNode processInfo(String id) {
    return get("/api/process/" + id).body().get("process");
  }

  /** Whether a background process has reached a final status. */
  boolean isFinished(String id) {
    String status = processInfo(id).get("status").asText();
    return !status.equals("running") && !status.equals("starting");
  }

  /** Kills and forgets every background process, so tests sharing an agent start clean. */
  void reset() {
    delete("/api/process/kill-all");
    post("/api/process/cleanup", "");
  }

  /** JSON object literal helper: {@code obj("command", "ls", "timeoutMs", 5)}. */
  static String obj(Object... keyValues) {
    var node = JSON.createObjectNode();
    for (int i = 0; i < keyValues.length; i += 2) {
      node.set((String) keyValues[i], JSON.valueToTree(keyValues[i + 1]));
    }
    return node.toString();
  }

  @Override
  public void close() {
    server.close();
    try (Stream<Path> files = Files.walk(workspace)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException ignored) {
      // best effort: a temp directory
    }
  }

  /** A parsed HTTP response. */
  record Response(int status, JsonNode body, HttpResponse<String> raw) {
    String header(String name) {
      return raw.headers().firstValue(name).orElse(null);
    }

    String text(String field) {
      return body.path(field).asText();
    }
  }
}
