package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.Command;
import dev.sandboxsdk.ExecEvent;
import dev.sandboxsdk.ExecOptions;
import dev.sandboxsdk.ExecResult;
import dev.sandboxsdk.LogEvent;
import dev.sandboxsdk.LogRange;
import dev.sandboxsdk.ProcessInfo;
import dev.sandboxsdk.ProcessLogs;
import dev.sandboxsdk.ProcessNotFoundException;
import dev.sandboxsdk.ProcessOptions;
import dev.sandboxsdk.ProcessStatus;
import dev.sandboxsdk.SandboxAuthException;
import dev.sandboxsdk.SandboxConnectionException;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxInvalidRequestException;
import dev.sandboxsdk.SandboxTimeoutException;
import dev.sandboxsdk.Signal;
import dev.sandboxsdk.StdStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The tools: each is a thin call of the public SDK API on one of the server's sandboxes, with its
 * arguments already checked against the tool's inputSchema. Long calls ({@code exec},
 * {@code runCode}, {@code streamProcessLogs}) run on the SDK's streams and hold no thread while
 * they wait. Thread-safe.
 */
public final class SandboxTools implements AutoCloseable {
  static final Duration DEFAULT_EXEC_TIMEOUT = Duration.ofMinutes(5);
  static final Duration DEFAULT_FOLLOW = Duration.ofSeconds(30);
  static final Duration KILL_WAIT = Duration.ofSeconds(5);
  /** Output streamed as progress messages per call; beyond it progress carries only byte counts. */
  static final long PROGRESS_TEXT_LIMIT = 1 << 20;
  static final String MISSING_INTERPRETER = "sandbox-mcp: interpreter not found: ";
  /** The smallest page the log tools return: room for a few characters whatever maxBytes says. */
  static final int MIN_PAGE_BYTES = 64;

  private final AdapterConfig config;
  private final Sandboxes sandboxes;
  private final Redactor redactor;
  private final Map<String, ToolHandler> tools = new HashMap<>();
  /** Time limits of calls; one that ends early cancels its limit, which then leaves the queue (and frees the call). */
  private final ScheduledThreadPoolExecutor timer = new ScheduledThreadPoolExecutor(1, r -> {
    Thread t = new Thread(r, "mcp-timer");
    t.setDaemon(true);
    return t;
  });

  /**
   * What output is redacted for: the passed variables, and the server's own tokens, which are
   * never passed but which a command could still print (a local one can read a token file).
   */
  static Map<String, String> secrets(AdapterConfig config) {
    Map<String, String> secrets = new java.util.LinkedHashMap<>(config.passEnv());
    if (config.httpToken() != null) { // the Redactor skips values too short to redact safely
      secrets.put(AdapterConfig.HTTP_TOKEN_ENV, config.httpToken());
    }
    if (config.agentToken() != null) {
      secrets.put(AdapterConfig.AGENT_TOKEN_ENV, config.agentToken());
    }
    return secrets;
  }

  public SandboxTools(AdapterConfig config, Sandboxes sandboxes) {
    this.config = config;
    this.sandboxes = sandboxes;
    this.redactor = new Redactor(secrets(config));
    timer.setRemoveOnCancelPolicy(true);
    tools.put("exec", this::exec);
    tools.put("runCode", this::runCode);
    tools.put("startProcess", ToolHandler.blocking(this::startProcess));
    tools.put("listProcesses", ToolHandler.blocking(this::listProcesses));
    tools.put("getProcess", ToolHandler.blocking(this::getProcess));
    tools.put("killProcess", ToolHandler.blocking(this::killProcess));
    tools.put("killAllProcesses", ToolHandler.blocking(this::killAllProcesses));
    tools.put("getProcessLogs", ToolHandler.blocking(this::getProcessLogs));
    tools.put("streamProcessLogs", this::streamProcessLogs);
    tools.put("cleanupCompletedProcesses", ToolHandler.blocking(this::cleanupCompletedProcesses));
    // Further capabilities are groups of their own; a new one is one more entry here.
    List.<ToolGroup>of(new LifecycleTools(sandboxes, config.passEnv()), new CheckpointTools(sandboxes),
        new FileTools(config, sandboxes, redactor), new PortTools(sandboxes), new GitTools(sandboxes, config.passEnv()),
        new WatchTools(sandboxes, timer)).forEach(g -> g.register(tools));
  }

  @Override
  public void close() {
    timer.shutdownNow();
  }

  /** Time limits not yet due (for tests: a call that has ended leaves none behind). */
  int pendingTimeLimits() {
    return timer.getQueue().size();
  }

