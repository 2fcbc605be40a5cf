package dev.sandboxsdk.bench.mcp;

import static dev.sandboxsdk.bench.mcp.McpFigures.agentMem;
import static dev.sandboxsdk.bench.mcp.McpFigures.concurrently;
import static dev.sandboxsdk.bench.mcp.McpFigures.delta;
import static dev.sandboxsdk.bench.mcp.McpFigures.medianAll;
import static dev.sandboxsdk.bench.mcp.McpFigures.mem;
import static dev.sandboxsdk.bench.mcp.McpFigures.ms;
import static dev.sandboxsdk.bench.mcp.McpFigures.stats;
import static dev.sandboxsdk.bench.mcp.McpFigures.streamLine;
import static dev.sandboxsdk.bench.mcp.McpFigures.time;
import static dev.sandboxsdk.bench.mcp.McpMessages.JSON;
import static dev.sandboxsdk.bench.mcp.McpMessages.argvTrue;
import static dev.sandboxsdk.bench.mcp.McpMessages.checkExec;
import static dev.sandboxsdk.bench.mcp.McpMessages.execParams;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.Command;
import dev.sandboxsdk.ExecOptions;
import dev.sandboxsdk.ExecResult;
import dev.sandboxsdk.bench.Machine;
import dev.sandboxsdk.bench.Procs;
import dev.sandboxsdk.bench.mcp.McpStreams.StreamRun;
import dev.sandboxsdk.local.LocalSandbox;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

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
 *
 * <p>This class holds the options and runs the parts in order; the servers are driven by
 * {@link StdioServer} and {@link HttpServerClient}, started and stopped by {@link McpProcesses};
 * {@link SharedAgent} is the agent both paths share, {@link McpStreams} the streaming part,
 * {@link McpFigures} words the figures and {@link McpEnvironment} the machine.
 */
public class McpBench {
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

  static final List<String> summary = new ArrayList<>();
  static Path tmp;

