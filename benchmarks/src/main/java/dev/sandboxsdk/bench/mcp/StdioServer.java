package dev.sandboxsdk.bench.mcp;

import static dev.sandboxsdk.bench.mcp.McpMessages.JSON;
import static dev.sandboxsdk.bench.mcp.McpMessages.abbreviate;
import static dev.sandboxsdk.bench.mcp.McpMessages.initializeParams;
import static dev.sandboxsdk.bench.mcp.McpMessages.message;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.bench.mcp.McpProcesses.Tail;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/** An MCP client over the stdio of a {@code --stdio} server it starts. */
final class StdioServer implements AutoCloseable {
  final Process process;
  final OutputStream in;
  final BufferedReader out;
  final Tail err;
  long nextId = 1;
  long wireChars;
  long lastLineChars;
  private long exitNanos = -1;
  private volatile boolean async;
  private final Map<Long, CompletableFuture<JsonNode>> pending = new ConcurrentHashMap<>();
  private final AtomicLong asyncIds = new AtomicLong(1_000_000);

  private StdioServer(Process p) {
    process = p;
    in = p.getOutputStream();
    out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8), 1 << 16);
    err = new Tail(p.getErrorStream(), "stdio-stderr-" + p.pid(), null);
  }

  static StdioServer start(String... extraArgs) throws IOException {
    List<String> args = new ArrayList<>(List.of("--stdio"));
    args.addAll(List.of(extraArgs));
    return new StdioServer(McpProcesses.launch(McpProcesses.serverCommand(args.toArray(new String[0]))));
  }

  long pid() {
    return process.pid();
  }

  void initialize() {
    JsonNode r = call("initialize", initializeParams(), null);
    if (!r.has("result")) {
      throw new IllegalStateException("initialize failed: " + r);
    }
    send(message(null, "notifications/initialized", null));
  }

  synchronized void send(ObjectNode m) {
    try {
      in.write((JSON.writeValueAsString(m) + "\n").getBytes(StandardCharsets.UTF_8));
      in.flush();
    } catch (IOException e) {
      throw new IllegalStateException("cannot write to the stdio server: " + e + "; its stderr:\n" + err, e);
    }
  }

  /** A request answered on this thread: reads lines until its response, handing notifications to {@code onNote}. */
  JsonNode call(String method, ObjectNode params, Consumer<JsonNode> onNote) {
    if (async) {
      throw new IllegalStateException("the reader thread owns stdout now");
    }
    long id = nextId++;
    send(message(id, method, params));
    try {
      for (String line; (line = out.readLine()) != null; ) {
        wireChars += line.length() + 1;
        JsonNode m = JSON.readTree(line);
        if (m.has("id") && !m.has("method")) {
          if (m.get("id").asLong() != id) {
            throw new IllegalStateException("response to an unexpected id: " + abbreviate(line));
          }
          lastLineChars = line.length() + 1;
          return m;
        }
        if (onNote != null && "notifications/progress".equals(m.path("method").asText())) {
          onNote.accept(m);
        }
      }
    } catch (IOException e) {
      throw new IllegalStateException("reading the stdio server: " + e + "; its stderr:\n" + err, e);
    }
    throw new IllegalStateException("the stdio server closed stdout; its stderr:\n" + err);
  }

  /** From now on a reader thread dispatches responses, so calls may overlap. */
  void startReader() {
    async = true;
    Thread t = new Thread(() -> {
      try {
        for (String line; (line = out.readLine()) != null; ) {
          JsonNode m = JSON.readTree(line);
          if (m.has("id") && !m.has("method")) {
            CompletableFuture<JsonNode> f = pending.remove(m.get("id").asLong());
            if (f != null) {
              f.complete(m);
            }
          }
        }
      } catch (IOException e) {
        // closed
      }
      pending.values().forEach(f -> f.completeExceptionally(new IllegalStateException("stdout closed")));
    }, "stdio-reader-" + process.pid());
    t.setDaemon(true);
    t.start();
  }

  CompletableFuture<JsonNode> callAsync(String method, ObjectNode params) {
    long id = asyncIds.incrementAndGet();
    CompletableFuture<JsonNode> f = new CompletableFuture<>();
    pending.put(id, f);
    send(message(id, method, params));
    return f;
  }

  /** Closes stdin and waits for the server to exit; returns the nanoseconds that took. */
  long shutdown() {
    if (exitNanos < 0) {
      exitNanos = McpProcesses.stop(process, true);
    }
    return exitNanos;
  }

  @Override
  public void close() {
    shutdown();
  }
}