  public Redactor redactor() {
    return redactor;
  }

  /** The names of the tools implemented here (the catalog must list exactly these). */
  public Iterable<String> names() {
    return tools.keySet();
  }

  /**
   * Whether {@link #call} of tool {@code name} returns at once, so that it may run on the thread
   * that read the request instead of a worker: exec and runCode only start the SDK's stream (which
   * the SDK reads on its own threads) once their sandbox is ready. A hand-over to a worker would
   * add a thread wake-up to every call (docs/performance.md, "The MCP server").
   */
  public boolean startsWithoutWaiting(String name, ObjectNode args) {
    return (name.equals("exec") || name.equals("runCode")) && sandboxes.ready(sandboxId(args));
  }

  /** Runs tool {@code name}; domain failures complete as error outcomes, never exceptionally. */
  public CompletableFuture<ToolOutcome> call(String name, ObjectNode args, CallContext ctx) {
    ToolHandler t = tools.get(name);
    if (t == null) {
      throw new JsonRpc.Error(JsonRpc.INVALID_PARAMS, "Unknown tool: " + name);
    }
    // Calls in flight are counted per sandbox (destroy refuses while any run); a cancelled call never completes.
    AtomicBoolean inUse = new AtomicBoolean(!name.equals("listSandboxes"));
    // shutdownSandbox leaves the sandbox stopped: it must not count as seen running
    boolean reachesAgent = inUse.get() && !name.equals("getSandbox") && !name.equals("shutdownSandbox");
    String sandboxId = sandboxId(args);
    Runnable release = () -> {
      if (inUse.compareAndSet(true, false)) {
        sandboxes.end(sandboxId);
      }
    };
    if (inUse.get()) {
      sandboxes.begin(sandboxId);
    }
    try {
      // The outcome is derived from the stage that releases the call, so a client never sees an
      // answer while its call still counts as running (dependents of one future run in no fixed order).
      CompletableFuture<ToolOutcome> settled = t.call(args, ctx).whenComplete((r, e) -> {
        release.run();
        if (e == null && reachesAgent) {
          sandboxes.reached(sandboxId);
        }
      });
      ctx.onCancel(release);
      return settled.exceptionally(e -> {
        Throwable cause = e instanceof java.util.concurrent.CompletionException ? e.getCause() : e;
        sandboxes.failed(sandboxId, cause); // e.g. the SDK's "sandbox was closed", an agent gone
        ToolOutcome o = describe(stoppedInstead(sandboxId, cause));
        if (o == null) {
          throw e instanceof RuntimeException re ? re : new java.util.concurrent.CompletionException(e);
        }
        return o;
      });
    } catch (RuntimeException e) {
      release.run();
      sandboxes.failed(sandboxId, e);
      ToolOutcome o = describe(stoppedInstead(sandboxId, e));
      if (o == null) {
        throw e;
      }
      return CompletableFuture.completedFuture(o);
    }
  }

  /**
   * A call that could not reach a persistent sandbox because it has stopped (its idle timeout,
   * or another server shut it down) fails with the error that says to wake it.
   */
  private Throwable stoppedInstead(String sandboxId, Throwable cause) {
    if (cause instanceof SandboxException || cause instanceof IllegalStateException) {
      ToolException stopped = sandboxes.stoppedError(sandboxId);
      if (stopped != null) {
        return stopped;
      }
    }
    return cause;
  }

  /**
   * The error result for a failure the model can act on, or null for a bug (which the server
   * reports as a JSON-RPC internal error).
   */
  static ToolOutcome describe(Throwable e) {
    if (e instanceof ToolException) {
      return ToolOutcome.error(e.getMessage());
    }
    if (e instanceof ProcessNotFoundException) {
      return ToolOutcome.error(e.getMessage() + ". listProcesses shows the processes that exist; a finished"
          + " process's record goes away after cleanupCompletedProcesses or its auto-cleanup delay.");
    }
    if (e instanceof SandboxInvalidRequestException || e instanceof IllegalArgumentException) {
      return ToolOutcome.error("The sandbox rejected the request: " + e.getMessage());
    }
    if (e instanceof SandboxAuthException) {
      return ToolOutcome.error("The sandbox agent refused this server's token: " + e.getMessage()
          + ". The server's --agent-token-file must hold the agent's token.");
    }
    if (e instanceof SandboxTimeoutException) {
      return ToolOutcome.error("The sandbox did not answer in time: " + e.getMessage() + ". Try again.");
    }
    if (e instanceof SandboxConnectionException || e instanceof IllegalStateException) {
      return ToolOutcome.error("The sandbox is not reachable: " + e.getMessage() + ". A sandbox that was"
          + " destroyed or has stopped is created again by getSandbox (its files and processes are gone); a"
          + " remote agent (--agent-url) must be running and reachable from this server.");
    }
    if (e instanceof SandboxException) {
      return ToolOutcome.error("The sandbox reported an error: " + e.getMessage());
    }
    return null;
  }

