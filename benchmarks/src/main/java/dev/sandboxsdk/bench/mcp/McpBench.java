package dev.sandboxsdk.bench.mcp;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.Command;
import dev.sandboxsdk.ExecEvent;
import dev.sandboxsdk.ExecOptions;
import dev.sandboxsdk.ExecResult;
import dev.sandboxsdk.local.LocalSandbox;
import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.internal.AgentLauncher;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Flow;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;

/**
 * Benchmark of the MCP server ({@code sandbox-mcp.jar}) against the SDK it wraps (see
 * docs/performance.md, "The MCP server"). Run from the repository root with
 * {@code bash benchmarks/scripts/mcp.sh}; it needs the server's fat jar (SDK, agent,
 * Jackson) on the classpath and as {@code --jar}.
 *
 * <ol>
 *   <li>cold start over stdio: launch of {@code java -jar sandbox-mcp.jar --stdio} to the
 *       initialize response and to the first exec result (which starts the local sandbox), then
 *       stdin EOF to exit; several fresh launches;
 *   <li>exec round trips of {@code argv ["true"]}, sequential: the SDK's {@code exec} on a
 *       {@code LocalSandbox} in this JVM, {@code tools/call exec} over stdio, and over Streamable
 *       HTTP (JDK HttpClient, HTTP/1.1 keep-alive); after separate warm-ups the three alternate in
 *       blocks of 50 calls so drift hits all alike; then, in the same way, the SDK's plain
 *       {@code exec} against its {@code execStream} (the exec tool's path), to show what the event
 *       stream costs by itself; in the same rotation, the SDK and a stdio server started with
 *       {@code --agent-url} on one and the same agent, which leaves only what the MCP layer adds,
 *       and MCP's {@code ping} (the pipes and the JSON-RPC framing alone);
 *   <li>64 MiB of output from one exec: SDK {@code execStream} (drained), MCP over stdio with a
 *       progressToken and without one;
 *   <li>20 concurrent {@code sleep 1}: over HTTP (20 threads), and for comparison over stdio and
 *       through the SDK;
 *   <li>VmRSS of both server processes (and their local agents) after initialize, after the exec
 *       series and at the end.
 * </ol>
 * Percentiles: sorted samples, p-th percentile = sample at index ceil(p*n)-1. Every process this
 * program starts is stopped at the end, also on failure; the run ends by checking that none is
 * left.
 */
public class McpBench {
  static final ObjectMapper JSON = new ObjectMapper();
  static final String PROTOCOL = "2025-11-25";
  static final String TOKEN = "mcp-bench-token-0123456789";

  static int calls = 2000;
  // A server reaches steady state only after about a thousand calls (JIT); see docs/performance.md.
  static int warmup = 1000;
  static int block = 50;
  static int coldStarts = 5;
  static long streamBytes = 64L << 20;
  static int streamReps = 5;
  static int concurrent = 20;
  static int concurrentReps = 2;
  static Path jar;
  static String jarOrigin;
  static Path repo = Path.of(".");
  static Path pidFile;
  static List<String> serverJvmOpts = List.of();
  static boolean smoke;

  static final List<Process> started = new CopyOnWriteArrayList<>();
  static final List<String> summary = new ArrayList<>();
  static Path tmp;

