import dev.sandboxsdk.Command;
import dev.sandboxsdk.ExecEvent;
import dev.sandboxsdk.ExecResult;
import dev.sandboxsdk.LocalSandbox;
import dev.sandboxsdk.Sandbox;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Benchmark of the SDK against the real agent (see docs/performance.md, "SDK"). Run from the
 * repository root with {@code bash sandbox-sdk/bench/run.sh}; it needs the samples jar (SDK,
 * agent and dependencies in one jar) on the classpath.
 *
 * <ol>
 *   <li>LocalSandbox.start() until ready, and close();
 *   <li>exec round trips of {@code true} (argv and shell): the SDK's {@code exec} versus a raw
 *       HTTP/1.1 client on one keep-alive socket, against the same agent, same run;
 *   <li>execStream throughput through the SDK (subscriber with unbounded demand);
 *   <li>200 concurrent execAsync calls.
 * </ol>
 * Percentiles: sorted samples, p-th percentile = sample at index ceil(p*n)-1.
 */
public class SdkBench {
  static int calls = 1000;
  static int warmup = 300;

  public static void main(String[] args) throws Exception {
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--calls": calls = Integer.parseInt(args[++i]); break;
        case "--warmup": warmup = Integer.parseInt(args[++i]); break;
        default: throw new IllegalArgumentException("unknown option " + args[i]);
      }
    }
    System.out.printf(Locale.ROOT, "SdkBench: %s %s, %d cores, calls=%d warmup=%d%n",
        System.getProperty("java.vm.name"), System.getProperty("java.version"),
        Runtime.getRuntime().availableProcessors(), calls, warmup);

    // 1. LocalSandbox startup
    long[] starts = new long[4];
    long[] closes = new long[4];
    for (int i = 0; i < starts.length; i++) {
      long t0 = System.nanoTime();
      LocalSandbox s = LocalSandbox.builder().keepAlive(true).start();
      starts[i] = System.nanoTime() - t0;
      s.exec(Command.of("true"));
      long t1 = System.nanoTime();
      s.close();
      closes[i] = System.nanoTime() - t1;
    }
    System.out.printf(Locale.ROOT, "LocalSandbox.start() to ready: %s%n", stats(starts));
    System.out.printf(Locale.ROOT, "LocalSandbox.close():          %s%n", stats(closes));

    // 2.-4. one agent, started here so the raw client knows the token
    Path ws = Files.createTempDirectory("sdkbench-ws");
    Path tokenFile = Files.createTempFile("sdkbench", ".token");
    Files.writeString(tokenFile, "bench-token");
    String cp = System.getProperty("java.class.path");
    Process agent = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-XX:+UseSerialGC", "-cp", cp, "dev.sandboxsdk.agent.Main", "--port", "0", "--bind", "127.0.0.1",
        "--workspace", ws.toString(), "--token-file", tokenFile.toString(), "--exit-on-stdin-eof")
        .redirectError(ProcessBuilder.Redirect.DISCARD).start();
    BufferedReader out = new BufferedReader(new InputStreamReader(agent.getInputStream(), StandardCharsets.UTF_8));
    String ready = out.readLine();
    String url = ready.replaceAll(".*\"url\":\"([^\"]*)\".*", "$1");
    int port = URI.create(url).getPort();
    try (Sandbox sdk = Sandbox.connect(URI.create(url), "bench-token"); RawClient raw = new RawClient(port)) {
      String argvBody = "{\"argv\":[\"true\"]}";
      String shellBody = "{\"command\":\"true\"}";
      // Alternate blocks so drift on a busy machine hits both sides alike.
      long[] rawArgv = new long[calls];
      long[] sdkArgv = new long[calls];
      long[] rawShell = new long[calls];
      long[] sdkShell = new long[calls];
      for (int i = 0; i < warmup; i++) {
        raw.exec(argvBody);
        sdk.exec(Command.of("true"));
        raw.exec(shellBody);
        sdk.exec("true");
      }
      int block = 50;
      for (int from = 0; from < calls; from += block) {
        int to = Math.min(calls, from + block);
        for (int i = from; i < to; i++) {
          long t0 = System.nanoTime();
          raw.exec(argvBody);
          rawArgv[i] = System.nanoTime() - t0;
        }
        for (int i = from; i < to; i++) {
          long t0 = System.nanoTime();
          ExecResult r = sdk.exec(Command.of("true"));
          sdkArgv[i] = System.nanoTime() - t0;
          if (r.exitCode() != 0) {
            throw new IllegalStateException("true failed: " + r);
          }
        }
        for (int i = from; i < to; i++) {
          long t0 = System.nanoTime();
          raw.exec(shellBody);
          rawShell[i] = System.nanoTime() - t0;
        }
        for (int i = from; i < to; i++) {
          long t0 = System.nanoTime();
          sdk.exec("true");
          sdkShell[i] = System.nanoTime() - t0;
        }
      }
      System.out.printf(Locale.ROOT, "exec argv  true, raw HTTP client: %s%n", stats(rawArgv));
      System.out.printf(Locale.ROOT, "exec argv  true, SDK exec():      %s%n", stats(sdkArgv));
      System.out.printf(Locale.ROOT, "exec shell true, raw HTTP client: %s%n", stats(rawShell));
      System.out.printf(Locale.ROOT, "exec shell true, SDK exec():      %s%n", stats(sdkShell));

      // 3. execStream throughput
      long total = 256L << 20;
      for (int rep = 0; rep < 3; rep++) {
        long t0 = System.nanoTime();
        long[] got = streamBytes(sdk, "yes '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.,;:+' | head -c " + total);
        double s = (System.nanoTime() - t0) / 1e9;
        if (got[0] != total || got[1] != total) {
          throw new IllegalStateException("stream lost bytes: " + Arrays.toString(got));
        }
        System.out.printf(Locale.ROOT, "execStream %d MiB of text through the SDK: %.0f MB/s (%.2f s)%n",
            total >> 20, total / s / 1e6, s);
      }

      // 4. concurrent execAsync
      for (int rep = 0; rep < 2; rep++) {
        long t0 = System.nanoTime();
        List<CompletableFuture<ExecResult>> fs = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
          fs.add(sdk.execAsync(Command.of("true")));
        }
        CompletableFuture.allOf(fs.toArray(new CompletableFuture[0])).get(60, TimeUnit.SECONDS);
        double s = (System.nanoTime() - t0) / 1e9;
        System.out.printf(Locale.ROOT, "200 concurrent execAsync(true): %.2f s, %.0f exec/s%n", s, 200 / s);
      }
    } finally {
      agent.getOutputStream().close(); // --exit-on-stdin-eof
      agent.waitFor(15, TimeUnit.SECONDS);
      agent.destroyForcibly();
    }
  }

  /** Text chars and raw bytes delivered by execStream. */
  static long[] streamBytes(Sandbox sdk, String command) throws Exception {
    AtomicLong bytes = new AtomicLong();
    AtomicLong chars = new AtomicLong();
    CompletableFuture<Void> done = new CompletableFuture<>();
    sdk.execStream(command).subscribe(new Flow.Subscriber<>() {
      public void onSubscribe(Flow.Subscription s) { s.request(Long.MAX_VALUE); }
      public void onNext(ExecEvent e) {
        if (e instanceof ExecEvent.Stdout o) {
          bytes.addAndGet(o.bytes());
          chars.addAndGet(o.text().length());
        }
      }
      public void onError(Throwable t) { done.completeExceptionally(t); }
      public void onComplete() { done.complete(null); }
    });
    done.get(120, TimeUnit.SECONDS);
    return new long[] {bytes.get(), chars.get()};
  }

  static String stats(long[] nanos) {
    long[] s = nanos.clone();
    Arrays.sort(s);
    double mean = Arrays.stream(s).average().orElse(0) / 1e6;
    return String.format(Locale.ROOT, "p50 %7.3f  p90 %7.3f  p99 %7.3f  max %8.3f  mean %7.3f ms (n=%d)",
        pick(s, 0.50), pick(s, 0.90), pick(s, 0.99), s[s.length - 1] / 1e6, mean, s.length);
  }

  static double pick(long[] sorted, double p) {
    int i = (int) Math.ceil(p * sorted.length) - 1;
    return sorted[Math.max(0, i)] / 1e6;
  }

  /** A minimal HTTP/1.1 client on one keep-alive socket with TCP_NODELAY: the agent's raw figure. */
  static final class RawClient implements AutoCloseable {
    private final Socket socket;
    private final OutputStream out;
    private final InputStream in;

    RawClient(int port) throws IOException {
      socket = new Socket("127.0.0.1", port);
      socket.setTcpNoDelay(true);
      out = socket.getOutputStream();
      in = new java.io.BufferedInputStream(socket.getInputStream(), 65536);
    }

    String exec(String body) throws IOException {
      byte[] b = body.getBytes(StandardCharsets.UTF_8);
      String head = "POST /api/execute HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer bench-token\r\n"
          + "Content-Type: application/json\r\nContent-Length: " + b.length + "\r\n\r\n";
      out.write((head + body).getBytes(StandardCharsets.UTF_8));
      out.flush();
      int length = -1;
      String line;
      String status = readLine();
      if (!status.startsWith("HTTP/1.1 200")) {
        throw new IOException("unexpected status: " + status);
      }
      while (!(line = readLine()).isEmpty()) {
        if (line.toLowerCase(Locale.ROOT).startsWith("content-length:")) {
          length = Integer.parseInt(line.substring(15).trim());
        }
      }
      if (length < 0) {
        throw new IOException("the raw client only reads Content-Length bodies");
      }
      return new String(in.readNBytes(length), StandardCharsets.UTF_8);
    }

    private String readLine() throws IOException {
      ByteArrayOutputStream line = new ByteArrayOutputStream();
      int c;
      while ((c = in.read()) != '\n') {
        if (c < 0) {
          throw new IOException("connection closed");
        }
        if (c != '\r') {
          line.write(c);
        }
      }
      return line.toString(StandardCharsets.UTF_8);
    }

    @Override
    public void close() throws IOException {
      socket.close();
    }
  }
}