  // ---- exec and runCode

  private CompletableFuture<ToolOutcome> exec(ObjectNode args, CallContext ctx) {
    Command command = command(args);
    ExecOptions.Builder options = execOptions(args);
    if (args.hasNonNull("stdin")) {
      options.stdin(args.get("stdin").asText());
    }
    if (!ctx.wantsProgress()) {
      return runPlain(args, command, options, ctx);
    }
    return runStreamed(args, command, options.build(), ctx, null);
  }

  /**
   * An exec whose caller asked for no progress: one plain answer from the agent is cheaper than
   * its event stream (issue 13, target 5). The agent keeps the cap plus room for the longest
   * secret, so a secret across the cut is still redacted, and says how many bytes came in all.
   */
  private CompletableFuture<ToolOutcome> runPlain(ObjectNode args, Command command, ExecOptions.Builder options,
      CallContext ctx) {
    Sandboxes.Entry sb = sandboxes.require(sandboxId(args));
    int cap = cap(args, "maxOutputBytes");
    int keep = cap + redactor.maxBytes();
    ExecCollector collector = new ExecCollector(sb, cap, ctx, null);
    CompletableFuture<ExecResult> run = sb.sandbox().execAsync(command, options.maxOutputBytes(keep).build());
    ctx.onCancel(() -> run.cancel(true)); // the SDK kills the command (DELETE /api/execute/{id})
    run.whenComplete((r, t) -> {
      if (t != null) {
        if (!ctx.isCancelled()) { // a cancelled call never completes, as on the streamed path
          collector.onError(t);
        }
      } else {
        collector.complete(r, keep);
      }
    });
    return collector.result;
  }

  private CompletableFuture<ToolOutcome> runCode(ObjectNode args, CallContext ctx) {
    String language = args.get("language").asText();
    String interpreter = switch (language) {
      case "python" -> "python3";
      case "javascript", "typescript" -> "node";
      default -> "bash";
    };
    String run = switch (language) {
      case "python" -> "exec python3 -";
      case "javascript" -> "exec node -";
      case "typescript" -> "exec node --experimental-strip-types --input-type=module-typescript -";
      default -> "exec bash -s";
    };
    // Probe first so a missing interpreter is told apart from a program that exits with 127.
    String script = "command -v " + interpreter + " >/dev/null 2>&1 || { echo '" + MISSING_INTERPRETER
        + interpreter + "' >&2; exit 127; }; " + run;
    ExecOptions options = execOptions(args).stdin(args.get("code").asText()).build();
    return runStreamed(args, Command.shell(script), options, ctx, language);
  }

  private ExecOptions.Builder execOptions(ObjectNode args) {
    ExecOptions.Builder b = ExecOptions.builder()
        .timeout(seconds(args, "timeoutSeconds", DEFAULT_EXEC_TIMEOUT))
        .env(environment(args));
    if (args.hasNonNull("cwd")) {
      b.cwd(args.get("cwd").asText());
    }
    return b;
  }

  private CompletableFuture<ToolOutcome> runStreamed(ObjectNode args, Command command, ExecOptions options,
      CallContext ctx, String language) {
    Sandboxes.Entry sb = sandboxes.require(sandboxId(args));
    int cap = cap(args, "maxOutputBytes");
    ExecCollector collector = new ExecCollector(sb, cap, ctx, language);
    sb.sandbox().execStream(command, options).subscribe(collector);
    return collector.result;
  }

  /** Collects one exec's events into capped text, streaming it as progress on the way. */
  private final class ExecCollector implements Flow.Subscriber<ExecEvent> {
    final CompletableFuture<ToolOutcome> result = new CompletableFuture<>();
    private final Sandboxes.Entry sandbox;
    private final CappedText stdout;
    private final CappedText stderr;
    private final Progress progress;
    private final String language;
    private volatile long pid;
    private String shown = "";
    private String missing; // the interpreter runCode found missing

