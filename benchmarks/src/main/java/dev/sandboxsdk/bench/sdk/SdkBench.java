package dev.sandboxsdk.bench.sdk;

import dev.sandboxsdk.Command;
import dev.sandboxsdk.ExecOptions;
import dev.sandboxsdk.ExecResult;
import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.bench.Percentiles;
import dev.sandboxsdk.bench.Procs;
import dev.sandboxsdk.bench.RawHttp;
import dev.sandboxsdk.bench.Svg;
import dev.sandboxsdk.local.LocalSandbox;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

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
 *
 * <p>This class runs parts 1, 2 and 4; part 3 is {@link SdkStreams}, whose raw reader is
 * {@link RawStream}. The raw client of part 2 is the shared {@link RawHttp}.
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

  /** The token of the agent this benchmark starts. */
  static final String TOKEN = "bench-token";

  public static void main(String[] args) throws Exception {
    parse(args);
    System.out.printf(Locale.ROOT, "SdkBench: %s %s, %d cores, calls=%d warmup=%d%n",
        System.getProperty("java.vm.name"), System.getProperty("java.version"),
        Runtime.getRuntime().availableProcessors(), calls, warmup);
    runInfo = Svg.runInfo() + (smoke ? ", SMOKE SIZES (figures meaningless)" : "");

    // 1. LocalSandbox startup
    startups();

    // 2.-4. one agent, started here so the raw client knows the token
    Process agent = startAgent();
    BufferedReader out = new BufferedReader(new InputStreamReader(agent.getInputStream(), StandardCharsets.UTF_8));
    String ready = out.readLine();
    while (ready != null && !ready.contains("\"url\"")) { // JVM logging (a flight recording) may come first
      ready = out.readLine();
    }
    String url = ready.replaceAll(".*\"url\":\"([^\"]*)\".*", "$1");
    int port = URI.create(url).getPort();
    try (Sandbox sdk = Sandbox.connect(URI.create(url), TOKEN); RawHttp raw = new RawHttp("127.0.0.1", port, TOKEN)) {
      execLatency(sdk, raw);

      // 3. execStream throughput: the SDK versus a raw client reading the same agent's stream
      SdkStreams.streamSection(sdk, port);

      // 4. concurrent execAsync
      concurrentExecAsync(sdk);
    } finally {
      agent.getOutputStream().close(); // --exit-on-stdin-eof
      agent.waitFor(15, TimeUnit.SECONDS);
      agent.destroyForcibly();
    }
  }

  static void parse(String[] args) {
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
  }

  /** 1. LocalSandbox.start() until ready, then close(). */
  static void startups() throws Exception {
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
  }

  /** The agent on this classpath, on a free port with the benchmark's token, until stdin closes. */
  static Process startAgent() throws IOException {
    Path ws = Files.createTempDirectory("sdkbench-ws");
    Path tokenFile = Files.createTempFile("sdkbench", ".token");
    Files.writeString(tokenFile, TOKEN);
    String cp = System.getProperty("java.class.path");
    List<String> agentCommand = new ArrayList<>(List.of(Procs.javaBin(), "-XX:+UseSerialGC"));
    // e.g. a flight recording of the agent
    agentCommand.addAll(Procs.splitOpts(System.getProperty("bench.agentOpts", "")));
    agentCommand.addAll(List.of("-cp", cp, "dev.sandboxsdk.agent.Main", "--port", "0", "--bind", "127.0.0.1",
        "--workspace", ws.toString(), "--token-file", tokenFile.toString(), "--exit-on-stdin-eof"));
    return new ProcessBuilder(agentCommand).redirectError(ProcessBuilder.Redirect.DISCARD).start();
  }

  /** 2. Exec of {@code true}, argv and shell: the SDK against the raw client, alternating in blocks. */
  static void execLatency(Sandbox sdk, RawHttp raw) throws Exception {
    String argvBody = "{\"argv\":[\"true\"]}";
    String shellBody = "{\"command\":\"true\"}";
    // Alternate blocks so drift on a busy machine hits both sides alike.
    int execCalls = streamOnly ? 0 : calls;
    long[] rawArgv = new long[execCalls];
    long[] sdkArgv = new long[execCalls];
    long[] rawShell = new long[execCalls];
    long[] sdkShell = new long[execCalls];
    for (int i = 0; i < (streamOnly ? 0 : warmup); i++) {
      succeeded(rawExec(raw, argvBody));
      succeeded(sdk.exec(Command.of("true"), ExecOptions.defaults()));
      succeeded(rawExec(raw, shellBody));
      succeeded(sdk.exec("true"));
    }
    int block = 50;
    for (int from = 0; from < execCalls; from += block) {
      int to = Math.min(execCalls, from + block);
      timeBlock(rawArgv, from, to, () -> rawExec(raw, argvBody), SdkBench::succeeded);
      timeBlock(sdkArgv, from, to, () -> sdk.exec(Command.of("true"), ExecOptions.defaults()), SdkBench::succeeded);
      timeBlock(rawShell, from, to, () -> rawExec(raw, shellBody), SdkBench::succeeded);
      timeBlock(sdkShell, from, to, () -> sdk.exec("true"), SdkBench::succeeded);
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
  }

  /** 4. {@code concurrent} execAsync calls at once, twice. */
  static void concurrentExecAsync(Sandbox sdk) throws Exception {
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
  }

  /** One exec of a latency series. */
  interface Call<T> {
    T run() throws Exception;
  }

  /** Times {@code call} for samples {@code from} to {@code to - 1}, checking each result after the clock stops. */
  static <T> void timeBlock(long[] samples, int from, int to, Call<T> call, Consumer<T> check) throws Exception {
    for (int i = from; i < to; i++) {
      long t0 = System.nanoTime();
      T r = call.run();
      samples[i] = System.nanoTime() - t0;
      check.accept(r);
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

  /** The raw client's exec of {@code body}: the agent's JSON answer, which must come with HTTP 200. */
  static String rawExec(RawHttp raw, String body) throws IOException {
    RawHttp.Resp r = raw.call("POST", "/api/execute", body.getBytes(StandardCharsets.UTF_8));
    if (r.status != 200) {
      throw new IOException("unexpected status: " + r.status);
    }
    return r.text();
  }

  static String stats(long[] nanos) {
    return Percentiles.latency(nanos) + String.format(Locale.ROOT, " (n=%d)", nanos.length);
  }
}