  public static void main(String[] args) throws Exception {
    if (!parse(args)) {
      return;
    }
    if (jar == null) { // the jar this program runs from
      jar = Path.of(System.getProperty("java.class.path").split(File.pathSeparator)[0]).toAbsolutePath();
    }
    Runtime.getRuntime().addShutdownHook(new Thread(McpProcesses::killAll, "mcp-bench-cleanup"));
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
      McpProcesses.killAll();
      int left = McpProcesses.leftovers();
      String line = String.format(Locale.ROOT, "cleanup: %d started server process(es) stopped; %s",
          McpProcesses.started.size(), left == 0 ? "no child process left" : left + " child process(es) were left and killed");
      System.out.println(line);
      if (left != 0) {
        status = 1;
      }
      Procs.deleteTree(tmp);
    }
    summary.add(String.format(Locale.ROOT, "total bench time: %.1f s; load average at the end: %s",
        (System.nanoTime() - t0) / 1e9, Machine.loadAverage()));
    System.out.println();
    System.out.println("==================================== SUMMARY ====================================");
    summary.forEach(System.out::println);
    System.out.println("=================================================================================");
    System.exit(status);
  }

  /** Reads the options into the fields above; false for --help (it printed them). */
  static boolean parse(String[] args) {
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
          serverJvmOpts = Procs.splitOpts(o);
          break;
        }
        case "--help":
          System.out.println("options: --smoke (a seconds-long run that checks every part; later options override it)"
              + " --calls N --warmup N --cold-starts N --stream-bytes N --stream-reps N"
              + " --concurrent N --concurrent-reps N --jar sandbox-mcp.jar --jar-origin TEXT --repo DIR"
              + " --pid-file F --server-jvm-opts \"-X... -D...\"");
          return false;
        default: throw new IllegalArgumentException("unknown option " + args[i] + " (--help lists them)");
      }
    }
    return true;
  }

  static void run() throws Exception {
    McpEnvironment.print();
    coldStarts();
    clients();
  }

  static void note(String label, String value) {
    String line = String.format(Locale.ROOT, "%-52s: %s", label, value);
    System.out.println(line);
    System.out.flush();
    summary.add(line);
  }

  /** 1. Fresh stdio servers: launch to initialize and to the first exec, and stdin EOF to exit. */
  static void coldStarts() throws Exception {
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
  }

  /** The long-lived clients: the SDK in this JVM, a stdio and an HTTP server, and the shared agent. */
  @SuppressWarnings("try") // the shared agent is closed early, before the streams part; its close is idempotent
  static void clients() throws Exception {
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
      Runnable sdkCall = () -> execTrue(sdk);
      execLatency(sdkCall, stdio, http, shared);
      shared.close();
      execVersusStream(sdk, sdkCall);
      note("RSS stdio server after " + (warmup + calls) + " execs", mem(stdio.pid()));
      note("RSS stdio server's local agent", agentMem(stdio.pid()));
      note("RSS HTTP server after " + (warmup + calls) + " execs", mem(http.pid()));
      note("RSS HTTP server's local agent", agentMem(http.pid()));
      note("RSS the bench JVM's own agent (SDK)", mem(sdk.agentPid()));

      // ---- 3. 64 MiB of output from one exec
      streams(sdk, stdio);

      // ---- 4. concurrency: N x sleep 1
      concurrency(sdk, stdio, http);
      note("RSS stdio server at the end", mem(stdio.pid()));
      note("RSS HTTP server at the end", mem(http.pid()));
      http.deleteSession();
    } finally {
      sdk.close();
    }
  }

  /** The SDK's exec of argv {@code true}, which must succeed. */
  static void execTrue(dev.sandboxsdk.Sandbox sdk) {
    ExecResult r = sdk.exec(Command.of("true"), ExecOptions.defaults());
    if (r.exitCode() != 0) {
      throw new IllegalStateException("true failed: " + r);
    }
  }

  /**
   * 2. Exec round trips of argv {@code true}: the SDK, MCP over stdio and over HTTP, the same agent
   * through the SDK and a stdio server, and MCP's ping; after separate warm-ups, in rotating blocks.
   */
  static void execLatency(Runnable sdkCall, StdioServer stdio, HttpServerClient http, SharedAgent shared) {
    ObjectNode callTrue = execParams(argvTrue(), null);
    Runnable stdioCall = () -> checkExec(stdio.call("tools/call", callTrue, null));
    Runnable httpCall = () -> checkExec(http.request("tools/call", callTrue));
    Runnable sharedSdkCall = () -> execTrue(shared.sdk);
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
    long[][] t = rotate(sdkCall, stdioCall, httpCall, sharedSdkCall, sharedStdioCall, pingCall);
    note("exec argv [true], SDK exec() in-process", stats(t[0]));
    note("exec argv [true], MCP tools/call over stdio", stats(t[1]));
    note("exec argv [true], MCP tools/call over HTTP", stats(t[2]));
    note("MCP over stdio minus SDK", delta(t[1], t[0]));
    note("MCP over HTTP minus SDK", delta(t[2], t[0]));
    note("same agent (isolation " + shared.agent.isolation() + "): SDK exec()", stats(t[3]));
    note("same agent: MCP tools/call over stdio (--agent-url)", stats(t[4]));
    note("same agent: MCP over stdio minus SDK", delta(t[4], t[3]));
    note("MCP ping over stdio (pipes and JSON-RPC only)", stats(t[5]));
  }

  /** {@code calls} timed calls of each, alternating in blocks of {@code block} so drift hits all alike. */
  static long[][] rotate(Runnable... each) {
    long[][] t = new long[each.length][calls];
    for (int from = 0; from < calls; from += block) {
      int to = Math.min(calls, from + block);
      for (int k = 0; k < each.length; k++) {
        time(each[k], t[k], from, to);
      }
    }
    return t;
  }

  /**
   * What the exec tool's event stream costs by itself: the same SDK, plain exec against an
   * execStream drained to its complete event (the tool needs the stream's byte counts).
   */
  static void execVersusStream(LocalSandbox sdk, Runnable sdkCall) {
    Runnable sdkStreamCall = () -> {
      int exit = McpStreams.streamExit(sdk, Command.of("true"));
      if (exit != 0) {
        throw new IllegalStateException("true failed: exit " + exit);
      }
    };
    for (int i = 0; i < warmup; i++) {
      sdkStreamCall.run();
    }
    long[][] t = rotate(sdkCall, sdkStreamCall);
    note("SDK exec() again, alternating with the next", stats(t[0]));
    note("SDK execStream() drained to its complete event", stats(t[1]));
    note("SDK execStream minus exec", delta(t[1], t[0]));
  }

  /** 3. One exec with a large output: the SDK's execStream, and MCP over stdio with and without progress. */
  static void streams(LocalSandbox sdk, StdioServer stdio) throws Exception {
    String big = "head -c " + streamBytes + " /dev/zero | base64 -w 0 | head -c " + streamBytes;
    note("stream command", big);
    McpStreams.streamSdk(sdk, big); // warm-up, not reported
    McpStreams.streamStdio(stdio, big, true);
    McpStreams.streamStdio(stdio, big, false);
    List<double[]> sdkRuns = new ArrayList<>();
    List<StreamRun> withProgress = new ArrayList<>();
    List<StreamRun> withoutProgress = new ArrayList<>();
    for (int rep = 0; rep < streamReps; rep++) {
      sdkRuns.add(McpStreams.streamSdk(sdk, big));
      withProgress.add(McpStreams.streamStdio(stdio, big, true));
      withoutProgress.add(McpStreams.streamStdio(stdio, big, false));
    }
    double[] sdkSecs = sdkRuns.stream().mapToDouble(r -> r[0]).toArray();
    note("stream, SDK execStream() drained", streamLine(sdkSecs) + String.format(Locale.ROOT,
        "; %d B received in %d events per run", (long) sdkRuns.get(0)[1], (long) sdkRuns.get(0)[2]));
    StreamRun mp = McpStreams.median(withProgress);
    note("stream, MCP stdio WITH progressToken", streamLine(withProgress.stream().mapToDouble(r -> r.seconds).toArray())
        + String.format(Locale.ROOT, "; median run: first progress after %.1f ms, %d notifications (%d with text),"
            + " %d B of progress text, last progress value %d, %d chars on stdout in all, result %d chars,"
            + " stdoutBytes %d, truncated %s", mp.firstProgressMs, mp.notifications, mp.textNotifications,
            mp.progressTextBytes, mp.lastProgress, mp.wireChars, mp.resultChars, mp.stdoutBytes, mp.truncated));
    StreamRun mn = McpStreams.median(withoutProgress);
    note("stream, MCP stdio WITHOUT progressToken", streamLine(withoutProgress.stream().mapToDouble(r -> r.seconds).toArray())
        + String.format(Locale.ROOT, "; median run: %d notifications, %d chars on stdout (the result),"
            + " stdoutBytes %d, truncated %s", mn.notifications, mn.wireChars, mn.stdoutBytes, mn.truncated));
    note("RSS stdio server after the streams", mem(stdio.pid()));
  }

  /** 4. {@code concurrent} calls of {@code sleep 1} at once: MCP over HTTP and over stdio, and the SDK. */
  static void concurrency(LocalSandbox sdk, StdioServer stdio, HttpServerClient http) throws Exception {
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
  }
}