    ExecCollector(Sandboxes.Entry sandbox, int cap, CallContext ctx, String language) {
      this.sandbox = sandbox;
      this.stdout = new CappedText(cap, redactor, 0);
      this.stderr = new CappedText(cap, redactor, 0);
      this.progress = new Progress(ctx);
      this.language = language;
    }

    @Override
    public void onSubscribe(Flow.Subscription s) {
      // The SDK's cancel kills the command at once (DELETE /api/execute/{id}) and closes the stream.
      progress.ctx.onCancel(s::cancel);
      s.request(Long.MAX_VALUE); // we only keep a capped prefix, so there is nothing to pace
    }

    @Override
    public void onNext(ExecEvent e) {
      if (e instanceof ExecEvent.Start st) {
        pid = st.pid();
        shown = st.command();
      } else if (e instanceof ExecEvent.Stdout o) {
        stdout.append(o.text(), o.offset(), o.bytes());
        progress.output(StdStream.STDOUT, o.text(), o.bytes());
      } else if (e instanceof ExecEvent.Stderr o) {
        if (language != null && o.offset() == 0 && o.text().startsWith(MISSING_INTERPRETER)) {
          missing = o.text().substring(MISSING_INTERPRETER.length()).strip(); // whatever the output cap
        }
        stderr.append(o.text(), o.offset(), o.bytes());
        progress.output(StdStream.STDERR, o.text(), o.bytes());
      } else if (e instanceof ExecEvent.Complete c) {
        stdout.ended();
        stderr.ended();
        progress.flush();
        result.complete(outcome(c.exitCode(), c.timedOut(), c.signal(), c.duration()));
      }
    }

    /** The plain path's whole answer, of which the agent kept at most {@code kept} bytes per stream. */
    void complete(ExecResult r, int kept) {
      pid = r.pid();
      shown = r.command();
      stdout.appendWhole(r.stdout(), kept, r.stdoutBytes());
      stderr.appendWhole(r.stderr(), kept, r.stderrBytes());
      stdout.ended();
      stderr.ended();
      result.complete(outcome(r.exitCode(), r.timedOut(), r.signal(), r.duration()));
    }

    private ToolOutcome outcome(int exitCode, boolean timedOut, Signal signal, Duration duration) {
      ObjectNode r = Json.object()
          .put("command", language != null ? language + " code on stdin" : shown)
          .put("exitCode", exitCode)
          .put("success", exitCode == 0)
          .put("stdout", stdout.text())
          .put("stderr", stderr.text())
          .put("stdoutBytes", stdout.totalBytes())
          .put("stderrBytes", stderr.totalBytes())
          .put("truncated", stdout.truncated() || stderr.truncated())
          .put("timedOut", timedOut);
      r.put("signal", signal == null ? null : signal.name());
      r.put("durationMs", duration.toMillis()).put("pid", pid).put("sandboxId", sandbox.id());
      List<String> notes = new ArrayList<>();
      if (missing != null && exitCode == 127) {
        String which = missing;
        return ToolOutcome.error("Cannot run " + language + ": the interpreter '" + which + "' is not installed in"
            + " sandbox '" + sandbox.id() + "'. Install it there (for example with exec: apt-get install -y "
            + (which.equals("node") ? "nodejs" : which) + ", if the sandbox has a package manager and network),"
            + " or use another language.");
      }
      if ("typescript".equals(language) && exitCode == 9) { // node's exit status for a bad option
        notes.add("TypeScript runs on node with type stripping (--experimental-strip-types), which needs"
            + " Node.js 22.6 or later; the sandbox's node rejected the option, so it is probably older.");
      }
      if (timedOut) {
        notes.add("The command was killed after its timeout. Pass a larger timeoutSeconds, or run it with"
            + " startProcess and follow it with streamProcessLogs.");
      } else if (exitCode != 0) {
        notes.add("The command failed with exit code " + exitCode
            + (exitCode == 127 && language == null
                ? " (command not found: check the program name or install it)." : "; see stderr."));
      }
      truncationNote(notes, "stdout", stdout);
      truncationNote(notes, "stderr", stderr);
      if (!notes.isEmpty()) {
        r.put("note", String.join(" ", notes));
      }
      return exitCode == 0 ? ToolOutcome.ok(r) : ToolOutcome.error(r);
    }

    @Override
    public void onError(Throwable t) {
      result.completeExceptionally(t);
    }

    @Override
    public void onComplete() {
      if (!result.isDone()) {
        result.completeExceptionally(new SandboxConnectionException("the exec stream ended without a result", null));
      }
    }
  }

