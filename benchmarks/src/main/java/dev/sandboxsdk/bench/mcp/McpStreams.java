package dev.sandboxsdk.bench.mcp;

import static dev.sandboxsdk.bench.mcp.McpBench.streamBytes;
import static dev.sandboxsdk.bench.mcp.McpMessages.JSON;
import static dev.sandboxsdk.bench.mcp.McpMessages.checkExec;
import static dev.sandboxsdk.bench.mcp.McpMessages.execParams;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sandboxsdk.Command;
import dev.sandboxsdk.ExecEvent;
import dev.sandboxsdk.ExecOptions;
import dev.sandboxsdk.local.LocalSandbox;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The streaming part of {@link McpBench}: the SDK's execStream drained, and one exec of a large
 * output over stdio with and without a progressToken.
 */
final class McpStreams {
  private McpStreams() {}

  /** The exit code of {@code command} run through SDK execStream, its events drained. */
  static int streamExit(LocalSandbox sdk, Command command) {
    CompletableFuture<Integer> done = new CompletableFuture<>();
    sdk.execStream(command, ExecOptions.defaults()).subscribe(new Flow.Subscriber<>() {
      public void onSubscribe(Flow.Subscription s) { s.request(Long.MAX_VALUE); }
      public void onNext(ExecEvent e) {
        if (e instanceof ExecEvent.Complete c) {
          done.complete(c.exitCode());
        }
      }
      public void onError(Throwable t) { done.completeExceptionally(t); }
      public void onComplete() { done.complete(-1); }
    });
    try {
      return done.get(60, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException("execStream: " + e, e);
    }
  }

  /** {seconds, bytes, events} of SDK execStream with a draining subscriber. */
  static double[] streamSdk(LocalSandbox sdk, String command) throws Exception {
    AtomicLong bytes = new AtomicLong();
    AtomicLong events = new AtomicLong();
    CompletableFuture<Integer> done = new CompletableFuture<>();
    long t0 = System.nanoTime();
    sdk.execStream(command).subscribe(new Flow.Subscriber<>() {
      public void onSubscribe(Flow.Subscription s) { s.request(Long.MAX_VALUE); }
      public void onNext(ExecEvent e) {
        if (e instanceof ExecEvent.Stdout o) {
          bytes.addAndGet(o.bytes());
          events.incrementAndGet();
        } else if (e instanceof ExecEvent.Complete c) {
          done.complete(c.exitCode());
        }
      }
      public void onError(Throwable t) { done.completeExceptionally(t); }
      public void onComplete() { done.complete(-1); }
    });
    int exit = done.get(300, TimeUnit.SECONDS);
    double s = (System.nanoTime() - t0) / 1e9;
    if (exit != 0 || bytes.get() != streamBytes) {
      throw new IllegalStateException("SDK stream: exit " + exit + ", " + bytes.get() + " of " + streamBytes + " B");
    }
    return new double[] {s, bytes.get(), events.get()};
  }

  static final class StreamRun {
    double seconds;
    double firstProgressMs = -1;
    int notifications;
    int textNotifications;
    long progressTextBytes;
    long lastProgress;
    long wireChars;
    long resultChars;
    long stdoutBytes;
    boolean truncated;
  }

  static StreamRun median(List<StreamRun> runs) {
    List<StreamRun> s = new ArrayList<>(runs);
    s.sort((a, b) -> Double.compare(a.seconds, b.seconds));
    return s.get((s.size() - 1) / 2);
  }

  static int progressTokens;

  static StreamRun streamStdio(StdioServer s, String command, boolean progress) throws Exception {
    StreamRun run = new StreamRun();
    String token = progress ? "bench-" + (++progressTokens) : null;
    long t0 = System.nanoTime();
    long wireBefore = s.wireChars;
    JsonNode response = s.call("tools/call", execParams(JSON.createObjectNode().put("command", command), token), n -> {
      JsonNode p = n.path("params");
      if (!p.path("progressToken").asText("").equals(token)) {
        return;
      }
      if (run.notifications++ == 0) {
        run.firstProgressMs = (System.nanoTime() - t0) / 1e6;
      }
      run.lastProgress = p.path("progress").asLong();
      if (p.has("message")) {
        run.textNotifications++;
        run.progressTextBytes += p.get("message").asText().getBytes(StandardCharsets.UTF_8).length;
      }
    });
    run.seconds = (System.nanoTime() - t0) / 1e9;
    run.wireChars = s.wireChars - wireBefore;
    run.resultChars = s.lastLineChars;
    JsonNode r = checkExec(response);
    run.stdoutBytes = r.path("stdoutBytes").asLong();
    run.truncated = r.path("truncated").asBoolean();
    if (run.stdoutBytes != streamBytes) {
      throw new IllegalStateException("stdio stream: stdoutBytes " + run.stdoutBytes + " of " + streamBytes);
    }
    if (progress && run.notifications == 0 || !progress && run.notifications != 0) {
      throw new IllegalStateException("stdio stream: " + run.notifications + " progress notifications (progress " + progress + ")");
    }
    return run;
  }
}
