package dev.sandboxsdk.bench.agent;

import static dev.sandboxsdk.bench.agent.AgentBench.say;

import dev.sandboxsdk.bench.JsonBytes;
import dev.sandboxsdk.bench.RawHttp;
import dev.sandboxsdk.bench.RawHttp.Resp;
import dev.sandboxsdk.bench.Svg;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Parts 2 to 4 of {@link AgentBench} against one agent JVM (default or tuned flags): launch to
 * ready line and idle memory, then over one keep-alive connection the ping and exec latency
 * series, the streams ({@link StreamPhase}) and the background processes ({@link ProcessesPhase}).
 */
final class AgentPhase {
  /** What the summary needs of one agent. */
  static final class AgentFigures {
    double readyMs;
    ProcStatus idle;
    ProcStatus after;
    String flags;
    boolean ok = true;
  }

  static final byte[] K_DURATION = JsonBytes.ascii("\"duration\":");

  private final AgentBench b;
  private final AgentOptions o;
  private final String name;
  private final List<String> opts;
  private final String phase; // prefix of this agent's marks in the RSS plot
  private long[] lastSamples;

  AgentPhase(AgentBench b, String name, List<String> opts) {
    this.b = b;
    this.o = b.o;
    this.name = name;
    this.opts = opts;
    this.phase = name.replace("-flags", "") + ": ";
  }

  AgentFigures run(boolean full, Stats rawTrue) throws Exception {
    AgentFigures f = new AgentFigures();
    say("");
    say("[agent %s] starting: java %s -jar ...", name, opts.isEmpty() ? "(JVM defaults)" : String.join(" ", opts));
    try (AgentProcess agent = new AgentProcess(b, name, opts)) {
      b.lastAgent = agent;
      b.agentPid = agent.pid;
      b.rss.follow(name, agent.pid);
      b.rss.mark(phase + "ready");
      startedAndIdle(agent, f);
      if (!full) {
        return f;
      }
      try (RawHttp http = new RawHttp("127.0.0.1", agent.port, b.token)) {
        f.ok &= overHttp(http, agent, rawTrue);
      }
      f.after = ProcStatus.of(agent.pid);
      say("  after the benchmark: %s", f.after.line());
      b.sum("[%s] after benchmark: %s", name, f.after.line());
      if (agent.extraStdoutLines > 0) {
        say("  WARNING: the agent printed %d extra stdout line(s) after the ready line", agent.extraStdoutLines);
      }
    } catch (IOException | RuntimeException e) {
      say("  FAILED against agent %s: %s", name, e);
      if (b.lastAgent != null) {
        say("  agent alive: %s; agent stderr (%s):%n%s", b.lastAgent.process.isAlive(), b.lastAgent.stderrLog,
            b.lastAgent.stderrText());
      }
      throw e;
    } finally {
      b.agentPid = 0;
      b.rss.mark(phase + "stopped");
      b.rss.follow(null, 0);
    }
    return f;
  }

  /** Its flags, launch to ready line, and memory after {@code --idle-ms}. */
  private void startedAndIdle(AgentProcess agent, AgentFigures f) throws Exception {
    f.readyMs = agent.readyMs;
    f.flags = (opts.isEmpty() ? "(none given) " : String.join(" ", opts) + " ") + "=> " + agent.flagsLine();
    say("  ready line : %s", agent.readyLine);
    say("  JVM flags  : %s", f.flags);
    say("  launch -> ready line: %.0f ms", agent.readyMs);
    String err = agent.stderrText();
    boolean envReset = err.contains("ignored signals");
    say("  agent SigIgn mask %s; launcher (JDK spawn only) = setsid%s", ProcStatus.sigIgn(agent.pid),
        envReset ? " env --default-signal" : "");
    Thread.sleep(o.idleMs);
    f.idle = ProcStatus.of(agent.pid);
    say("  idle (ready + %d ms): %s", o.idleMs, f.idle.line());
    b.sum("[%s] JVM opts      : %s", name, opts.isEmpty() ? "(JVM defaults)" : String.join(" ", opts));
    b.sum("[%s] launch->ready : %.0f ms", name, agent.readyMs);
    b.sum("[%s] idle          : %s", name, f.idle.line());
  }

  /** Everything over the one keep-alive connection; whether every check passed. */
  private boolean overHttp(RawHttp http, AgentProcess agent, Stats rawTrue) throws Exception {
    boolean ok = true;
    Resp version = http.call("GET", "/api/version", null);
    Matcher spawnMode = Pattern.compile("\"spawn\":\"([a-z]+)\"").matcher(version.text());
    String spawn = spawnMode.find() ? spawnMode.group(1) : "unreported";
    say("  spawn (per /api/version): %s; agent args: %s", spawn, o.agentArgs.isEmpty() ? "(none)" : o.agentArgs);
    b.sum("[%s] spawn                          : %s (agent args: %s)", name, spawn,
        o.agentArgs.isEmpty() ? "none" : o.agentArgs);
    execSeries(http, spawn, rawTrue);
    ProcStatus afterExec = ProcStatus.of(agent.pid);
    say("  after the exec series: %s", afterExec.line());
    b.sum("[%s] after exec series: %s", name, afterExec.line());

    // 3. streaming
    boolean stream = !o.skipStream && (name.equals("default-flags") || o.tunedBench.equals("all"));
    if (stream) {
      b.rss.mark(phase + "streams");
      ok &= new StreamPhase(b, http, name).run();
      ProcStatus afterStreams = ProcStatus.of(agent.pid);
      say("  after the streams: %s", afterStreams.line());
      b.sum("[%s] after streams: %s", name, afterStreams.line());
    }

    // 4b. many processes
    if (o.processes > 0 && (name.equals("default-flags") || o.tunedBench.equals("all"))) {
      b.rss.mark(phase + o.processes + " processes");
      ok &= new ProcessesPhase(b).manyProcesses(http, name, agent);
    }
    int conns = http.connectionsOpened;
    say("  HTTP connections opened for all of the above (%d requests): %d%s", http.requests, conns,
        http.reconnects.isEmpty() ? "" : "; the server closed the connection " + http.reconnects);
    b.sum("[%s] HTTP connections used             : %d for %d requests%s", name, conns, http.requests,
        conns == 1 ? "" : "  (expected 1! server closed it " + http.reconnects + ")");
    return ok && conns == 1;
  }