  private static void truncationNote(List<String> notes, String stream, CappedText t) {
    if (t.truncated()) {
      notes.add(stream + " was cut: the first " + (t.nextOffset()) + " of " + t.totalBytes() + " bytes are shown."
          + " To read the rest, redirect the output to a file and read it from byte offset " + t.nextOffset()
          + " (e.g. tail -c +" + (t.nextOffset() + 1) + " FILE | head -c 16384), or pass a larger maxOutputBytes.");
    }
  }

  /** Streams output chunks as progress notifications, redacted, up to a size limit per call. */
  private final class Progress {
    final CallContext ctx;
    private final Redactor.Stream out = redactor.stream();
    private final Redactor.Stream err = redactor.stream();
    private long textSent;
    private long pendingBytes;
    private long lastCountOnlyNanos;

    Progress(CallContext ctx) {
      this.ctx = ctx;
    }

    void output(StdStream stream, String text, long bytes) {
      if (!ctx.wantsProgress()) {
        return;
      }
      pendingBytes += bytes;
      if (textSent >= PROGRESS_TEXT_LIMIT) {
        long now = System.nanoTime();
        if (now - lastCountOnlyNanos >= 1_000_000_000L) { // after the limit, a heartbeat a second at most
          lastCountOnlyNanos = now;
          send(null, null);
        }
        return;
      }
      Redactor.Stream redacting = stream == StdStream.STDOUT ? out : err;
      String safe = redacting.push(text);
      textSent += bytes;
      if (textSent >= PROGRESS_TEXT_LIMIT) { // the last text: hand out what both streams held back
        Redactor.Stream other = stream == StdStream.STDOUT ? err : out;
        String otherRest = other.flush();
        if (!otherRest.isEmpty()) {
          send(otherRest, stream == StdStream.STDOUT ? stderrMeta() : null);
        }
        safe += redacting.flush() + "\n[sandbox-mcp: more than " + PROGRESS_TEXT_LIMIT + " bytes of output;"
            + " further progress notifications carry only byte counts]\n";
      }
      if (!safe.isEmpty()) { // else all of it may be the start of a secret: wait for the next chunk
        send(safe, stream == StdStream.STDERR ? stderrMeta() : null);
      }
    }

    /** Output from before the requested offset: only primes redaction, is not sent. */
    void prime(StdStream stream, String context) {
      (stream == StdStream.STDOUT ? out : err).prime(context);
    }

    /** At the end: what redaction held back, and a last count so progress totals the whole output. */
    void flush() {
      if (!ctx.wantsProgress()) {
        return;
      }
      if (textSent < PROGRESS_TEXT_LIMIT) {
        String o = out.flush();
        if (!o.isEmpty()) {
          send(o, null);
        }
        String e = err.flush();
        if (!e.isEmpty()) {
          send(e, stderrMeta());
        }
      }
      if (pendingBytes > 0) {
        send(null, null);
      }
    }

    private void send(String message, ObjectNode meta) {
      ctx.progress(pendingBytes, message, meta);
      pendingBytes = 0;
    }

    private ObjectNode stderrMeta() {
      return Json.object().put("dev.sandboxsdk/stream", "stderr");
    }
  }

  // ---- background processes

  private ToolOutcome startProcess(ObjectNode args) {
    Sandboxes.Entry sb = sandboxes.require(sandboxId(args));
    ProcessOptions.Builder b = ProcessOptions.builder().env(environment(args));
    if (args.hasNonNull("processId")) {
      b.processId(args.get("processId").asText());
    }
    if (args.hasNonNull("cwd")) {
      b.cwd(args.get("cwd").asText());
    }
    if (args.hasNonNull("timeoutSeconds")) {
      b.timeout(seconds(args, "timeoutSeconds", null));
    }
    ProcessInfo info = sb.sandbox().startProcess(command(args), b.build()).info();
    return ToolOutcome.ok(withSandbox(Json.object().set("process", processJson(info)), sb));
  }

  private ToolOutcome listProcesses(ObjectNode args) {
    Sandboxes.Entry sb = sandboxes.require(sandboxId(args));
    List<ProcessInfo> list = args.hasNonNull("status")
        ? sb.sandbox().listProcesses(ProcessStatus.fromWire(args.get("status").asText()))
        : sb.sandbox().listProcesses();
    ObjectNode r = Json.object();
    ArrayNode arr = r.putArray("processes");
    list.forEach(p -> arr.add(processJson(p)));
    r.put("count", list.size());
    return ToolOutcome.ok(withSandbox(r, sb));
  }

