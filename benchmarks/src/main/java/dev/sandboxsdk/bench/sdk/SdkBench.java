package dev.sandboxsdk.bench.sdk;

import dev.sandboxsdk.Command;
import dev.sandboxsdk.ExecEvent;
import dev.sandboxsdk.ExecOptions;
import dev.sandboxsdk.ExecResult;
import dev.sandboxsdk.local.LocalSandbox;
import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.bench.Svg;
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

/**
 * Benchmark of the SDK against the real agent (see docs/performance.md, "SDK"). Run from the
 * repository root with {@code bash benchmarks/scripts/sdk.sh}; it needs the SDK and the agent on
 * the classpath.
 *
 * <ol>
 *   <li>LocalSandbox.start() until ready, and close();
 *   <li>exec round trips of {@code true} (argv and shell): the SDK's {@code exec} versus a raw
 *       HTTP/1.1 client on one keep-alive socket, against the same agent, same run;
 *   <li>execStream throughput through the SDK (subscriber with unbounded demand) versus a raw
 *       client reading the same agent's event stream, alternating, same run;
 *   <li>200 concurrent execAsync calls.
 * </ol>
 * It writes SVG plots ({@link dev.sandboxsdk.bench.Svg}) into {@code --plots DIR}: the exec latency by percentile
 * and the stream rates of each alternating pair. {@code --smoke} runs every part at seconds-long
 * sizes (CI), still checking every result.
 * Percentiles: sorted samples, p-th percentile = sample at index ceil(p*n)-1.
 */
public class SdkBench {
  static int calls = 1000;
  static int warmup = 300;
  static boolean streamOnly;
  static int streamReps = 5;
  static int streamMib = 256;
  static int startRuns = 4;
  static int concurrent = 200;
  static boolean smoke;
  static String plots = "target/bench-plots";
  static String runInfo;

