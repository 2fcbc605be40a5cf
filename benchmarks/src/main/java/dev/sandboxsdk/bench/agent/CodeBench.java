package dev.sandboxsdk.bench.agent;

import dev.sandboxsdk.bench.JsonBytes;
import dev.sandboxsdk.bench.Machine;
import dev.sandboxsdk.bench.Percentiles;
import dev.sandboxsdk.bench.Procs;
import dev.sandboxsdk.bench.RawHttp;
import java.io.BufferedReader;
import java.io.Closeable;
import java.io.File;
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
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.ZipFile;

/**
 * What a code context costs beyond its interpreter: the real agent jar started once (the JVM
 * options the local sandbox starts it with), and for each language whose interpreter is on the
 * {@code PATH} the agent gives its commands (others are skipped with a line saying so),
 * alternating sample by sample with the floor, so both see the same load:
 *
 * <ul>
 *   <li>a run of {@code 1+1}: {@code POST /api/execute/code} on one kept HTTP connection (a
 *       minimal HTTP/1.1 client, {@code TCP_NODELAY}), its event stream read to the end (result
 *       {@code 2}, then {@code execution_complete}); the floor is the same request line written
 *       straight to a live runner's stdin (the runner the agent jar ships, started directly) and
 *       its answer read to {@code done}; then the agent again through the JDK's {@code HttpClient},
 *       for what a full client adds; and the first runs of the warm-up on their own (the agent's
 *       JIT compilers still at work);
 *   <li>context creation: {@code POST /api/contexts} to its answer (the agent answers once the
 *       runner says it is ready); the floor is the interpreter started directly with the same
 *       runner, to its ready line.
 * </ul>
 *
 * The floor's interpreters run in the environment the agent gives its commands ({@code env -0}
 * run through it), so they read the same start-up files (node reads {@code NODE_EXTRA_CA_CERTS}).
 *
 * JDK only; run it with
 *
 * <pre>
 *   bash benchmarks/scripts/code.sh [--jar container-agent/target/container-agent.jar]
 *        [--runs 2000] [--warmup 1000] [--contexts 30] [--languages python,javascript] [--smoke]
 * </pre>
 *
 * Percentiles: samples sorted ascending, p-th percentile = sample at index ceil(p*n)-1. Every
 * answer is checked; a failed check ends the run with an exception. No timing is asserted.
 */
public class CodeBench {
  /** How many of the first warm-up runs are reported on their own. */
  private static final int FIRST = 50;
  private static final Pattern CONTEXT_ID = Pattern.compile("\"contextId\":\"([^\"]+)\"");
  private static final Pattern URL = Pattern.compile("\"url\":\"http://([^:\"]+):(\\d+)\"");
  private static final byte[] STDOUT = JsonBytes.ascii("\"stdout\":\"");
  /** The request line the agent writes to a runner for a run of 1+1 with the default output limit. */
  private static final byte[] PIPE_REQUEST = "{\"code\":\"1+1\",\"maxOutputBytes\":1048576}\n"
      .getBytes(StandardCharsets.UTF_8);

  /** A language of the agent's code contexts: its wire name, interpreter, inline flag and runner. */
  enum Lang {
    PYTHON("python", "python3", "-c", "runner.py"),
    JAVASCRIPT("javascript", "node", "-e", "runner.js");

    final String wire;
    final String exe;
    final String flag;
    final String runner;

    Lang(String wire, String exe, String flag, String runner) {
      this.wire = wire;
      this.exe = exe;
      this.flag = flag;
      this.runner = runner;
    }
  }

  private String jar = "container-agent/target/container-agent.jar";
  private int runs = 2000;
  private int warmup = 1000;
  private int contexts = 30;
  private List<String> languages = List.of("python", "javascript");
  /** Whether a language before has run its series on this agent. */
  private boolean agentWarm;

  public static void main(String[] args) throws Exception {
    CodeBench b = new CodeBench();
    b.parse(args);
    b.run();
  }