  private ToolOutcome getProcess(ObjectNode args) {
    Sandboxes.Entry sb = sandboxes.require(sandboxId(args));
    String id = args.get("processId").asText();
    ProcessInfo info = sb.sandbox().getProcess(id).orElseThrow(() -> noProcess(sb, id));
    return ToolOutcome.ok(withSandbox(Json.object().set("process", processJson(info)), sb));
  }

  private ToolOutcome killProcess(ObjectNode args) {
    Sandboxes.Entry sb = sandboxes.require(sandboxId(args));
    String id = args.get("processId").asText();
    Signal signal = args.hasNonNull("signal") ? Signal.valueOf(args.get("signal").asText()) : Signal.SIGTERM;
    sb.sandbox().killProcess(id, signal);
    ProcessInfo info;
    boolean exited;
    try {
      info = sb.sandbox().attachProcess(id).waitForExit(KILL_WAIT);
      exited = true;
    } catch (SandboxTimeoutException stillRunning) {
      info = sb.sandbox().getProcess(id).orElseThrow(() -> new ToolException("Process '" + id
          + "' disappeared while being killed (its record was cleaned up)."));
      exited = !info.isRunning();
    }
    ObjectNode r = Json.object();
    r.set("process", processJson(info));
    r.put("signal", signal.name()).put("exited", exited);
    return ToolOutcome.ok(withSandbox(r, sb));
  }

  private ToolOutcome killAllProcesses(ObjectNode args) {
    Sandboxes.Entry sb = sandboxes.require(sandboxId(args));
    return ToolOutcome.ok(withSandbox(Json.object().put("killed", sb.sandbox().killAllProcesses()), sb));
  }

  private ToolOutcome cleanupCompletedProcesses(ObjectNode args) {
    Sandboxes.Entry sb = sandboxes.require(sandboxId(args));
    return ToolOutcome.ok(withSandbox(Json.object().put("removed", sb.sandbox().cleanupCompletedProcesses()), sb));
  }

  private ToolOutcome getProcessLogs(ObjectNode args) {
    Sandboxes.Entry sb = sandboxes.require(sandboxId(args));
    String id = args.get("processId").asText();
    int cap = pageCap(args);
    long so = args.path("stdoutOffset").asLong(0);
    long se = args.path("stderrOffset").asLong(0);
    ProcessLogs page = sb.sandbox().getProcessLogs(id, withContext(so, se).withMaxBytes(cap + redactor.maxBytes()));
    CappedText out = new CappedText(cap, redactor, so);
    out.append(page.stdout(), page.stdoutOffset(), page.stdoutNextOffset() - page.stdoutOffset());
    CappedText err = new CappedText(cap, redactor, se);
    err.append(page.stderr(), page.stderrOffset(), page.stderrNextOffset() - page.stderrOffset());
    if (page.complete()) {
      out.ended();
      err.ended();
    }
    boolean complete = page.complete() && out.nextOffset() == page.stdoutNextOffset()
        && err.nextOffset() == page.stderrNextOffset();
    boolean more = !complete && sb.sandbox().getProcess(id)
        .map(p -> p.stdoutBytes() > out.nextOffset() || p.stderrBytes() > err.nextOffset()).orElse(false);
    ObjectNode r = Json.object()
        .put("processId", page.processId())
        .put("status", page.status().wireName())
        .put("stdout", out.text())
        .put("stderr", err.text())
        .put("stdoutOffset", out.start())
        .put("stdoutNextOffset", out.nextOffset())
        .put("stderrOffset", err.start())
        .put("stderrNextOffset", err.nextOffset())
        .put("truncated", out.lost() || err.lost())
        .put("complete", complete)
        .put("more", more);
    List<String> notes = new ArrayList<>();
    if (out.lost() || err.lost()) {
      notes.add("Some requested output had already left the sandbox's output window and is lost; the page starts"
          + " at stdoutOffset " + out.start() + " / stderrOffset " + err.start() + ".");
    }
    if (more) {
      notes.add("More output is available: call getProcessLogs again with stdoutOffset " + out.nextOffset()
          + " and stderrOffset " + err.nextOffset() + ".");
    }
    if (!notes.isEmpty()) {
      r.put("note", String.join(" ", notes));
    }
    return ToolOutcome.ok(withSandbox(r, sb));
  }

  /**
   * The range the log tools read: from a little before the requested offsets (the longest secret's
   * size), so that a secret straddling an offset is recognised; {@link CappedText} shows only what
   * comes from the offsets on.
   */
  private LogRange withContext(long stdoutOffset, long stderrOffset) {
    int back = redactor.maxBytes();
    return LogRange.from(Math.max(0, stdoutOffset - back), Math.max(0, stderrOffset - back));
  }

