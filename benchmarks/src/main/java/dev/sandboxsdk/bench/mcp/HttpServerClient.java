package dev.sandboxsdk.bench.mcp;

import static dev.sandboxsdk.bench.mcp.McpMessages.JSON;
import static dev.sandboxsdk.bench.mcp.McpMessages.PROTOCOL;
import static dev.sandboxsdk.bench.mcp.McpMessages.abbreviate;
import static dev.sandboxsdk.bench.mcp.McpMessages.initializeParams;
import static dev.sandboxsdk.bench.mcp.McpMessages.message;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.bench.mcp.McpProcesses.ProcessOutputDrain;
import dev.sandboxsdk.bench.mcp.McpProcesses.Tail;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/** An MCP client of a {@code --http --port 0} server it starts: JDK HttpClient, HTTP/1.1. */
final class HttpServerClient implements AutoCloseable {
  static final String TOKEN = "mcp-bench-token-0123456789";

  final Process process;
  final Tail err;
  final URI url;
  final long launchToReady;
  final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(10)).build();
  final AtomicLong ids = new AtomicLong();
  volatile String session;

  private HttpServerClient(Process p, Tail err, URI url, long launchToReady) {
    this.process = p;
    this.err = err;
    this.url = url;
    this.launchToReady = launchToReady;
  }

  static HttpServerClient start() throws Exception {
    Path tokenFile = McpBench.tmp.resolve("token");
    Files.writeString(tokenFile, TOKEN);
    long t0 = System.nanoTime();
    Process p = McpProcesses.launch(McpProcesses.serverCommand("--http", "--port", "0", "--token-file", tokenFile.toString()));
    p.getOutputStream().close(); // the HTTP server does not read stdin
    Tail err = new Tail(p.getErrorStream(), "http-stderr-" + p.pid(), "SANDBOX_MCP_READY ");
    String ready;
    try {
      ready = err.match.get(60, TimeUnit.SECONDS);
    } catch (Exception e) {
      McpProcesses.stop(p, false);
      throw new IllegalStateException("the HTTP server did not get ready: " + e + "; its stderr:\n" + err);
    }
    long took = System.nanoTime() - t0;
    new ProcessOutputDrain(p.getInputStream(), "http-stdout-" + p.pid());
    return new HttpServerClient(p, err, URI.create(ready.substring("SANDBOX_MCP_READY ".length()).strip()), took);
  }

  long pid() {
    return process.pid();
  }

  HttpRequest.Builder base() {
    HttpRequest.Builder b = HttpRequest.newBuilder(url).timeout(Duration.ofSeconds(120))
        .header("Authorization", "Bearer " + TOKEN)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream");
    if (session != null) {
      b.header("Mcp-Session-Id", session).header("MCP-Protocol-Version", PROTOCOL);
    }
    return b;
  }

  HttpResponse<String> post(ObjectNode m) {
    try {
      return client.send(base().POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(m))).build(),
          HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new IllegalStateException("HTTP POST failed: " + e + "; server stderr:\n" + err, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  void initialize() {
    HttpResponse<String> r = post(message(ids.incrementAndGet(), "initialize", initializeParams()));
    session = r.headers().firstValue("Mcp-Session-Id").orElse(null);
    if (r.statusCode() != 200 || session == null) {
      throw new IllegalStateException("initialize: HTTP " + r.statusCode() + " " + r.body());
    }
    HttpResponse<String> n = post(message(null, "notifications/initialized", null));
    if (n.statusCode() != 202) {
      throw new IllegalStateException("notifications/initialized: HTTP " + n.statusCode() + " " + n.body());
    }
  }

  /** A request; a {@code text/event-stream} answer is read to its end and its response message returned. */
  JsonNode request(String method, ObjectNode params) {
    long id = ids.incrementAndGet();
    HttpResponse<String> r = post(message(id, method, params));
    if (r.statusCode() != 200) {
      throw new IllegalStateException(method + ": HTTP " + r.statusCode() + " " + abbreviate(r.body()));
    }
    try {
      if (!r.headers().firstValue("Content-Type").orElse("").startsWith("text/event-stream")) {
        return JSON.readTree(r.body());
      }
      for (String event : r.body().split("\n\n")) {
        for (String line : event.split("\n")) {
          if (line.startsWith("data:")) {
            JsonNode m = JSON.readTree(line.substring(5).strip());
            if (m.path("id").asLong(-1) == id && !m.has("method")) {
              return m;
            }
          }
        }
      }
    } catch (IOException e) {
      throw new IllegalStateException("unreadable answer to " + method + ": " + abbreviate(r.body()), e);
    }
    throw new IllegalStateException("no response to " + method + " in the event stream: " + abbreviate(r.body()));
  }

  void deleteSession() throws Exception {
    HttpResponse<Void> r = client.send(base().DELETE().build(), HttpResponse.BodyHandlers.discarding());
    if (r.statusCode() != 204) {
      System.out.println("warning: DELETE of the session gave HTTP " + r.statusCode());
    }
  }

  @Override
  public void close() {
    McpProcesses.stop(process, false); // SIGTERM: the server's shutdown hook stops its sandboxes
  }
}