  private void parse(String[] args) {
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--jar" -> jar = args[++i];
        case "--runs" -> runs = Integer.parseInt(args[++i]);
        case "--warmup" -> warmup = Integer.parseInt(args[++i]);
        case "--contexts" -> contexts = Integer.parseInt(args[++i]);
        case "--languages" -> languages = Arrays.asList(args[++i].split(","));
        case "--smoke" -> { // seconds-long, for CI: every part runs and every answer is checked
          runs = 50;
          warmup = 20;
          contexts = 3;
        }
        default -> throw new IllegalArgumentException("unknown option " + args[i]);
      }
    }
  }

  private void run() throws Exception {
    if (!Files.isRegularFile(Path.of(jar))) {
      throw new IllegalStateException(jar + " is missing: ./mvnw -o -q -pl container-agent package -DskipTests");
    }
    System.out.printf(Locale.ROOT, "CodeBench: %d runs of 1+1 after %d warm-up runs, %d context creations per language;"
        + " %d CPUs, %s, java %s%n", runs, warmup, contexts, Runtime.getRuntime().availableProcessors(),
        Machine.cpuModel(), System.getProperty("java.version"));
    System.out.println("load average at the start: " + Machine.loadAverages());
    Path ws = Files.createTempDirectory("code-bench-");
    try (Agent agent = new Agent(jar, ws)) {
      System.out.println("agent: " + jar + ", isolation " + agent.isolation);
      for (String name : languages) {
        Lang lang = Lang.valueOf(name.toUpperCase(Locale.ROOT));
        Path exe = onPath(lang.exe, agent.commandEnv.get("PATH"));
        if (exe == null) {
          System.out.printf("%s: skipped, %s is not on the PATH the agent gives commands (%s)%n", lang.wire, lang.exe,
              agent.commandEnv.get("PATH"));
          continue;
        }
        String source = runnerSource(lang);
        System.out.printf("%s (%s = %s):%n", lang.wire, lang.exe, exe);
        roundTrips(agent, lang, exe, source);
        creations(agent, lang, exe, source);
      }
    } finally {
      Procs.deleteTree(ws);
    }
    System.out.println("load average at the end: " + Machine.loadAverages());
  }

  /** {@code 1+1} through the agent on a kept connection against the same request on a live runner's pipe. */
  private void roundTrips(Agent agent, Lang lang, Path exe, String source) throws IOException, InterruptedException {
    String id = agent.createContext(lang);
    byte[] body = ("{\"context_id\":\"" + id + "\",\"code\":\"1+1\"}").getBytes(StandardCharsets.UTF_8);
    long[] through = new long[runs];
    long[] jdk = new long[runs];
    long[] pipe = new long[runs];
    int first = Math.min(FIRST, warmup);
    long[] coldThrough = new long[first];
    long[] coldPipe = new long[first];
    try (Runner runner = Runner.start(lang, exe, source, agent.commandEnv)) {
      for (int i = -warmup; i < runs; i++) {
        long t0 = System.nanoTime();
        agent.onePlusOne(body);
        long t1 = System.nanoTime();
        runner.onePlusOne();
        long t2 = System.nanoTime();
        agent.onePlusOneJdk(body);
        long t3 = System.nanoTime();
        if (i >= 0) {
          through[i] = t1 - t0;
          pipe[i] = t2 - t1;
          jdk[i] = t3 - t2;
        } else if (i < -warmup + first) {
          coldThrough[i + warmup] = t1 - t0;
          coldPipe[i + warmup] = t2 - t1;
        }
      }
    } finally {
      agent.deleteContext(id);
    }
    boolean freshAgent = !agentWarm;
    agentWarm = true;
    System.out.println("  1+1 round trip");
    print("agent", through, "POST /api/execute/code on a kept connection, its event stream read to the end");
    print("pipe", pipe, "the same request on a live runner's stdin, read to \"done\": the floor");
    difference("agent", through, pipe);
    print("jdk", jdk, "the agent again through the JDK's HttpClient (kept connection): what that client adds");
    difference("jdk", jdk, pipe);
    if (first > 0) {
      System.out.printf("  the first %d runs of the warm-up (%s)%n", first, freshAgent
          ? "a fresh agent: its JIT compilers still at work" : "the agent already warm from the language before");
      print("agent", coldThrough, "as above");
      print("pipe", coldPipe, "as above");
      difference("agent", coldThrough, coldPipe);
    }
  }

  /** Context creation through the agent against the interpreter started directly with the runner. */
  private void creations(Agent agent, Lang lang, Path exe, String source) throws IOException, InterruptedException {
    long[] through = new long[contexts];
    long[] direct = new long[contexts];
    for (int i = -1; i < contexts; i++) { // one warm-up each: the first start reads the interpreter from disk
      long t0 = System.nanoTime();
      String id = agent.createContext(lang);
      long t1 = System.nanoTime();
      agent.deleteContext(id);
      long t2 = System.nanoTime();
      Runner runner = Runner.start(lang, exe, source, agent.commandEnv);
      long t3 = System.nanoTime();
      runner.close();
      if (i >= 0) {
        through[i] = t1 - t0;
        direct[i] = t3 - t2;
      }
    }
    System.out.println("  context creation");
    print("agent", through, "POST /api/contexts to its answer: spawn to the runner's ready line");
    print("pipe", direct, "the interpreter started directly with the runner, to its ready line: the floor");
    difference("agent", through, direct);
  }

  private static void print(String label, long[] nanos, String what) {
    long[] s = Percentiles.sorted(nanos);
    System.out.printf(Locale.ROOT, "    %-6s p50 %8.3f ms  p90 %8.3f ms  p99 %8.3f ms  (n=%d; %s)%n", label,
        Percentiles.pickMs(s, 0.50), Percentiles.pickMs(s, 0.90), Percentiles.pickMs(s, 0.99), s.length, what);
  }

  private static void difference(String label, long[] through, long[] floor) {
    long[] a = Percentiles.sorted(through);
    long[] f = Percentiles.sorted(floor);
    System.out.printf(Locale.ROOT, "    %s - floor: p50 %+8.3f ms  p90 %+8.3f ms%n", label,
        Percentiles.pickMs(a, 0.50) - Percentiles.pickMs(f, 0.50), Percentiles.pickMs(a, 0.90) - Percentiles.pickMs(f, 0.90));
  }

  /** The interpreter as the agent finds it: the first executable of that name on {@code path}, or null. */
  static Path onPath(String exe, String path) {
    if (path == null) {
      return null;
    }
    for (String dir : path.split(File.pathSeparator)) {
      Path p = Path.of(dir.isEmpty() ? "." : dir, exe);
      if (Files.isRegularFile(p) && Files.isExecutable(p)) {
        return p;
      }
    }
    return null;
  }

  /** The runner the agent ships, read from its jar. */
  private String runnerSource(Lang lang) throws IOException {
    try (ZipFile zip = new ZipFile(jar)) {
      var entry = zip.getEntry("dev/sandboxsdk/agent/code/" + lang.runner);
      if (entry == null) {
        throw new IllegalStateException(jar + " lacks its " + lang.runner);
      }
      try (InputStream in = zip.getInputStream(entry)) {
        return new String(in.readAllBytes(), StandardCharsets.UTF_8);
      }
    }
  }

  /** The agent JVM, started as the local sandbox starts it, with one kept HTTP connection to it. */
  static final class Agent implements Closeable {
    final StdinAgent process;
    final String isolation;
    final String token;
    final RawHttp http;
    final HttpClient jdk = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    final URI base;
    /** The environment the agent gives its commands (and so its interpreters), for the floor. */
    final Map<String, String> commandEnv;

    Agent(String jar, Path workspace) throws IOException {
      process = StdinAgent.start(jar, workspace);
      Matcher url = URL.matcher(process.readyLine());
      url.find();
      isolation = process.isolation();
      token = process.token();
      http = new RawHttp(url.group(1), Integer.parseInt(url.group(2)), token);
      base = URI.create("http://" + url.group(1) + ":" + url.group(2));
      commandEnv = commandEnv();
    }

    /** What {@code env -0} prints when the agent runs it: the environment its commands start from. */
    private Map<String, String> commandEnv() throws IOException {
      RawHttp.Resp r = http.call("POST", "/api/execute", "{\"argv\":[\"env\",\"-0\"]}".getBytes(StandardCharsets.UTF_8));
      byte[] json = r.body;
      int at = JsonBytes.indexOf(json, 0, json.length, STDOUT);
      if (r.status != 200 || at < 0) {
        throw new IllegalStateException("env in the agent failed: " + r.status + " " + r.text());
      }
      byte[] out = new byte[json.length];
      int n = JsonBytes.unescapeJsonString(json, at + STDOUT.length, json.length, out, new int[1]);
      Map<String, String> env = new LinkedHashMap<>();
      for (String kv : new String(out, 0, n, StandardCharsets.UTF_8).split("\0")) {
        int eq = kv.indexOf('=');
        if (eq > 0) {
          env.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
      }
      env.remove("SANDBOX_AGENT_RUN"); // the marker of that one command
      return env;
    }

    String createContext(Lang lang) throws IOException {
      RawHttp.Resp r = http.call("POST", "/api/contexts", ("{\"language\":\"" + lang.wire + "\"}")
          .getBytes(StandardCharsets.UTF_8));
      Matcher id = CONTEXT_ID.matcher(r.text());
      if (r.status != 200 || !id.find()) {
        throw new IllegalStateException("creating a " + lang.wire + " context failed: " + r.status + " " + r.text());
      }
      return id.group(1);
    }

    void deleteContext(String id) throws IOException {
      RawHttp.Resp r = http.call("DELETE", "/api/contexts/" + id, null);
      if (r.status != 200) {
        throw new IllegalStateException("deleting context " + id + " failed: " + r.status + " " + r.text());
      }
    }

    void onePlusOne(byte[] body) throws IOException {
      RawHttp.Resp r = http.call("POST", "/api/execute/code", body);
      String events = r.text();
      if (r.status != 200 || !events.contains("\"type\":\"result\",\"text\":\"2\"")
          || !events.contains("\"type\":\"execution_complete\"") || events.contains("\"type\":\"error\"")) {
        throw new IllegalStateException("a run of 1+1 failed: " + r.status + " " + events);
      }
    }

    /** The same run through the JDK's HttpClient, its body read whole. */
    void onePlusOneJdk(byte[] body) throws IOException, InterruptedException {
      HttpRequest request = HttpRequest.newBuilder(base.resolve("/api/execute/code"))
          .header("Authorization", "Bearer " + token).header("Content-Type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofByteArray(body)).build();
      HttpResponse<String> r = jdk.send(request, HttpResponse.BodyHandlers.ofString());
      if (r.statusCode() != 200 || !r.body().contains("\"type\":\"result\",\"text\":\"2\"")
          || !r.body().contains("\"type\":\"execution_complete\"")) {
        throw new IllegalStateException("a run of 1+1 failed: " + r.statusCode() + " " + r.body());
      }
    }

    @Override
    public void close() throws IOException {
      http.close();
      process.close();
    }
  }

  /** A runner started directly (the floor): the interpreter with the agent's runner inline and its environment. */
  static final class Runner implements Closeable {
    final Process process;
    final OutputStream in;
    final BufferedReader out;

    private Runner(Process process) {
      this.process = process;
      this.in = process.getOutputStream();
      this.out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    }

    /** Starts the runner and waits for its ready line. */
    static Runner start(Lang lang, Path exe, String source, Map<String, String> env) throws IOException {
      ProcessBuilder pb = new ProcessBuilder(exe.toString(), lang.flag, source).redirectError(ProcessBuilder.Redirect.DISCARD);
      pb.environment().clear();
      pb.environment().putAll(env);
      pb.environment().put("PYTHONUNBUFFERED", "1"); // as the agent starts it
      pb.environment().put("PYTHONIOENCODING", "utf-8");
      pb.environment().put("MPLBACKEND", "Agg");
      Runner r = new Runner(pb.start());
      String line = r.out.readLine();
      if (line == null || !line.replace(" ", "").contains("\"type\":\"ready\"")) {
        r.close();
        throw new IllegalStateException(lang.exe + " did not start its runner: " + line);
      }
      return r;
    }

    /** Writes the request line and reads the answer to its {@code done}; checks the result is 2. */
    void onePlusOne() throws IOException {
      in.write(PIPE_REQUEST);
      in.flush();
      List<String> lines = new ArrayList<>(2);
      String line;
      while ((line = out.readLine()) != null) {
        String compact = line.replace(" ", "");
        lines.add(compact);
        if (compact.contains("\"type\":\"done\"")) {
          break;
        }
      }
      if (line == null || lines.size() != 2 || !lines.get(0).contains("\"text/plain\":\"2\"")) {
        throw new IllegalStateException("1+1 on the runner's pipe answered " + lines);
      }
    }

    @Override
    public void close() {
      process.destroyForcibly();
      try {
        process.waitFor(15, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
