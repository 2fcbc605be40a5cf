package dev.sandboxsdk.bench.agent;

import dev.sandboxsdk.bench.JsonBytes;
import dev.sandboxsdk.bench.Machine;
import dev.sandboxsdk.bench.Percentiles;
import dev.sandboxsdk.bench.Procs;
import dev.sandboxsdk.bench.RawHttp;
import dev.sandboxsdk.bench.RawHttp.Resp;
import dev.sandboxsdk.bench.Svg;
import dev.sandboxsdk.bench.agent.AgentPhase.AgentFigures;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Benchmark of the sandbox container agent, self-contained (JDK only: it starts the agent's jar and
 * talks HTTP to it on a plain socket). Run it with {@code bash benchmarks/scripts/agent.sh}, which
 * runs it from the repository root with this module's jar alone on the classpath:
 *
 * <pre>
 *   bash benchmarks/scripts/agent.sh [--jar container-agent/target/container-agent.jar]
 *        [--calls 1000] [--warmup 200] [--stream-bytes 268435456] [--rand-bytes 100000000]
 *        [--processes 1000] [--agent-jvm-opts "-XX:+UseSerialGC -Xss512k -Xms8m -Xmx512m -XX:-UsePerfData"]
 * </pre>
 *
 * It measures, in one run (see docs/performance.md):
 *
 * <ol>
 *   <li>raw {@code new ProcessBuilder("true").start().waitFor()} in this JVM (default launch
 *       mechanism), plus {@code setsid true} and {@code setsid /bin/sh -c true} (what the agent
 *       actually spawns), and {@code true} in child JVMs of this program ({@code --raw-spawn-only})
 *       with {@code -Djdk.lang.Process.launchMechanism=VFORK} and with the default;
 *   <li>round trips of {@code GET /api/ping}, {@code {"argv":["true"]}} and {@code {"command":"true"}}
 *       through the agent on ONE keep-alive HTTP/1.1 connection, using a minimal client on a plain
 *       socket with TCP_NODELAY (the number of connections opened is reported);
 *   <li>streaming throughput of {@code POST /api/execute/stream} (base64 zeros, base64 random data,
 *       UTF-8 text): this client de-chunks HTTP, parses SSE, decodes base64/JSON strings and verifies
 *       byte count, offsets and CRC-32; plus the same streams read by a drain-only client;
 *   <li>agent RSS (idle, after each phase), JVM launch to ready line, and 1,000 concurrent
 *       background processes (start latency, RSS, threads, fds, exec latency meanwhile, kill-all);
 *   <li>the same for a second agent JVM started with {@code --agent-jvm-opts}.
 * </ol>
 *
 * It writes SVG plots into {@code --plots DIR}: exec latency by percentile beside raw spawn,
 * stream throughput, start latency as the process count grows, and the agent's RSS over the run.
 * {@code --smoke} runs every part at seconds-long sizes (CI), still verifying every result.
 *
 * Percentiles: samples sorted ascending, p-th percentile = sample at index ceil(p*n)-1.
 *
 * <p>This class runs the parts in order and prints the summary; the parts are {@link RawSpawn},
 * {@link AgentPhase} (with {@link StreamPhase} and {@link ProcessesPhase}) and
 * {@link #startupSeries}; {@link AgentProcess} starts an agent, {@link EventStream} reads its
 * event streams, {@link RssTimeline} samples its memory, and the HTTP client is the shared
 * {@link dev.sandboxsdk.bench.RawHttp}.
 */
public class AgentBench {
  final AgentOptions o;
  final Path sourceJar;
  Path jar;
  Path workDir;
  Path workspace;
  Path tokenFile;
  String token;
  long agentPid;
  AgentProcess lastAgent;
  int agentLaunches;
  final List<String> summary = new ArrayList<>();
  Stats rawSetsid;
  Stats rawSh;
  // Plots (Svg), filled in as the run goes and written at its end
  String runInfo;
  Svg.Plot latencyPlot;
  Svg.Bars streamBars;
  final Map<String, Svg.Plot> processPlots = new LinkedHashMap<>();
  RssTimeline rss;

  AgentBench(AgentOptions o) {
    this.o = o;
    this.sourceJar = Path.of(o.jar).toAbsolutePath().normalize();
  }

  static void die(String msg) {
    System.err.println("AgentBench: " + msg);
    System.exit(2);
  }

  static void say(String fmt, Object... args) {
    System.out.println(args.length == 0 ? fmt : String.format(Locale.ROOT, fmt, args));
    System.out.flush();
  }

  void sum(String fmt, Object... args) {
    summary.add(args.length == 0 ? fmt : String.format(Locale.ROOT, fmt, args));
  }

  /** A warning when something else keeps the machine busy (the figures are then not representative). */
  static String busyWarning() {
    try {
      double oneMinute = Double.parseDouble(Machine.loadAverage().split(" ")[0]);
      return oneMinute > Runtime.getRuntime().availableProcessors()
          ? "  (WARNING: the machine looks busy; figures may be distorted)" : "";
    } catch (RuntimeException e) {
      return "";
    }
  }

  /** Runs everything; returns whether every check passed. */
  boolean run() throws Exception {
    long benchStart = System.nanoTime();
    runInfo = Svg.runInfo() + (o.smoke ? ", SMOKE SIZES (figures meaningless)" : "");
    latencyPlot = Svg.percentiles("Exec round trip through the agent vs raw spawn of `true`", runInfo);
    streamBars = new Svg.Bars("POST /api/execute/stream throughput, median of " + o.streamReps + " (dots: each run)",
        runInfo, "workload (" + o.streamBytes + " B of zeros and text, " + o.randBytes + " B random)",
        "MB/s of process output (10^6 B/s)");
    rss = new RssTimeline();
    rss.start();
    rss.mark("raw spawn series (no agent)");
    setUp();
    printEnvironment();

    // 1. Raw spawn -----------------------------------------------------------------------------
    Stats rawTrue = RawSpawn.measure(this);

    // 2-4. Agent with default JVM flags ------------------------------------------------------------
    List<String> baseOpts = Procs.splitOpts(o.baseOpts);
    List<String> tunedOpts = Procs.splitOpts(o.tunedOpts);
    AgentFigures base = new AgentPhase(this, "default-flags", baseOpts).run(true, rawTrue);
    AgentFigures tuned = new AgentPhase(this, "tuned-flags", tunedOpts).run(!o.tunedBench.equals("startup"), rawTrue);

    // 5. Start-up repeats ------------------------------------------------------------------------
    say("");
    say("[5] start-up: %d extra launches per flag set (JVM launch -> ready line)", o.startupRepeats);
    double[] baseStarts = startupSeries("default-flags", baseOpts, base.readyMs);
    double[] tunedStarts = startupSeries("tuned-flags", tunedOpts, tuned.readyMs);

    writePlots();
    printSummary(base, tuned, baseStarts, tunedStarts, benchStart);
    boolean allOk = base.ok && tuned.ok;
    if (!allOk) {
      say("SOME CHECKS FAILED (see above)");
    }
    return allOk;
  }

  /** The private copy of the agent jar, the workspace and the token file, in a temporary directory. */
  private void setUp() throws IOException {
    if (!Files.isRegularFile(sourceJar)) {
      die("agent jar not found: " + sourceJar + " (build it: ./mvnw -q -B -pl container-agent package -DskipTests, or use benchmarks/scripts/agent.sh)");
    }
    workDir = Files.createTempDirectory("agent-bench");
    // Run agents from a private copy, so a rebuild of target/ during the run cannot change classes under them.
    jar = workDir.resolve("container-agent.jar");
    Files.copy(sourceJar, jar);
    workspace = workDir.resolve("workspace");
    Files.createDirectories(workspace);
    token = "bench-" + Long.toHexString(System.nanoTime()) + Long.toHexString(Double.doubleToLongBits(Math.random()));
    tokenFile = workDir.resolve("token");
    Files.writeString(tokenFile, token + "\n");
  }

  private void printEnvironment() throws IOException {
    String env = String.format(Locale.ROOT, "%s; %d cores (availableProcessors), %s RAM; %s %s (%s); %s %s",
        ZonedDateTime.now().format(DateTimeFormatter.ISO_OFFSET_DATE_TIME), Runtime.getRuntime().availableProcessors(),
        Machine.memTotal(), System.getProperty("java.vm.name"), System.getProperty("java.runtime.version"),
        System.getProperty("java.vendor"), System.getProperty("os.name"), System.getProperty("os.version"));
    say("== AgentBench ==");
    say("environment : %s", env);
    say("cpu         : %s", Machine.cpuModel());
    say("agent jar   : %s (%d bytes, modified %s; run from a private copy)", sourceJar, Files.size(sourceJar),
        Files.getLastModifiedTime(sourceJar));
    say("bench JVM   : %s", ManagementFactory.getRuntimeMXBean().getInputArguments());
    say("calls=%d warmup=%d stream-bytes=%d rand-bytes=%d processes=%d", o.calls, o.warmup, o.streamBytes, o.randBytes, o.processes);
    String load = Machine.loadAverage();
    say("load average: %s%s", load, busyWarning());
    sum("environment        : %s", env);
    sum("load avg at start  : %s%s", load, busyWarning());
    sum("cpu                : %s", Machine.cpuModel());
  }

  private void writePlots() throws IOException {
    rss.interrupt();
    say("");
    Path plotDir = Path.of(o.plots);
    say("plots: %s", latencyPlot.write(plotDir, "agent-exec-latency.svg"));
    if (!o.skipStream) {
      say("plots: %s", streamBars.write(plotDir, "agent-stream-throughput.svg"));
    }
    for (Map.Entry<String, Svg.Plot> p : processPlots.entrySet()) {
      say("plots: %s", p.getValue().write(plotDir, "agent-processes-" + p.getKey() + ".svg"));
    }
    say("plots: %s", rss.plot(runInfo).write(plotDir, "agent-rss.svg"));
  }

  private void printSummary(AgentFigures base, AgentFigures tuned, double[] baseStarts, double[] tunedStarts,
      long benchStart) {
    say("");
    say("==================================== SUMMARY ====================================");
    for (String s : summary) {
      say(s);
    }
    say("start-up (launch -> ready line), default flags  : median %.0f ms, all %s", Percentiles.median(baseStarts),
        fmtList(baseStarts));
    say("start-up (launch -> ready line), tuned flags    : median %.0f ms, all %s", Percentiles.median(tunedStarts),
        fmtList(tunedStarts));
    say("idle RSS (ready + %d ms), default flags          : %.1f MiB", o.idleMs, base.idle.rssKb() / 1024.0);
    say("idle RSS (ready + %d ms), tuned flags            : %.1f MiB", o.idleMs, tuned.idle.rssKb() / 1024.0);
    say("default agent JVM flags : %s", base.flags);
    say("tuned agent JVM flags   : %s", tuned.flags);
    say("bench JVM flags         : %s", ManagementFactory.getRuntimeMXBean().getInputArguments());
    say("total bench time        : %.1f s; load average at the end (includes this benchmark): %s",
        (System.nanoTime() - benchStart) / 1e9, Machine.loadAverage());
    say("=================================================================================");
  }

  /** Removes the temporary workspace (with its 100 MB random file) and logs unless --keep-workspace. */
  void cleanUp() {
    if (workDir == null) {
      return;
    }
    if (o.keep) {
      say("workspace and logs kept in %s", workDir);
    } else {
      Procs.deleteTree(workDir);
    }
  }

  static String fmtList(double[] v) {
    StringBuilder sb = new StringBuilder("[");
    for (int i = 0; i < v.length; i++) {
      sb.append(i == 0 ? "" : ", ").append(String.format(Locale.ROOT, "%.0f", v[i]));
    }
    return sb.append("] ms").toString();
  }

  double[] startupSeries(String name, List<String> opts, double first) throws IOException {
    double[] out = new double[o.startupRepeats + 1];
    double[] firstExec = new double[o.startupRepeats];
    out[0] = first;
    for (int i = 1; i <= o.startupRepeats; i++) {
      try (AgentProcess a = new AgentProcess(this, name, opts)) {
        out[i] = a.readyMs;
        // What a client that sends its first command right away waits for (LocalSandbox does).
        try (RawHttp http = new RawHttp("127.0.0.1", a.port, token)) {
          Resp r = http.call("POST", "/api/execute", JsonBytes.ascii("{\"argv\":[\"true\"]}"));
          if (r.status != 200 || !r.text().contains("\"exitCode\":0")) {
            throw new IOException("first exec: HTTP " + r.status + " " + r.text());
          }
        }
        firstExec[i - 1] = (System.nanoTime() - a.launchNanos) / 1e6;
      }
    }
    say("  %-14s %s (first = the benchmarked launch)", name, fmtList(out));
    if (firstExec.length == 0) {
      return out;
    }
    say("  %-14s launch -> first exec answered: %s (a new connection right after the ready line)", name, fmtList(firstExec));
    sum("start-up, %s: launch -> first `exec true` answered: median %.0f ms, all %s", name, Percentiles.median(firstExec),
        fmtList(firstExec));
    return out;
  }

  public static void main(String[] args) throws Exception {
    AgentOptions o = AgentOptions.parse(args);
    if (o.rawSpawnOnly) {
      RawSpawn.rawSpawnChild(o);
      return;
    }
    AgentBench bench = new AgentBench(o);
    boolean ok;
    try {
      ok = bench.run();
    } finally {
      bench.cleanUp();
    }
    if (!ok) {
      System.exit(1);
    }
  }
}