  public static void main(String[] args) throws Exception {
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--calls": calls = Integer.parseInt(args[++i]); break;
        case "--warmup": warmup = Integer.parseInt(args[++i]); break;
        case "--stream-only": streamOnly = true; break;
        case "--stream-reps": streamReps = Integer.parseInt(args[++i]); break;
        case "--stream-mib": streamMib = Integer.parseInt(args[++i]); break;
        case "--plots": plots = args[++i]; break;
        case "--smoke": // seconds-long sizes so CI runs every part; options after it override them
          smoke = true;
          calls = 20;
          warmup = 5;
          streamReps = 2;
          streamMib = 1;
          startRuns = 1;
          concurrent = 20;
          break;
        default: throw new IllegalArgumentException("unknown option " + args[i]);
      }
    }
    System.out.printf(Locale.ROOT, "SdkBench: %s %s, %d cores, calls=%d warmup=%d%n",
        System.getProperty("java.vm.name"), System.getProperty("java.version"),
        Runtime.getRuntime().availableProcessors(), calls, warmup);
    runInfo = Svg.runInfo() + (smoke ? ", SMOKE SIZES (figures meaningless)" : "");

    // 1. LocalSandbox startup
    long[] starts = new long[streamOnly ? 0 : startRuns];
    long[] closes = new long[starts.length];
    for (int i = 0; i < starts.length; i++) {
      long t0 = System.nanoTime();
      LocalSandbox s = LocalSandbox.builder().keepAlive(true).start();
      starts[i] = System.nanoTime() - t0;
      s.exec(Command.of("true"), ExecOptions.defaults());
      long t1 = System.nanoTime();
      s.close();
      closes[i] = System.nanoTime() - t1;
    }
    if (!streamOnly) {
      System.out.printf(Locale.ROOT, "LocalSandbox.start() to ready: %s%n", stats(starts));
      System.out.printf(Locale.ROOT, "LocalSandbox.close():          %s%n", stats(closes));
    }

    // 2.-4. one agent, started here so the raw client knows the token
    Path ws = Files.createTempDirectory("sdkbench-ws");
    Path tokenFile = Files.createTempFile("sdkbench", ".token");
    Files.writeString(tokenFile, "bench-token");
    String cp = System.getProperty("java.class.path");
    List<String> agentCommand = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-XX:+UseSerialGC"));
    String agentOpts = System.getProperty("bench.agentOpts", ""); // e.g. a flight recording of the agent
    if (!agentOpts.isBlank()) {
      agentCommand.addAll(List.of(agentOpts.trim().split("\\s+")));
    }
    agentCommand.addAll(List.of("-cp", cp, "dev.sandboxsdk.agent.Main", "--port", "0", "--bind", "127.0.0.1",
        "--workspace", ws.toString(), "--token-file", tokenFile.toString(), "--exit-on-stdin-eof"));
    Process agent = new ProcessBuilder(agentCommand).redirectError(ProcessBuilder.Redirect.DISCARD).start();
    BufferedReader out = new BufferedReader(new InputStreamReader(agent.getInputStream(), StandardCharsets.UTF_8));
    String ready = out.readLine();
    while (ready != null && !ready.contains("\"url\"")) { // JVM logging (a flight recording) may come first
      ready = out.readLine();
    }
    String url = ready.replaceAll(".*\"url\":\"([^\"]*)\".*", "$1");
    int port = URI.create(url).getPort();
    try (Sandbox sdk = Sandbox.connect(URI.create(url), "bench-token"); RawClient raw = new RawClient(port)) {
      String argvBody = "{\"argv\":[\"true\"]}";
      String shellBody = "{\"command\":\"true\"}";
      // Alternate blocks so drift on a busy machine hits both sides alike.
      int execCalls = streamOnly ? 0 : calls;
      long[] rawArgv = new long[execCalls];
      long[] sdkArgv = new long[execCalls];
      long[] rawShell = new long[execCalls];
      long[] sdkShell = new long[execCalls];
      for (int i = 0; i < (streamOnly ? 0 : warmup); i++) {
        succeeded(raw.exec(argvBody));
        succeeded(sdk.exec(Command.of("true"), ExecOptions.defaults()));
        succeeded(raw.exec(shellBody));
        succeeded(sdk.exec("true"));
      }
      int block = 50;
      for (int from = 0; from < execCalls; from += block) {
        int to = Math.min(execCalls, from + block);
        for (int i = from; i < to; i++) {
          long t0 = System.nanoTime();
          String r = raw.exec(argvBody);
          rawArgv[i] = System.nanoTime() - t0;
          succeeded(r);
        }
        for (int i = from; i < to; i++) {
          long t0 = System.nanoTime();
          ExecResult r = sdk.exec(Command.of("true"), ExecOptions.defaults());
          sdkArgv[i] = System.nanoTime() - t0;
          succeeded(r);
        }
        for (int i = from; i < to; i++) {
          long t0 = System.nanoTime();
          String r = raw.exec(shellBody);
          rawShell[i] = System.nanoTime() - t0;
          succeeded(r);
        }
        for (int i = from; i < to; i++) {
          long t0 = System.nanoTime();
          ExecResult r = sdk.exec("true");
          sdkShell[i] = System.nanoTime() - t0;
          succeeded(r);
        }
      }
      if (!streamOnly) {
        System.out.printf(Locale.ROOT, "exec argv  true, raw HTTP client: %s%n", stats(rawArgv));
        System.out.printf(Locale.ROOT, "exec argv  true, SDK exec():      %s%n", stats(sdkArgv));
        System.out.printf(Locale.ROOT, "exec shell true, raw HTTP client: %s%n", stats(rawShell));
        System.out.printf(Locale.ROOT, "exec shell true, SDK exec():      %s%n", stats(sdkShell));
        Svg.Plot latency = Svg.percentiles("Exec round trip of `true`: SDK exec() vs a raw HTTP client, same agent", runInfo);
        Svg.percentileSeries(latency, "raw HTTP client, {\"argv\":[\"true\"]} (the agent's own)", rawArgv, true);
        Svg.percentileSeries(latency, "SDK exec(Command.of(\"true\"))", sdkArgv, false);
        Svg.percentileSeries(latency, "raw HTTP client, {\"command\":\"true\"} (the agent's own)", rawShell, true);
        Svg.percentileSeries(latency, "SDK exec(\"true\")", sdkShell, false);
        System.out.printf(Locale.ROOT, "plot: %s%n", latency.write(Path.of(plots), "sdk-exec-latency.svg"));
      }

      // 3. execStream throughput: the SDK versus a raw client reading the same agent's stream
      streamSection(sdk, port);

      // 4. concurrent execAsync
      for (int rep = 0; rep < (streamOnly ? 0 : 2); rep++) {
        long t0 = System.nanoTime();
        List<CompletableFuture<ExecResult>> fs = new ArrayList<>();
        for (int i = 0; i < concurrent; i++) {
          fs.add(sdk.execAsync(Command.of("true"), ExecOptions.defaults()));
        }
        CompletableFuture.allOf(fs.toArray(new CompletableFuture<?>[0])).get(60, TimeUnit.SECONDS);
        double s = (System.nanoTime() - t0) / 1e9;
        for (CompletableFuture<ExecResult> f : fs) {
          succeeded(f.get());
        }
        System.out.printf(Locale.ROOT, "%d concurrent execAsync(true): %.2f s, %.0f exec/s%n", concurrent, s, concurrent / s);
      }
    } finally {
      agent.getOutputStream().close(); // --exit-on-stdin-eof
      agent.waitFor(15, TimeUnit.SECONDS);
      agent.destroyForcibly();
    }
  }

  static void succeeded(ExecResult r) {
    if (r.exitCode() != 0) {
      throw new IllegalStateException("`true` failed: " + r);
    }
  }

  /** The raw client's answer to {@code true}: it must report exit code 0. */
  static void succeeded(String json) {
    if (!json.contains("\"exitCode\":0")) {
      throw new IllegalStateException("`true` failed: " + json);
    }
  }

  /** One line of the stream generator; the command prints it again and again. */
  static final String LINE = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.,;:+\n";

  static String generator(long total) {
    return "yes '" + LINE.substring(0, LINE.length() - 1) + "' | head -c " + total;
  }

  /**
   * The stream of {@code streamMib} MiB of text, alternating the raw client (the agent's own
   * rate: what it sends, counted without decoding) and the SDK in the same run, against the same
   * agent. Every run checks that the byte count is exact and the offsets contiguous; one untimed
   * run per reader first checks the content itself against the generator, char by char.
   */
  static void streamSection(Sandbox sdk, int port) throws Exception {
    long total = (long) streamMib << 20;
    String command = generator(total);
    System.out.printf(Locale.ROOT, "execStream of %d MiB (%s), load average before: %s%n",
        streamMib, command, loadAverage());
    // untimed content checks (they also warm both paths up)
    RawStream.run(port, command, total, true);
    sdkStream(sdk, command, total, true);
    double[] rawRates = new double[streamReps];
    double[] sdkRates = new double[streamReps];
    double[] rawCpu = new double[streamReps];
    double[] sdkCpu = new double[streamReps];
    double[] rawUser = new double[streamReps];
    double[] sdkUser = new double[streamReps];
    java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
    for (int rep = 0; rep < streamReps; rep++) {
      long t0 = System.nanoTime();
      long c0 = threads.getCurrentThreadCpuTime();
      long u0 = threads.getCurrentThreadUserTime();
      long[] wire = RawStream.run(port, command, total, false);
      rawCpu[rep] = (threads.getCurrentThreadCpuTime() - c0) / (double) total;
      rawUser[rep] = (threads.getCurrentThreadUserTime() - u0) / (double) total;
      double rawS = (System.nanoTime() - t0) / 1e9;
      t0 = System.nanoTime();
      long[] cpu = sdkStream(sdk, command, total, false);
      sdkCpu[rep] = cpu[0] / (double) total;
      sdkUser[rep] = cpu[1] / (double) total;
      double sdkS = (System.nanoTime() - t0) / 1e9;
      rawRates[rep] = total / rawS / 1e6;
      sdkRates[rep] = total / sdkS / 1e6;
      System.out.printf(Locale.ROOT,
          "  run %d: agent (raw client) %4.0f MB/s (%.2f s, %d bytes in %d events on the wire, reader %.2f ns CPU/byte,"
              + " %.2f user), SDK execStream %4.0f MB/s (%.2f s, reader %.2f ns CPU/byte, %.2f user): ratio %3.0f%%,"
              + " load %s%n",
          rep + 1, rawRates[rep], rawS, wire[0], wire[1], rawCpu[rep], rawUser[rep], sdkRates[rep], sdkS, sdkCpu[rep], sdkUser[rep],
          100 * sdkRates[rep] / rawRates[rep], loadAverage());
    }
    Svg.Bars bars = new Svg.Bars("execStream of " + streamMib + " MiB of text: the SDK vs the agent's own rate, pair by pair",
        runInfo, String.format(Locale.ROOT, "alternating pairs, in run order (median of the ratios SDK / agent: %.0f%%)",
            100 * medianRatio(sdkRates, rawRates)), "MB/s of process output (10^6 B/s)");
    for (int rep = 0; rep < streamReps; rep++) {
      String pair = String.format(Locale.ROOT, "pair %d: %.0f%%", rep + 1, 100 * sdkRates[rep] / rawRates[rep]);
      bars.bar(pair, "agent's own rate (raw client that decodes nothing: the floor)", rawRates[rep]);
      bars.bar(pair, "SDK execStream, subscriber counting", sdkRates[rep]);
    }
    System.out.printf(Locale.ROOT, "plot: %s%n", bars.write(Path.of(plots), "sdk-stream-pairs.svg"));
    System.out.printf(Locale.ROOT,
        "execStream %d MiB: agent median %.0f MB/s, SDK median %.0f MB/s, median of per-run ratios %.0f%%;"
            + " reading thread's CPU time per byte, median: raw client %.2f ns (user %.2f), SDK %.2f ns (user %.2f)%n",
        streamMib, median(rawRates), median(sdkRates), 100 * medianRatio(sdkRates, rawRates), median(rawCpu),
        median(rawUser), median(sdkCpu), median(sdkUser));
  }

  static String loadAverage() {
    try {
      String[] f = Files.readString(Path.of("/proc/loadavg")).trim().split(" ");
      return f[0] + " " + f[1] + " " + f[2];
    } catch (IOException e) {
      return "unknown";
    }
  }

  static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  }

  static double medianRatio(double[] a, double[] b) {
    double[] r = new double[a.length];
    for (int i = 0; i < a.length; i++) {
      r[i] = a[i] / b[i];
    }
    return median(r);
  }

  /** Whether {@code text} is what the generator printed at {@code offset}. */
  static boolean matchesGenerator(CharSequence text, long offset) {
    int phase = (int) (offset % LINE.length());
    for (int i = 0; i < text.length(); i++) {
      if (text.charAt(i) != LINE.charAt(phase)) {
        return false;
      }
      phase = phase + 1 == LINE.length() ? 0 : phase + 1;
    }
    return true;
  }

  /**
   * Runs {@code command} through the SDK's execStream with unbounded demand; checks that stdout's
   * chunks are contiguous and add up to {@code total} bytes and chars (the text is ASCII), and with
   * {@code verify} that every char is the generator's. Returns the CPU time and the user time of
   * the thread that read the stream and delivered the events, from the start event to the end.
   */
  static long[] sdkStream(Sandbox sdk, String command, long total, boolean verify) throws Exception {
    // next offset, chars, CPU and user time at the start and at the end; only the delivering thread writes
    long[] state = new long[6];
    java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
    CompletableFuture<Void> done = new CompletableFuture<>();
    sdk.execStream(command).subscribe(new Flow.Subscriber<>() {
      public void onSubscribe(Flow.Subscription s) { s.request(Long.MAX_VALUE); }
      public void onNext(ExecEvent e) {
        if (e instanceof ExecEvent.Stdout o) {
          if (o.offset() != state[0] || (verify && !matchesGenerator(o.text(), o.offset()))) {
            done.completeExceptionally(new IllegalStateException("wrong chunk at offset " + o.offset()));
          }
          state[0] += o.bytes();
          state[1] += o.text().length();
        } else if (e instanceof ExecEvent.Start) {
          state[2] = threads.getCurrentThreadCpuTime(); // the thread that reads the stream and delivers
          state[3] = threads.getCurrentThreadUserTime();
        } else if (e instanceof ExecEvent.Complete c && c.exitCode() != 0) {
          done.completeExceptionally(new IllegalStateException("generator failed: " + c));
        }
      }
      public void onError(Throwable t) { done.completeExceptionally(t); }
      public void onComplete() {
        state[4] = threads.getCurrentThreadCpuTime();
        state[5] = threads.getCurrentThreadUserTime();
        done.complete(null);
      }
    });
    done.get(300, TimeUnit.SECONDS);
    if (state[0] != total || state[1] != total) { // get() ordered the subscriber's writes before this
      throw new IllegalStateException("the SDK's stream lost bytes: " + Arrays.toString(state));
    }
    return new long[] {state[4] - state[2], state[5] - state[3]};
  }

  /**
   * The agent's own rate: a raw HTTP/1.1 client that sends {@code POST /api/execute/stream}, undoes
   * the chunked framing and splits the event lines, and per stdout event only reads the
   * {@code "offset"} and {@code "bytes"} numbers near the line's end, without decoding the JSON
   * (with {@code verify}, it decodes {@code data} and checks it against the generator).
   */
  static final class RawStream {
    private final InputStream in;
    private byte[] line = new byte[1 << 16];
    private int lineLength;
    private long next; // expected offset of the next stdout event
    private long events;
    private boolean complete;
    private final boolean verify;

    private RawStream(InputStream in, boolean verify) {
      this.in = in;
      this.verify = verify;
    }

    /** Bytes received on the wire and stdout events; throws unless stdout added up to exactly {@code total}. */
    static long[] run(int port, String command, long total, boolean verify) throws IOException {
      try (Socket socket = new Socket("127.0.0.1", port)) {
        socket.setTcpNoDelay(true);
        socket.setReceiveBufferSize(1 << 20);
        byte[] body = ("{\"command\":\"" + command.replace("\\", "\\\\").replace("\"", "\\\"") + "\"}")
            .getBytes(StandardCharsets.UTF_8);
        OutputStream out = socket.getOutputStream();
        out.write(("POST /api/execute/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer bench-token\r\n"
            + "Accept: text/event-stream\r\nContent-Type: application/json\r\nConnection: close\r\n"
            + "Content-Length: " + body.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        out.write(body);
        out.flush();
        CountingStream counted = new CountingStream(socket.getInputStream());
        InputStream in = new java.io.BufferedInputStream(counted, 1 << 16);
        String status = headerLine(in);
        if (!status.startsWith("HTTP/1.1 200")) {
          throw new IOException("unexpected status: " + status);
        }
        boolean chunked = false;
        for (String h; !(h = headerLine(in)).isEmpty(); ) {
          chunked |= h.toLowerCase(Locale.ROOT).replace(" ", "").equals("transfer-encoding:chunked");
        }
        if (!chunked) {
          throw new IOException("expected a chunked event stream");
        }
        RawStream r = new RawStream(in, verify);
        r.read();
        if (r.next != total) {
          throw new IllegalStateException("the raw client counted " + r.next + " bytes, not " + total);
        }
        return new long[] {counted.count, r.events};
      }
    }

    private void read() throws IOException {
      byte[] chunk = new byte[1 << 16];
      while (!complete) {
        int size = Integer.parseInt(headerLine(in).split(";")[0].trim(), 16);
        if (size == 0) {
          throw new IOException("the stream ended before its complete event");
        }
        while (size > 0) {
          int n = in.read(chunk, 0, Math.min(size, chunk.length));
          if (n < 0) {
            throw new IOException("connection closed inside a chunk");
          }
          size -= n;
          feed(chunk, n);
        }
        if (!headerLine(in).isEmpty()) {
          throw new IOException("bad chunk framing");
        }
      }
    }

    private void feed(byte[] b, int n) throws IOException {
      int from = 0;
      for (int i = 0; i < n; i++) {
        if (b[i] == '\n') {
          append(b, from, i - from);
          event();
          lineLength = 0;
          from = i + 1;
        }
      }
      append(b, from, n - from);
    }

    private void append(byte[] b, int from, int n) {
      if (lineLength + n > line.length) {
        line = Arrays.copyOf(line, Math.max(line.length * 2, lineLength + n));
      }
      System.arraycopy(b, from, line, lineLength, n);
      lineLength += n;
    }

    private static final byte[] STDOUT = "data: {\"type\":\"stdout\"".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] COMPLETE = "data: {\"type\":\"complete\"".getBytes(StandardCharsets.US_ASCII);

    private void event() throws IOException {
      if (startsWith(STDOUT)) {
        long offset = number(",\"offset\":");
        long bytes = number(",\"bytes\":");
        if (offset != next) {
          throw new IOException("stdout event at offset " + offset + ", expected " + next);
        }
        if (verify) {
          String data = decodeData();
          if (data.length() != bytes || !matchesGenerator(data, offset)) {
            throw new IOException("stdout event at offset " + offset + " is not the generator's text");
          }
        }
        next += bytes;
        events++;
      } else if (startsWith(COMPLETE)) {
        complete = true;
      }
    }

    private boolean startsWith(byte[] prefix) {
      if (lineLength < prefix.length) {
        return false;
      }
      for (int i = 0; i < prefix.length; i++) {
        if (line[i] != prefix[i]) {
          return false;
        }
      }
      return true;
    }

    /** The integer after the last {@code key} in the line, searched from its end (the numbers follow data). */
    private long number(String key) throws IOException {
      byte[] k = key.getBytes(StandardCharsets.US_ASCII);
      outer:
      for (int at = lineLength - k.length; at >= 0; at--) {
        for (int j = 0; j < k.length; j++) {
          if (line[at + j] != k[j]) {
            continue outer;
          }
        }
        long v = 0;
        for (int i = at + k.length; i < lineLength && line[i] >= '0' && line[i] <= '9'; i++) {
          v = v * 10 + (line[i] - '0');
        }
        return v;
      }
      throw new IOException("no " + key + " in an event");
    }

    /** The {@code data} string of a stdout event, unescaped (the generator's text needs only \\n). */
    private String decodeData() throws IOException {
      String json = new String(line, 0, lineLength, StandardCharsets.UTF_8);
      int start = json.indexOf("\"data\":\"") + 8;
      StringBuilder sb = new StringBuilder();
      for (int i = start; ; i++) {
        char c = json.charAt(i);
        if (c == '"') {
          return sb.toString();
        }
        if (c == '\\') {
          char e = json.charAt(++i);
          switch (e) {
            case 'n': sb.append('\n'); break;
            case '"': case '\\': case '/': sb.append(e); break;
            case 'u': sb.append((char) Integer.parseInt(json.substring(i + 1, i + 5), 16)); i += 4; break;
            default: throw new IOException("unexpected escape \\" + e);
          }
        } else {
          sb.append(c);
        }
      }
    }

    private static String headerLine(InputStream in) throws IOException {
      StringBuilder sb = new StringBuilder();
      for (int c; (c = in.read()) != '\n'; ) {
        if (c < 0) {
          throw new IOException("connection closed");
        }
        if (c != '\r') {
          sb.append((char) c);
        }
      }
      return sb.toString();
    }
  }

  /** Counts the bytes read from the socket. */
  static final class CountingStream extends java.io.FilterInputStream {
    long count;

    CountingStream(InputStream in) {
      super(in);
    }

    @Override
    public int read() throws IOException {
      int c = super.read();
      count += c < 0 ? 0 : 1;
      return c;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      int n = super.read(b, off, len);
      count += Math.max(n, 0);
      return n;
    }
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