  /** The HTTP floor (ping) and exec of {@code true}, argv and shell, against the raw spawns. */
  private void execSeries(RawHttp http, String spawn, Stats rawTrue) throws IOException {
    // HTTP floor
    b.rss.mark(phase + "ping, exec series");
    Stats ping = latencySeries(http, "GET", "/api/ping", null, "\"status\":\"healthy\"", null);
    plotLatency("GET /api/ping (no spawn), " + name);
    say("  GET /api/ping (HTTP+JSON floor, no spawn): %s", ping.line());
    b.sum("[%s] GET /api/ping (no spawn)          : %s", name, ping.line());
    // 2. exec argv / shell
    long[] durSum = new long[1];
    Stats execArgv = latencySeries(http, "POST", "/api/execute", "{\"argv\":[\"true\"]}", "\"exitCode\":0", durSum);
    double durMean = durSum[0] / (double) o.calls;
    plotLatency("exec {\"argv\":[\"true\"]}, " + name);
    say("  exec {\"argv\":[\"true\"]}   : %s", execArgv.line());
    say("     agent-reported duration mean %.2f ms (whole ms, truncated)", durMean);
    Stats execShell = latencySeries(http, "POST", "/api/execute", "{\"command\":\"true\"}", "\"exitCode\":0", null);
    plotLatency("exec {\"command\":\"true\"}, " + name);
    say("  exec {\"command\":\"true\"}  : %s", execShell.line());
    say("  overhead vs raw spawn p50: argv %+.3f ms, shell %+.3f ms (raw `true` p50 %.3f ms)",
        execArgv.p50() - rawTrue.p50(), execShell.p50() - rawTrue.p50(), rawTrue.p50());
    b.sum("[%s] exec argv true (1 conn)          : %s", name, execArgv.line());
    b.sum("[%s] exec command true (1 conn)       : %s", name, execShell.line());
    b.sum("[%s] exec overhead p50 vs raw `true`  : argv %+.3f ms, shell %+.3f ms", name,
        execArgv.p50() - rawTrue.p50(), execShell.p50() - rawTrue.p50());
    b.sum("[%s] agent-reported duration, argv    : mean %.2f ms (whole-ms, truncated)", name, durMean);
    String decomposition = decomposition(spawn, rawTrue, ping, execArgv);
    say("  overhead decomposition at p50 (ms): %s", decomposition);
    b.sum("[%s] overhead decomposition p50 (ms)  : %s", name, decomposition);
  }

  /** Where exec's time over raw `true` goes, at p50. */
  private String decomposition(String spawn, Stats rawTrue, Stats ping, Stats execArgv) {
    Stats rawSetsid = b.rawSetsid;
    // The native spawn runs no setsid: its command is the only execve, as in raw `true`.
    return spawn.equals("native")
        ? String.format(Locale.ROOT, "no setsid exec (native spawn), HTTP+JSON floor %.3f (ping), rest %+.3f"
            + " (exec - raw `true` - ping)", ping.p50(), execArgv.p50() - rawTrue.p50() - ping.p50())
        : String.format(Locale.ROOT,
        "extra setsid exec %+.3f (raw `setsid true` - raw `true`), HTTP+JSON floor %.3f (ping), rest %+.3f"
            + " (exec - raw `setsid true` - ping); shell path: raw `setsid sh -c true` - raw `setsid true` = %+.3f",
        rawSetsid.p50() - rawTrue.p50(), ping.p50(), execArgv.p50() - rawSetsid.p50() - ping.p50(),
        b.rawSh.p50() - rawSetsid.p50());
  }

  /** Adds the samples of the latency series just measured to the latency plot. */
  private void plotLatency(String label) {
    Svg.percentileSeries(b.latencyPlot, label, lastSamples, false);
  }

  private Stats latencySeries(RawHttp http, String method, String path, String body, String mustContain,
      long[] durationSum) throws IOException {
    byte[] bytes = body == null ? null : body.getBytes(StandardCharsets.UTF_8);
    long[] samples = new long[o.calls];
    for (int i = -o.warmup; i < o.calls; i++) {
      long t0 = System.nanoTime();
      Resp r = http.call(method, path, bytes);
      long dt = System.nanoTime() - t0;
      if (r.status != 200 || !r.text().contains(mustContain)) {
        throw new IOException(method + " " + path + " " + body + ": HTTP " + r.status + " " + r.text());
      }
      if (i >= 0) {
        samples[i] = dt;
        if (durationSum != null) {
          durationSum[0] += JsonBytes.parseLongAfter(r.body, 0, r.body.length, K_DURATION);
        }
      }
    }
    lastSamples = samples;
    return Stats.of(samples);
  }
}