  /**
   * The page size for the log tools: the requested or server limit, but never so small that a
   * page could hold neither one character nor one whole secret, which would stop paging.
   */
  private int pageCap(ObjectNode args) {
    return Math.min(config.maxOutputBytes(), Math.max(cap(args, "maxBytes"), MIN_PAGE_BYTES + redactor.maxBytes()));
  }

  private CompletableFuture<ToolOutcome> streamProcessLogs(ObjectNode args, CallContext ctx) {
    Sandboxes.Entry sb = sandboxes.require(sandboxId(args));
    String id = args.get("processId").asText();
    int cap = pageCap(args);
    long so = args.path("stdoutOffset").asLong(0);
    long se = args.path("stderrOffset").asLong(0);
    Duration limit = seconds(args, "timeoutSeconds", DEFAULT_FOLLOW);
    LogFollower f = new LogFollower(sb, id, cap, so, se, ctx);
    sb.sandbox().streamProcessLogs(id, withContext(so, se)).subscribe(f);
    var timeout = timer.schedule(() -> f.stop(true), limit.toMillis(), TimeUnit.MILLISECONDS);
    f.result.whenComplete((r, e) -> timeout.cancel(false));
    return f.result;
  }

  /** Follows one process's log stream into capped text until exit, the time limit or full caps. */
  private final class LogFollower implements Flow.Subscriber<LogEvent> {
    final CompletableFuture<ToolOutcome> result = new CompletableFuture<>();
    private final Sandboxes.Entry sandbox;
    private final String processId;
    private final long stdoutFrom;
    private final long stderrFrom;
    private final CappedText stdout;
    private final CappedText stderr;
    private final Progress progress;
    private final AtomicBoolean done = new AtomicBoolean();
    private final List<String> notes = new ArrayList<>();
    private volatile Flow.Subscription subscription;
    private LogEvent.Exit exit;

    LogFollower(Sandboxes.Entry sandbox, String processId, int cap, long so, long se, CallContext ctx) {
      this.sandbox = sandbox;
      this.processId = processId;
      this.stdoutFrom = so;
      this.stderrFrom = se;
      this.stdout = new CappedText(cap, redactor, so);
      this.stderr = new CappedText(cap, redactor, se);
      this.progress = new Progress(ctx);
    }

    @Override
    public void onSubscribe(Flow.Subscription s) {
      subscription = s;
      progress.ctx.onCancel(s::cancel);
      s.request(Long.MAX_VALUE);
    }

    @Override
    public synchronized void onNext(LogEvent e) {
      if (done.get()) {
        return;
      }
      if (e instanceof LogEvent.Output o) {
        boolean isOut = o.stream() == StdStream.STDOUT;
        (isOut ? stdout : stderr).append(o.text(), o.offset(), o.bytes());
        long from = isOut ? stdoutFrom : stderrFrom;
        String text = o.text();
        long bytes = o.bytes();
        if (o.offset() < from) { // context read only to catch a straddling secret: not progress
          int k = CappedText.prefixWithin(text, from - o.offset());
          progress.prime(o.stream(), text.substring(0, k));
          text = text.substring(k);
          bytes = Math.max(0, o.offset() + bytes - from);
        }
        if (!text.isEmpty()) {
          progress.output(o.stream(), text, bytes);
        }
        if (stdout.full() && stderr.full()) {
          notes.add("Stopped following because both streams reached maxBytes.");
          stop(false);
        }
      } else if (e instanceof LogEvent.Truncated t) {
        CappedText target = t.stream() == StdStream.STDOUT ? stdout : stderr;
        boolean before = target.lost();
        target.append("", t.offset(), 0);
        if (target.lost() && !before) {
          notes.add(t.stream().name().toLowerCase(Locale.ROOT) + " from the requested offset had already left the"
              + " sandbox's output window and is lost; it continues at offset " + target.start() + ".");
        }
      } else if (e instanceof LogEvent.Exit x) {
        exit = x;
        stdout.ended();
        stderr.ended();
        stop(false);
      }
    }