  public static void main(String[] args) throws Exception {
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--smoke": { // seconds, for CI: every part runs and its results are checked; figures mean nothing
          calls = 20;
          warmup = 5;
          coldStarts = 1;
          streamBytes = 1L << 20;
          streamReps = 1;
          concurrent = 2;
          concurrentReps = 1;
          smoke = true;
          break;
        }
        case "--calls": calls = Integer.parseInt(args[++i]); break;
        case "--warmup": warmup = Integer.parseInt(args[++i]); break;
        case "--cold-starts": coldStarts = Integer.parseInt(args[++i]); break;
        case "--stream-bytes": streamBytes = Long.parseLong(args[++i]); break;
        case "--stream-reps": streamReps = Integer.parseInt(args[++i]); break;
        case "--concurrent": concurrent = Integer.parseInt(args[++i]); break;
        case "--concurrent-reps": concurrentReps = Integer.parseInt(args[++i]); break;
        case "--jar": jar = Path.of(args[++i]).toAbsolutePath(); break;
        case "--jar-origin": jarOrigin = args[++i]; break;
        case "--repo": repo = Path.of(args[++i]); break;
        case "--pid-file": pidFile = Path.of(args[++i]); break;
        case "--server-jvm-opts": {
          String o = args[++i].trim();
          serverJvmOpts = o.isEmpty() ? List.of() : List.of(o.split("\\s+"));
          break;
        }
        case "--help":
          System.out.println("options: --smoke (a seconds-long run that checks every part; later options override it)"
              + " --calls N --warmup N --cold-starts N --stream-bytes N --stream-reps N"
              + " --concurrent N --concurrent-reps N --jar sandbox-mcp.jar --jar-origin TEXT --repo DIR"
              + " --pid-file F --server-jvm-opts \"-X... -D...\"");
          return;
        default: throw new IllegalArgumentException("unknown option " + args[i] + " (--help lists them)");
      }
    }
    if (jar == null) { // the jar this program runs from
      jar = Path.of(System.getProperty("java.class.path").split(java.io.File.pathSeparator)[0]).toAbsolutePath();
    }
    Runtime.getRuntime().addShutdownHook(new Thread(McpBench::killAll, "mcp-bench-cleanup"));
    tmp = Files.createTempDirectory("mcp-bench");
    long t0 = System.nanoTime();
    int status = 0;
    try {
      run();
    } catch (Throwable t) {
      status = 1;
      System.out.println("FAILED: " + t);
      t.printStackTrace(System.out);
    } finally {
      killAll();
      int left = leftovers();
      String line = String.format(Locale.ROOT, "cleanup: %d started server process(es) stopped; %s",
          started.size(), left == 0 ? "no child process left" : left + " child process(es) were left and killed");
      System.out.println(line);
      if (left != 0) {
        status = 1;
      }
      deleteTree(tmp);
    }
    summary.add(String.format(Locale.ROOT, "total bench time: %.1f s; load average at the end: %s",
        (System.nanoTime() - t0) / 1e9, loadavg()));
    System.out.println();
    System.out.println("==================================== SUMMARY ====================================");
    summary.forEach(System.out::println);
    System.out.println("=================================================================================");
    System.exit(status);
  }

  @SuppressWarnings("try") // the shared agent is closed early, before the streams part; its close is idempotent
  static void run() throws Exception {
    // ---- environment
    String javaVersion = String.join(" | ", runText(List.of(javaExe(), "-version")));
    String nproc = String.join("", runText(List.of("nproc")));
    String commit = String.join("", runText(List.of("git", "-C", repo.toString(), "rev-parse", "--short", "HEAD")));
    List<String> dirty = runText(List.of("git", "-C", repo.toString(), "status", "--porcelain", "--untracked-files=no"));
    dirty.removeIf(String::isBlank);
    String cpu = Files.readAllLines(Path.of("/proc/cpuinfo")).stream().filter(l -> l.startsWith("model name"))
        .findFirst().map(l -> l.substring(l.indexOf(':') + 1).strip()).orElse("?");
    String load = loadavg();
    double load1 = Double.parseDouble(load.split(" ")[0]);
    note("date", Instant.now().toString());
    note("java -version", javaVersion);
    note("nproc", nproc + " (availableProcessors " + Runtime.getRuntime().availableProcessors() + "); cpu " + cpu
        + "; kernel " + String.join("", runText(List.of("uname", "-r"))));
    note("git commit", commit + (dirty.isEmpty() ? " (clean)" : " + " + dirty.size() + " modified tracked file(s): "
        + dirty.stream().map(String::strip).collect(Collectors.joining(", "))));
    note("server jar", jar + " (" + Files.size(jar) + " B"
        + (jarOrigin != null ? ", copy of " + jarOrigin + " modified " + Files.getLastModifiedTime(Path.of(jarOrigin))
            : ", modified " + Files.getLastModifiedTime(jar)) + ")");
    if (jarOrigin != null) {
      note("jar vs sources", staleness(Path.of(jarOrigin)));
    }
    note("server JVM options", serverJvmOpts.isEmpty() ? "(none: JVM defaults)" : String.join(" ", serverJvmOpts));
    note("load average at start", load + (load1 > 1.0 ? "  (WARNING: the machine looks busy; figures may be distorted)" : ""));
    if (smoke) {
      note("smoke run", "checks that every part works; its figures are too few to mean anything");
    }
    note("parameters", String.format(Locale.ROOT, "calls=%d warmup=%d block=%d cold-starts=%d stream-bytes=%d"
        + " stream-reps=%d concurrent=%d concurrent-reps=%d", calls, warmup, block, coldStarts, streamBytes,
        streamReps, concurrent, concurrentReps));

    // ---- 1. cold start over stdio
    long[] toInit = new long[coldStarts];
    long[] toFirstExec = new long[coldStarts];
    long[] firstExec = new long[coldStarts];
    long[] toExit = new long[coldStarts];
    for (int i = 0; i < coldStarts; i++) {
      long t0 = System.nanoTime();
      StdioServer s = StdioServer.start();
      s.initialize();
      long t1 = System.nanoTime();
      checkExec(s.call("tools/call", execParams(argvTrue(), null), null));
      long t2 = System.nanoTime();
      toInit[i] = t1 - t0;
      toFirstExec[i] = t2 - t0;
      firstExec[i] = t2 - t1;
      toExit[i] = s.shutdown();
    }
    note("stdio cold start: launch -> initialize result", medianAll(toInit));
    note("stdio cold start: launch -> first exec result", medianAll(toFirstExec));
    note("stdio cold start: first exec (starts the sandbox)", medianAll(firstExec));
    note("stdio: stdin EOF -> server exited (sandbox stopped)", medianAll(toExit));

    // ---- the long-lived clients
    long ts = System.nanoTime();
    LocalSandbox sdk = LocalSandbox.builder().keepAlive(true).start();
    long sdkStart = System.nanoTime() - ts;
    note("SDK: LocalSandbox.start() in the bench JVM", ms(sdkStart) + " ms (agent pid " + sdk.agentPid() + ")");
    try (StdioServer stdio = StdioServer.start(); HttpServerClient http = HttpServerClient.start();
        SharedAgent shared = SharedAgent.start()) {
      stdio.initialize();
      note("HTTP server: launch -> SANDBOX_MCP_READY line", ms(http.launchToReady) + " ms");
      long ti = System.nanoTime();
      http.initialize();
      note("HTTP server: initialize + initialized, first requests", ms(System.nanoTime() - ti) + " ms");
      String stdioInitMem = mem(stdio.pid());
      String httpInitMem = mem(http.pid());
      note("RSS stdio server after initialize", stdioInitMem);
      note("RSS HTTP server after initialize", httpInitMem);

      // ---- 2. exec latency
      ObjectNode callTrue = execParams(argvTrue(), null);
      Runnable sdkCall = () -> {
        ExecResult r = sdk.exec(Command.of("true"), ExecOptions.defaults());
        if (r.exitCode() != 0) {
          throw new IllegalStateException("true failed: " + r);
        }
      };
      Runnable stdioCall = () -> checkExec(stdio.call("tools/call", callTrue, null));
      Runnable httpCall = () -> checkExec(http.request("tools/call", callTrue));
      Runnable sharedSdkCall = () -> {
        ExecResult r = shared.sdk.exec(Command.of("true"), ExecOptions.defaults());
        if (r.exitCode() != 0) {
          throw new IllegalStateException("true failed: " + r);
        }
      };
      Runnable sharedStdioCall = () -> checkExec(shared.stdio.call("tools/call", callTrue, null));
      // MCP's ping: the pipes, the JSON-RPC framing and the server's dispatch, without a tool
      Runnable pingCall = () -> {
        JsonNode r = shared.stdio.call("ping", null, null);
        if (!r.has("result")) {
          throw new IllegalStateException("ping failed: " + r);
        }
      };
      // separate warm-ups; the first MCP call also starts each server's default sandbox
      long[] firstCalls = new long[2];
      long f0 = System.nanoTime();
      stdioCall.run();
      firstCalls[0] = System.nanoTime() - f0;
      f0 = System.nanoTime();
      httpCall.run();
      firstCalls[1] = System.nanoTime() - f0;
      note("first exec (starts the server's sandbox)", String.format(Locale.ROOT, "stdio %s ms, HTTP %s ms",
          ms(firstCalls[0]), ms(firstCalls[1])));
      for (int i = 0; i < warmup; i++) {
        sdkCall.run();
      }
      for (int i = 1; i < warmup; i++) {
        stdioCall.run();
      }
      for (int i = 1; i < warmup; i++) {
        httpCall.run();
      }
      for (int i = 0; i < warmup; i++) {
        sharedSdkCall.run();
        sharedStdioCall.run();
        pingCall.run();
      }
      long[] sdkT = new long[calls];
      long[] stdioT = new long[calls];
      long[] httpT = new long[calls];
      long[] sharedSdkT = new long[calls];
      long[] sharedStdioT = new long[calls];
      long[] pingT = new long[calls];
      for (int from = 0; from < calls; from += block) {
        int to = Math.min(calls, from + block);
        time(sdkCall, sdkT, from, to);
        time(stdioCall, stdioT, from, to);
        time(httpCall, httpT, from, to);
        time(sharedSdkCall, sharedSdkT, from, to);
        time(sharedStdioCall, sharedStdioT, from, to);
        time(pingCall, pingT, from, to);
      }
      note("exec argv [true], SDK exec() in-process", stats(sdkT));
      note("exec argv [true], MCP tools/call over stdio", stats(stdioT));
      note("exec argv [true], MCP tools/call over HTTP", stats(httpT));
      note("MCP over stdio minus SDK", delta(stdioT, sdkT));
      note("MCP over HTTP minus SDK", delta(httpT, sdkT));
      note("same agent (isolation " + shared.agent.isolation() + "): SDK exec()", stats(sharedSdkT));
      note("same agent: MCP tools/call over stdio (--agent-url)", stats(sharedStdioT));
      note("same agent: MCP over stdio minus SDK", delta(sharedStdioT, sharedSdkT));
      note("MCP ping over stdio (pipes and JSON-RPC only)", stats(pingT));
      shared.close();
      // What the exec tool's event stream costs by itself: the same SDK, plain exec against an
      // execStream drained to its complete event (the tool needs the stream's byte counts).
      Runnable sdkStreamCall = () -> {
        int exit = streamExit(sdk, Command.of("true"));
        if (exit != 0) {
          throw new IllegalStateException("true failed: exit " + exit);
        }
      };
      for (int i = 0; i < warmup; i++) {
        sdkStreamCall.run();
      }
      long[] plainT = new long[calls];
      long[] streamT = new long[calls];
      for (int from = 0; from < calls; from += block) {
        int to = Math.min(calls, from + block);
        time(sdkCall, plainT, from, to);
        time(sdkStreamCall, streamT, from, to);
      }
      note("SDK exec() again, alternating with the next", stats(plainT));
      note("SDK execStream() drained to its complete event", stats(streamT));
      note("SDK execStream minus exec", delta(streamT, plainT));
      note("RSS stdio server after " + (warmup + calls) + " execs", mem(stdio.pid()));
      note("RSS stdio server's local agent", agentMem(stdio.pid()));
      note("RSS HTTP server after " + (warmup + calls) + " execs", mem(http.pid()));
      note("RSS HTTP server's local agent", agentMem(http.pid()));
      note("RSS the bench JVM's own agent (SDK)", mem(sdk.agentPid()));

      // ---- 3. 64 MiB of output from one exec
      String big = "head -c " + streamBytes + " /dev/zero | base64 -w 0 | head -c " + streamBytes;
      note("stream command", big);
      streamSdk(sdk, big); // warm-up, not reported
      streamStdio(stdio, big, true);
      streamStdio(stdio, big, false);
      List<double[]> sdkRuns = new ArrayList<>();
      List<StreamRun> withProgress = new ArrayList<>();
      List<StreamRun> withoutProgress = new ArrayList<>();
      for (int rep = 0; rep < streamReps; rep++) {
        sdkRuns.add(streamSdk(sdk, big));
        withProgress.add(streamStdio(stdio, big, true));
        withoutProgress.add(streamStdio(stdio, big, false));
      }
      double[] sdkSecs = sdkRuns.stream().mapToDouble(r -> r[0]).toArray();
      note("stream, SDK execStream() drained", streamLine(sdkSecs) + String.format(Locale.ROOT,
          "; %d B received in %d events per run", (long) sdkRuns.get(0)[1], (long) sdkRuns.get(0)[2]));
      StreamRun mp = median(withProgress);
      note("stream, MCP stdio WITH progressToken", streamLine(withProgress.stream().mapToDouble(r -> r.seconds).toArray())
          + String.format(Locale.ROOT, "; median run: first progress after %.1f ms, %d notifications (%d with text),"
              + " %d B of progress text, last progress value %d, %d chars on stdout in all, result %d chars,"
              + " stdoutBytes %d, truncated %s", mp.firstProgressMs, mp.notifications, mp.textNotifications,
              mp.progressTextBytes, mp.lastProgress, mp.wireChars, mp.resultChars, mp.stdoutBytes, mp.truncated));
      StreamRun mn = median(withoutProgress);
      note("stream, MCP stdio WITHOUT progressToken", streamLine(withoutProgress.stream().mapToDouble(r -> r.seconds).toArray())
          + String.format(Locale.ROOT, "; median run: %d notifications, %d chars on stdout (the result),"
              + " stdoutBytes %d, truncated %s", mn.notifications, mn.wireChars, mn.stdoutBytes, mn.truncated));
      note("RSS stdio server after the streams", mem(stdio.pid()));

      // ---- 4. concurrency: N x sleep 1
      ObjectNode sleepArgs = JSON.createObjectNode().put("command", "sleep 1");
      ObjectNode callSleep = execParams(sleepArgs, null);
      for (int rep = 0; rep < concurrentReps; rep++) {
        note(concurrent + " concurrent exec 'sleep 1', MCP HTTP (" + concurrent + " threads) #" + (rep + 1),
            concurrently(concurrent, () -> checkExec(http.request("tools/call", callSleep))));
      }
      stdio.startReader(); // from here on, calls over stdio may overlap
      for (int rep = 0; rep < concurrentReps; rep++) {
        note(concurrent + " concurrent exec 'sleep 1', MCP stdio (" + concurrent + " threads) #" + (rep + 1),
            concurrently(concurrent, () -> checkExec(stdio.callAsync("tools/call", callSleep).get(60, TimeUnit.SECONDS))));
      }
      for (int rep = 0; rep < concurrentReps; rep++) {
        note(concurrent + " concurrent exec 'sleep 1', SDK exec() (" + concurrent + " threads) #" + (rep + 1),
            concurrently(concurrent, () -> {
              ExecResult r = sdk.exec("sleep 1");
              if (r.exitCode() != 0) {
                throw new IllegalStateException("sleep 1 failed: " + r);
              }
              return r;
            }));
      }
      note("RSS stdio server at the end", mem(stdio.pid()));
      note("RSS HTTP server at the end", mem(http.pid()));
      http.deleteSession();
    } finally {
      sdk.close();
    }
  }

  // ---- output

  static void note(String label, String value) {
    String line = String.format(Locale.ROOT, "%-52s: %s", label, value);
    System.out.println(line);
    System.out.flush();
    summary.add(line);
  }

  static String ms(long nanos) {
    return String.format(Locale.ROOT, "%.1f", nanos / 1e6);
  }

  static String medianAll(long[] nanos) {
    long[] s = nanos.clone();
    Arrays.sort(s);
    return String.format(Locale.ROOT, "median %s ms, all %s ms", ms(s[(s.length - 1) / 2]),
        Arrays.stream(nanos).mapToObj(McpBench::ms).collect(Collectors.joining(", ", "[", "]")));
  }

  /**
   * The MCP layer by itself: an agent that the SDK and a stdio server (started with {@code
   * --agent-url}) both drive. With separate agents, as in the main comparison, the agents' own exec
   * times differ by about as much as the whole target (0.5 ms); here both paths end in one agent
   * process, so what differs is only what the MCP server and its pipes add. The agent is started
   * the way {@code LocalSandbox} starts one (same JVM flags, isolation and network defaults)
   * through the SDK's internal launcher, which hands out its token; the server reads the token
   * from a 0600 file.
   */
  static final class SharedAgent implements AutoCloseable {
    final AgentLauncher.Agent agent;
    final Sandbox sdk;
    final StdioServer stdio;

    private SharedAgent(AgentLauncher.Agent agent, Sandbox sdk, StdioServer stdio) {
      this.agent = agent;
      this.sdk = sdk;
      this.stdio = stdio;
    }

    static SharedAgent start() throws IOException {
      Path ws = Files.createTempDirectory(tmp, "shared-agent-ws");
      AgentLauncher.Agent agent = AgentLauncher.start(null, null, ws, List.of(),
          List.of("--isolation", "auto", "--isolation-network", "off"), Duration.ofSeconds(60));
      try {
        Path tokenFile = tmp.resolve("shared-agent.token");
        Files.writeString(tokenFile, agent.token());
        Files.setPosixFilePermissions(tokenFile, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
        StdioServer stdio = StdioServer.start("--agent-url", agent.url().toString(),
            "--agent-token-file", tokenFile.toString());
        stdio.initialize();
        return new SharedAgent(agent, Sandbox.connect(agent.url(), agent.token()), stdio);
      } catch (IOException | RuntimeException e) {
        agent.stop(Duration.ofSeconds(10));
        throw e;
      }
    }

    private boolean closed;

    @Override
    public void close() {
      if (!closed) {
        closed = true;
        stdio.close();
        sdk.close();
        agent.stop(Duration.ofSeconds(10));
      }
    }
  }

  static String stats(long[] nanos) {
    long[] s = nanos.clone();
    Arrays.sort(s);
    double mean = Arrays.stream(s).average().orElse(0) / 1e6;
    long slow = Arrays.stream(s).filter(n -> n >= 35_000_000L).count();
    return String.format(Locale.ROOT, "p50 %7.3f  p90 %7.3f  p99 %7.3f  max %8.3f  mean %7.3f ms (n=%d, >=35ms: %d)",
        pick(s, 0.50), pick(s, 0.90), pick(s, 0.99), s[s.length - 1] / 1e6, mean, s.length, slow);
  }

  static String delta(long[] a, long[] b) {
    long[] x = a.clone();
    long[] y = b.clone();
    Arrays.sort(x);
    Arrays.sort(y);
    return String.format(Locale.ROOT, "p50 %+.3f ms, p90 %+.3f ms, p99 %+.3f ms, mean %+.3f ms",
        pick(x, 0.5) - pick(y, 0.5), pick(x, 0.9) - pick(y, 0.9), pick(x, 0.99) - pick(y, 0.99),
        (Arrays.stream(x).average().orElse(0) - Arrays.stream(y).average().orElse(0)) / 1e6);
  }

  static double pick(long[] sorted, double p) {
    int i = (int) Math.ceil(p * sorted.length) - 1;
    return sorted[Math.max(0, i)] / 1e6;
  }

  static String streamLine(double[] seconds) {
    double[] s = seconds.clone();
    Arrays.sort(s);
    double med = s[(s.length - 1) / 2];
    return String.format(Locale.ROOT, "median %.3f s = %.0f MB/s of output (runs %s)", med, streamBytes / med / 1e6,
        Arrays.stream(seconds).mapToObj(x -> String.format(Locale.ROOT, "%.3f s/%.0f MB/s", x, streamBytes / x / 1e6))
            .collect(Collectors.joining(", ", "[", "]")));
  }

  static void time(Runnable call, long[] into, int from, int to) {
    for (int i = from; i < to; i++) {
      long t0 = System.nanoTime();
      call.run();
      into[i] = System.nanoTime() - t0;
    }
  }

  // ---- MCP messages

  static ObjectNode argvTrue() {
    ObjectNode a = JSON.createObjectNode();
    a.putArray("argv").add("true");
    return a;
  }

  static ObjectNode execParams(ObjectNode arguments, String progressToken) {
    ObjectNode p = JSON.createObjectNode().put("name", "exec");
    p.set("arguments", arguments);
    if (progressToken != null) {
      p.putObject("_meta").put("progressToken", progressToken);
    }
    return p;
  }

  static ObjectNode initializeParams() {
    ObjectNode p = JSON.createObjectNode().put("protocolVersion", PROTOCOL);
    p.putObject("capabilities");
    p.putObject("clientInfo").put("name", "mcp-bench").put("version", "1");
    return p;
  }

  static ObjectNode message(Long id, String method, ObjectNode params) {
    ObjectNode m = JSON.createObjectNode().put("jsonrpc", "2.0");
    if (id != null) {
      m.put("id", id);
    }
    m.put("method", method);
    if (params != null) {
      m.set("params", params);
    }
    return m;
  }

  /** The structured result of a successful exec response, or an exception saying what came instead. */
  static JsonNode checkExec(JsonNode response) {
    if (response.has("error")) {
      throw new IllegalStateException("JSON-RPC error: " + response.get("error"));
    }
    JsonNode r = response.path("result");
    if (r.path("isError").asBoolean(false) || r.path("structuredContent").path("exitCode").asInt(-1) != 0) {
      throw new IllegalStateException("exec failed: " + abbreviate(r.toString()));
    }
    return r.get("structuredContent");
  }

  static String abbreviate(String s) {
    return s.length() <= 2000 ? s : s.substring(0, 2000) + "...";
  }

  // ---- streaming

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

  // ---- concurrency

  /** Runs {@code task} on n threads released together; total wall time and per-call times. */
  static String concurrently(int n, Callable<Object> task) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(n);
    try {
      CountDownLatch ready = new CountDownLatch(n);
      CountDownLatch go = new CountDownLatch(1);
      List<Future<Long>> fs = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        fs.add(pool.submit(() -> {
          ready.countDown();
          go.await();
          long t0 = System.nanoTime();
          task.call();
          return System.nanoTime() - t0;
        }));
      }
      ready.await();
      long t0 = System.nanoTime();
      go.countDown();
      long[] each = new long[n];
      for (int i = 0; i < n; i++) {
        each[i] = fs.get(i).get(120, TimeUnit.SECONDS);
      }
      long total = System.nanoTime() - t0;
      Arrays.sort(each);
      return String.format(Locale.ROOT, "total %.3f s; per call min %.3f / median %.3f / max %.3f s",
          total / 1e9, each[0] / 1e9, each[(n - 1) / 2] / 1e9, each[n - 1] / 1e9);
    } finally {
      pool.shutdownNow();
    }
  }

  // ---- processes

  static String javaExe() {
    return Path.of(System.getProperty("java.home"), "bin", "java").toString();
  }

  static List<String> serverCommand(String... args) {
    List<String> cmd = new ArrayList<>();
    cmd.add(javaExe());
    cmd.addAll(serverJvmOpts);
    cmd.add("-jar");
    cmd.add(jar.toString());
    cmd.addAll(List.of(args));
    return cmd;
  }

  static Process launch(List<String> cmd) throws IOException {
    Process p = new ProcessBuilder(cmd).directory(tmp.toFile()).start();
    started.add(p);
    if (pidFile != null) { // for mcp.sh, should this JVM die without running its shutdown hook
      Files.writeString(pidFile, p.pid() + "\n", StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    }
    return p;
  }

  /**
   * Stops a server: closes stdin (stdio) or sends SIGTERM (HTTP), waits, then kills what is left
   * of it and its descendants. Returns the nanoseconds until it exited.
   */
  static long stop(Process p, boolean stdinEof) {
    List<ProcessHandle> tree = p.descendants().collect(Collectors.toList());
    long t0 = System.nanoTime();
    try {
      if (stdinEof) {
        p.getOutputStream().close();
      } else {
        p.destroy();
      }
      if (!p.waitFor(20, TimeUnit.SECONDS)) {
        System.out.println("warning: server pid " + p.pid() + " did not exit within 20 s; killing it");
      }
    } catch (IOException e) {
      // already gone
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    long took = System.nanoTime() - t0;
    p.destroyForcibly();
    for (ProcessHandle h : tree) {
      try {
        h.onExit().get(10, TimeUnit.SECONDS);
      } catch (Exception e) {
        System.out.println("warning: pid " + h.pid() + " (under server " + p.pid() + ") still alive; killing it");
        h.destroyForcibly();
      }
    }
    return took;
  }

  /** Last resort (finally and the shutdown hook): every started server and its descendants, at once. */
  static void killAll() {
    for (Process p : started) {
      if (p.isAlive()) {
        List<ProcessHandle> tree = p.descendants().collect(Collectors.toList());
        p.destroyForcibly();
        tree.forEach(ProcessHandle::destroyForcibly);
      }
    }
  }

  /** Child processes of this JVM still alive after everything was stopped (they are killed). */
  static int leftovers() {
    List<ProcessHandle> left = ProcessHandle.current().descendants().filter(ProcessHandle::isAlive)
        .collect(Collectors.toList());
    for (ProcessHandle h : left) {
      System.out.println("leftover process " + h.pid() + ": " + h.info().commandLine().orElse("?"));
      h.destroyForcibly();
    }
    return left.size();
  }

  /** A small tail of a process's stderr, drained on a daemon thread; optionally watches for a line. */
  static final class Tail {
    final Deque<String> lines = new ArrayDeque<>();
    final CompletableFuture<String> match = new CompletableFuture<>();

    Tail(InputStream in, String name, String prefix) {
      Thread t = new Thread(() -> {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
          for (String line; (line = r.readLine()) != null; ) {
            if (prefix != null && line.startsWith(prefix)) {
              match.complete(line);
            }
            synchronized (lines) {
              if (lines.size() == 30) {
                lines.removeFirst();
              }
              lines.addLast(line);
            }
          }
        } catch (IOException ignored) {
          // the process is gone
        }
        match.completeExceptionally(new IllegalStateException("stderr ended"));
      }, name);
      t.setDaemon(true);
      t.start();
    }

    @Override
    public String toString() {
      synchronized (lines) {
        return String.join("\n", lines);
      }
    }
  }

  /** An MCP client over the stdio of a {@code --stdio} server it starts. */
  static final class StdioServer implements AutoCloseable {
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
      return new StdioServer(launch(serverCommand(args.toArray(new String[0]))));
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
    JsonNode call(String method, ObjectNode params, java.util.function.Consumer<JsonNode> onNote) {
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
        exitNanos = stop(process, true);
      }
      return exitNanos;
    }

    @Override
    public void close() {
      shutdown();
    }
  }

  /** An MCP client of a {@code --http --port 0} server it starts: JDK HttpClient, HTTP/1.1. */
  static final class HttpServerClient implements AutoCloseable {
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
      Path tokenFile = tmp.resolve("token");
      Files.writeString(tokenFile, TOKEN);
      long t0 = System.nanoTime();
      Process p = launch(serverCommand("--http", "--port", "0", "--token-file", tokenFile.toString()));
      p.getOutputStream().close(); // the HTTP server does not read stdin
      Tail err = new Tail(p.getErrorStream(), "http-stderr-" + p.pid(), "SANDBOX_MCP_READY ");
      String ready;
      try {
        ready = err.match.get(60, TimeUnit.SECONDS);
      } catch (Exception e) {
        stop(p, false);
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
      stop(process, false); // SIGTERM: the server's shutdown hook stops its sandboxes
    }
  }

  /** Reads and drops a stream so the process never blocks on it. */
  static final class ProcessOutputDrain {
    ProcessOutputDrain(InputStream in, String name) {
      Thread t = new Thread(() -> {
        try (in) {
          in.transferTo(OutputStream.nullOutputStream());
        } catch (IOException ignored) {
          // gone
        }
      }, name);
      t.setDaemon(true);
      t.start();
    }
  }

  // ---- /proc and small commands

  static String mem(long pid) {
    Map<String, String> f = procStatus(pid);
    if (f.isEmpty()) {
      return "(pid " + pid + " is gone)";
    }
    return String.format(Locale.ROOT, "VmRSS %.1f MiB (VmHWM %.1f MiB, %s threads; pid %d)", kib(f.get("VmRSS")) / 1024.0,
        kib(f.get("VmHWM")) / 1024.0, f.getOrDefault("Threads", "?"), pid);
  }

  static String agentMem(long serverPid) {
    List<ProcessHandle> agents = ProcessHandle.of(serverPid).map(h -> h.children().collect(Collectors.toList()))
        .orElse(List.of());
    if (agents.isEmpty()) {
      return "(no child process)";
    }
    return agents.stream().map(h -> mem(h.pid())).collect(Collectors.joining("; "));
  }

  static Map<String, String> procStatus(long pid) {
    Map<String, String> m = new ConcurrentHashMap<>();
    try {
      for (String l : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
        int c = l.indexOf(':');
        if (c > 0) {
          m.put(l.substring(0, c), l.substring(c + 1).strip());
        }
      }
    } catch (IOException e) {
      // gone
    }
    return m;
  }

  static long kib(String v) {
    return v == null ? -1 : Long.parseLong(v.split("\\s+")[0]);
  }

  static String loadavg() {
    try {
      return Files.readString(Path.of("/proc/loadavg")).strip();
    } catch (IOException e) {
      return "?";
    }
  }

  static List<String> runText(List<String> cmd) {
    try {
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      p.getOutputStream().close();
      String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      p.waitFor(30, TimeUnit.SECONDS);
      return new ArrayList<>(List.of(text.strip().split("\n")));
    } catch (IOException e) {
      return new ArrayList<>(List.of("(" + cmd.get(0) + ": " + e.getMessage() + ")"));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return new ArrayList<>(List.of("(interrupted)"));
    }
  }

  /** Whether source files of the server, the SDK or the agent changed after the jar was built. */
  static String staleness(Path builtJar) throws IOException {
    java.nio.file.attribute.FileTime built = Files.getLastModifiedTime(builtJar);
    List<Path> newer = new ArrayList<>();
    for (String dir : List.of("sandbox-sdk-mcp-adapter/src/main", "sandbox-sdk/src/main", "container-agent/src/main")) {
      Path d = repo.resolve(dir);
      if (Files.isDirectory(d)) {
        try (var s = Files.walk(d)) {
          s.filter(Files::isRegularFile).filter(f -> {
            try {
              return Files.getLastModifiedTime(f).compareTo(built) > 0;
            } catch (IOException e) {
              return false;
            }
          }).forEach(newer::add);
        }
      }
    }
    return newer.isEmpty() ? "no source file under */src/main is newer than the jar"
        : "WARNING: " + newer.size() + " source file(s) are newer than the jar (rebuild it), e.g. " + newer.get(0);
  }

  static void deleteTree(Path dir) {
    try (var s = Files.walk(dir)) {
      s.sorted((a, b) -> b.getNameCount() - a.getNameCount()).forEach(p -> p.toFile().delete());
    } catch (IOException ignored) {
      // best effort
    }
  }
}
