package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.LogEvent;
import dev.sandboxsdk.LogRange;
import dev.sandboxsdk.ProcessInfo;
import dev.sandboxsdk.ProcessLogs;
import dev.sandboxsdk.ProcessOptions;
import dev.sandboxsdk.ProcessStatus;
import dev.sandboxsdk.SandboxTimeoutException;
import dev.sandboxsdk.Signal;
import dev.sandboxsdk.StdStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The background process tool group: {@code startProcess}, {@code listProcesses},
 * {@code getProcess}, {@code killProcess}, {@code killAllProcesses}, {@code getProcessLogs},
 * {@code streamProcessLogs} and {@code cleanupCompletedProcesses}. Log pages are capped and
 * redacted; {@code streamProcessLogs} follows on the SDK's stream and holds no thread. Thread-safe.
 */
final class ProcessTools implements ToolGroup {
  private final AdapterConfig config;
  private final Sandboxes sandboxes;
  private final Redactor redactor;
  private final ScheduledExecutorService timer;

  ProcessTools(AdapterConfig config, Sandboxes sandboxes, Redactor redactor, ScheduledExecutorService timer) {
    this.config = config;
    this.sandboxes = sandboxes;
    this.redactor = redactor;
    this.timer = timer;
  }

  @Override
  public void register(Map<String, ToolHandler> tools) {
    tools.put("startProcess", ToolHandler.blocking(ProcessArgs.Start.class, this::startProcess));
    tools.put("listProcesses", ToolHandler.blocking(ProcessArgs.Listing.class, this::listProcesses));
    tools.put("getProcess", ToolHandler.blocking(ProcessArgs.Get.class, this::getProcess));
    tools.put("killProcess", ToolHandler.blocking(ProcessArgs.Kill.class, this::killProcess));
    tools.put("killAllProcesses", ToolHandler.blocking(ProcessArgs.KillAll.class, this::killAllProcesses));
    tools.put("getProcessLogs", ToolHandler.blocking(ProcessArgs.Logs.class, this::getProcessLogs));
    tools.put("streamProcessLogs", ToolHandler.of(ProcessArgs.StreamLogs.class, this::streamProcessLogs));
    tools.put("cleanupCompletedProcesses", ToolHandler.blocking(ProcessArgs.Cleanup.class, this::cleanupCompletedProcesses));
  }

  private ToolOutcome startProcess(ProcessArgs.Start args) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    ProcessOptions.Builder b = ProcessOptions.builder().env(SandboxTools.environment(config, args.env()));
    if (args.processId() != null) {
      b.processId(args.processId());
    }
    if (args.cwd() != null) {
      b.cwd(args.cwd());
    }
    if (args.timeoutSeconds() != null) {
      b.timeout(SandboxTools.seconds(args.timeoutSeconds(), null));
    }
    ProcessInfo info = sb.sandbox().startProcess(SandboxTools.command(args.command(), args.argv()), b.build()).info();
    return ToolOutcome.ok(SandboxTools.withSandbox(Json.object().set("process", processJson(info)), sb));
  }

  private ToolOutcome listProcesses(ProcessArgs.Listing args) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    ProcessStatus status = args.status() != null ? ProcessStatus.fromWire(args.status()) : null;
    List<ProcessInfo> list = sb.sandbox().listProcesses();
    if (status != null) {
      list = list.stream().filter(p -> p.status() == status).toList();
    }
    ObjectNode r = Json.object();
    ArrayNode arr = r.putArray("processes");
    list.forEach(p -> arr.add(processJson(p)));
    r.put("count", list.size());
    return ToolOutcome.ok(SandboxTools.withSandbox(r, sb));
  }

  private ToolOutcome getProcess(ProcessArgs.Get args) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    String id = args.processId();
    ProcessInfo info = sb.sandbox().getProcess(id).orElseThrow(() -> noProcess(sb, id));
    return ToolOutcome.ok(SandboxTools.withSandbox(Json.object().set("process", processJson(info)), sb));
  }

  private ToolOutcome killProcess(ProcessArgs.Kill args) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    String id = args.processId();
    Signal signal = args.signal() != null ? Signal.valueOf(args.signal()) : Signal.SIGTERM;
    sb.sandbox().killProcess(id, signal);
    ProcessInfo info;
    boolean exited;
    try {
      info = sb.sandbox().attachProcess(id).waitForExit(SandboxTools.KILL_WAIT);
      exited = true;
    } catch (SandboxTimeoutException stillRunning) {
      info = sb.sandbox().getProcess(id).orElseThrow(() -> new ToolException("Process '" + id
          + "' disappeared while being killed (its record was cleaned up)."));
      exited = !info.isRunning();
    }
    ObjectNode r = Json.object();
    r.set("process", processJson(info));
    r.put("signal", signal.name()).put("exited", exited);
    return ToolOutcome.ok(SandboxTools.withSandbox(r, sb));
  }

  record KilledAll(int killed, String sandboxId) {
  }

  record Cleaned(int removed, String sandboxId) {
  }

  private ToolOutcome killAllProcesses(ProcessArgs.KillAll args) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    return ToolOutcome.ok(SandboxTools.json(new KilledAll(sb.sandbox().killAllProcesses(), sb.id())));
  }

  private ToolOutcome cleanupCompletedProcesses(ProcessArgs.Cleanup args) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    return ToolOutcome.ok(SandboxTools.json(new Cleaned(sb.sandbox().cleanupCompletedProcesses(), sb.id())));
  }

  private ToolOutcome getProcessLogs(ProcessArgs.Logs args) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    String id = args.processId();
    int cap = pageCap(args);
    long so = args.stdoutOffset();
    long se = args.stderrOffset();
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
    return ToolOutcome.ok(SandboxTools.withSandbox(r, sb));
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
  private int pageCap(ProcessArgs.Page args) {
    return Math.min(config.maxOutputBytes(), Math.max(SandboxTools.cap(config, args.maxBytes()), SandboxTools.MIN_PAGE_BYTES + redactor.maxBytes()));
  }

  private CompletableFuture<ToolOutcome> streamProcessLogs(ProcessArgs.StreamLogs args, CallContext ctx) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    String id = args.processId();
    int cap = pageCap(args);
    long so = args.stdoutOffset();
    long se = args.stderrOffset();
    Duration limit = SandboxTools.seconds(args.timeoutSeconds(), SandboxTools.DEFAULT_FOLLOW);
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
      this.progress = new Progress(ctx, redactor);
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
      result.complete(ToolOutcome.ok(SandboxTools.withSandbox(r, sandbox)));
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

  private static ToolException noProcess(Sandboxes.Entry sb, String id) {
    return new ToolException("There is no process '" + id + "' in sandbox '" + sb.id()
        + "'. listProcesses shows the processes that exist.");
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
