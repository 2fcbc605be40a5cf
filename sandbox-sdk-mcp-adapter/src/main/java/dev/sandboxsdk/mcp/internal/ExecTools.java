package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.Command;
import dev.sandboxsdk.ExecEvent;
import dev.sandboxsdk.ExecOptions;
import dev.sandboxsdk.ExecResult;
import dev.sandboxsdk.SandboxConnectionException;
import dev.sandboxsdk.Session;
import dev.sandboxsdk.Signal;
import dev.sandboxsdk.StdStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.function.BiFunction;

/**
 * The exec tool group: {@code exec} and {@code runCode}. Both run on the SDK's exec stream (or,
 * without progress, one plain answer) and hold no thread while they wait; a {@code runCode} with a
 * {@code context} is the code group's ({@link CodeTools}). Thread-safe.
 */
final class ExecTools implements ToolGroup {
  private final AdapterConfig config;
  private final Sandboxes sandboxes;
  private final Redactor redactor;
  private final CodeTools code;

  ExecTools(AdapterConfig config, Sandboxes sandboxes, Redactor redactor, CodeTools code) {
    this.config = config;
    this.sandboxes = sandboxes;
    this.redactor = redactor;
    this.code = code;
  }

  @Override
  public void register(Map<String, ToolHandler> tools) {
    tools.put("exec", ToolHandler.of(ExecArgs.Exec.class, this::exec));
    tools.put("runCode", ToolHandler.of(ExecArgs.RunCode.class, this::runCode));
  }

  private CompletableFuture<ToolOutcome> exec(ExecArgs.Exec args, CallContext ctx) {
    Command command = SandboxTools.command(args.command(), args.argv());
    ExecOptions.Builder options = execOptions(args);
    if (args.stdin() != null) {
      options.stdin(args.stdin());
    }
    if (args.session() != null) {
      // created by its first command, so a model needs no create step
      Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
      Session session = SessionTools.open(sb, args.session());
      Runner inSession = new Runner(session::execAsync, session::execStream, session.id());
      return ctx.wantsProgress() ? runStreamed(sb, args, command, options.build(), ctx, null, inSession)
          : runPlain(sb, args, command, options, ctx, inSession);
    }
    if (!ctx.wantsProgress()) {
      return runPlain(args, command, options, ctx);
    }
    return runStreamed(args, command, options.build(), ctx, null);
  }

  /** Where a command runs: the sandbox itself, or one of its sessions (then named in the result). */
  private record Runner(BiFunction<Command, ExecOptions, CompletableFuture<ExecResult>> async,
      BiFunction<Command, ExecOptions, Flow.Publisher<ExecEvent>> stream, String session) {
    static Runner of(Sandboxes.Entry sb) {
      return new Runner(sb.sandbox()::execAsync, sb.sandbox()::execStream, null);
    }
  }

  /**
   * An exec whose caller asked for no progress: one plain answer from the agent is cheaper than
   * its event stream (issue 13, target 5). The agent keeps the cap plus room for the longest
   * secret, so a secret across the cut is still redacted, and says how many bytes came in all.
   */
  private CompletableFuture<ToolOutcome> runPlain(ExecArgs.Exec args, Command command, ExecOptions.Builder options,
      CallContext ctx) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    return runPlain(sb, args, command, options, ctx, Runner.of(sb));
  }

  private CompletableFuture<ToolOutcome> runPlain(Sandboxes.Entry sb, ExecArgs.Exec args, Command command,
      ExecOptions.Builder options, CallContext ctx, Runner runner) {
    int cap = SandboxTools.cap(config, args.maxOutputBytes());
    int keep = cap + redactor.maxBytes();
    ExecCollector collector = new ExecCollector(sb, cap, ctx, null, runner.session());
    CompletableFuture<ExecResult> run = runner.async().apply(command, options.maxOutputBytes(keep).build());
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

  private CompletableFuture<ToolOutcome> runCode(ExecArgs.RunCode args, CallContext ctx) {
    if (args.context() != null) {
      return code.runInContext(args, ctx);
    }
    String language = args.language();
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
    String script = "command -v " + interpreter + " >/dev/null 2>&1 || { echo '" + SandboxTools.MISSING_INTERPRETER
        + interpreter + "' >&2; exit 127; }; " + run;
    ExecOptions options = execOptions(args).stdin(args.code()).build();
    return runStreamed(args, Command.shell(script), options, ctx, language);
  }

  private ExecOptions.Builder execOptions(ExecArgs.Run args) {
    ExecOptions.Builder b = ExecOptions.builder()
        .timeout(SandboxTools.seconds(args.timeoutSeconds(), SandboxTools.DEFAULT_EXEC_TIMEOUT))
        .env(SandboxTools.environment(config, args.env()));
    if (args.cwd() != null) {
      b.cwd(args.cwd());
    }
    return b;
  }

  private CompletableFuture<ToolOutcome> runStreamed(ExecArgs.Run args, Command command, ExecOptions options,
      CallContext ctx, String language) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    return runStreamed(sb, args, command, options, ctx, language, Runner.of(sb));
  }

  private CompletableFuture<ToolOutcome> runStreamed(Sandboxes.Entry sb, ExecArgs.Run args, Command command,
      ExecOptions options, CallContext ctx, String language, Runner runner) {
    int cap = SandboxTools.cap(config, args.maxOutputBytes());
    ExecCollector collector = new ExecCollector(sb, cap, ctx, language, runner.session());
    runner.stream().apply(command, options).subscribe(collector);
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
    private final String session;

    ExecCollector(Sandboxes.Entry sandbox, int cap, CallContext ctx, String language, String session) {
      this.sandbox = sandbox;
      this.session = session;
      this.stdout = new CappedText(cap, redactor, 0);
      this.stderr = new CappedText(cap, redactor, 0);
      this.progress = new Progress(ctx, redactor);
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
        if (language != null && o.offset() == 0 && o.text().startsWith(SandboxTools.MISSING_INTERPRETER)) {
          missing = o.text().substring(SandboxTools.MISSING_INTERPRETER.length()).strip(); // whatever the output cap
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
      if (session != null) {
        r.put("session", session);
      }
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
}