    /** Ends following (by exit, time limit or full caps) and completes the result once. */
    synchronized void stop(boolean timeLimit) {
      if (!done.compareAndSet(false, true)) {
        return;
      }
      Flow.Subscription s = subscription;
      if (s != null && exit == null) {
        s.cancel();
      }
      progress.flush();
      ObjectNode r = Json.object()
          .put("processId", processId)
          .put("stdout", stdout.text())
          .put("stderr", stderr.text())
          .put("stdoutNextOffset", stdout.nextOffset())
          .put("stderrNextOffset", stderr.nextOffset())
          .put("exited", exit != null);
      r.put("exitCode", exit == null ? null : exit.exitCode());
      r.put("status", exit == null ? null : exit.status().wireName());
      r.put("timeLimitReached", timeLimit)
          .put("truncated", stdout.truncated() || stderr.truncated());
      String next = " from stdoutOffset " + stdout.nextOffset() + " and stderrOffset " + stderr.nextOffset() + ".";
      if (exit == null) {
        notes.add("The process is still running" + (timeLimit ? " after the time limit" : "")
            + "; continue with streamProcessLogs or getProcessLogs" + next);
      } else if (stdout.capped() || stderr.capped()) {
        notes.add("Output was cut at maxBytes; read the rest with getProcessLogs" + next);
      }
      r.put("note", String.join(" ", notes));
      result.complete(ToolOutcome.ok(withSandbox(r, sandbox)));
    }

    @Override
    public void onError(Throwable t) {
      if (done.compareAndSet(false, true)) {
        result.completeExceptionally(t);
      }
    }

    @Override
    public void onComplete() {
      stop(false);
    }
  }

  // ---- argument and result helpers

  private static ToolException noProcess(Sandboxes.Entry sb, String id) {
    return new ToolException("There is no process '" + id + "' in sandbox '" + sb.id()
        + "'. listProcesses shows the processes that exist.");
  }

  static String sandboxId(ObjectNode args) {
    return args.hasNonNull("sandboxId") ? args.get("sandboxId").asText() : null;
  }

  private static Command command(ObjectNode args) {
    boolean hasShell = args.hasNonNull("command");
    boolean hasArgv = args.hasNonNull("argv");
    if (hasShell == hasArgv) {
      throw new ToolException(hasShell
          ? "Give either command (a shell string) or argv (an array), not both."
          : "Give the command to run: command (a shell string such as \"ls -la\") or argv (such as [\"ls\", \"-la\"]).");
    }
    if (hasShell) {
      return Command.shell(args.get("command").asText());
    }
    List<String> argv = new ArrayList<>();
    args.get("argv").forEach(a -> argv.add(a.asText()));
    return Command.of(argv);
  }

  /** The passed-through secrets under the call's own variables (which cannot override them). */
  private Map<String, String> environment(ObjectNode args) {
    Map<String, String> env = new HashMap<>();
    JsonNode given = args.get("env");
    if (given != null) {
      for (Iterator<Map.Entry<String, JsonNode>> it = given.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> f = it.next();
        if (!f.getKey().matches("[A-Za-z_][A-Za-z0-9_]*")) {
          throw new ToolException("env: '" + f.getKey() + "' is not a valid variable name");
        }
        env.put(f.getKey(), f.getValue().asText());
      }
    }
    if (config.passEnvPerCall()) {
      env.putAll(config.passEnv());
    } else { // the sandbox's own environment has them; a call's variable of that name would override it
      config.passEnv().keySet().forEach(env::remove);
    }
    return env;
  }

  private int cap(ObjectNode args, String field) {
    int max = config.maxOutputBytes();
    return args.hasNonNull(field) ? (int) Math.min(max, args.get(field).asLong()) : max;
  }

  static Duration seconds(ObjectNode args, String field, Duration fallback) {
    if (!args.hasNonNull(field)) {
      return fallback;
    }
    long millis = Math.max(1, Math.round(args.get(field).asDouble() * 1000));
    return Duration.ofMillis(millis);
  }

  static ObjectNode withSandbox(ObjectNode r, Sandboxes.Entry sb) {
    return r.put("sandboxId", sb.id());
  }

  static ObjectNode processJson(ProcessInfo p) {
    ObjectNode o = Json.object().put("id", p.id()).put("pid", p.pid()).put("command", p.command());
    ArrayNode argv = o.putArray("argv");
    p.argv().forEach(argv::add);
    o.put("status", p.status().wireName()).put("startTime", p.startTime().toString());
    o.put("endTime", p.endTime() == null ? null : p.endTime().toString());
    o.put("exitCode", p.exitCode());
    o.put("signal", p.signal() == null ? null : p.signal().name());
    return o.put("timedOut", p.timedOut()).put("stdoutBytes", p.stdoutBytes()).put("stderrBytes", p.stderrBytes());
  }
}
