package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.CodeContext;
import dev.sandboxsdk.CodeContextInfo;
import dev.sandboxsdk.CodeContextOptions;
import dev.sandboxsdk.CodeEvent;
import dev.sandboxsdk.CodeLanguage;
import dev.sandboxsdk.CodeOutput;
import dev.sandboxsdk.SandboxNotFoundException;
import dev.sandboxsdk.StdStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Flow;

/**
 * The code tool group: {@code runCode} with a {@code context} (a stateful interpreter, created on
 * first use under the name the model gives it), {@code listCodeContexts} and {@code
 * deleteCodeContext}, over {@link dev.sandboxsdk.SandboxCode}. Images a run produces (a matplotlib
 * chart) come back as MCP image content so the model sees them. Names are this server's: it maps
 * each sandbox's names to context ids. Thread-safe: the map is concurrent, and a name's first use
 * creates its context once (under this object's lock).
 */
final class CodeTools implements ToolGroup {
  private final AdapterConfig config;
  private final Sandboxes sandboxes;
  private final Redactor redactor;
  /** Per sandbox id: context name to handle. */
  private final Map<String, Map<String, CodeContext>> named = new ConcurrentHashMap<>();

  CodeTools(AdapterConfig config, Sandboxes sandboxes, Redactor redactor) {
    this.config = config;
    this.sandboxes = sandboxes;
    this.redactor = redactor;
  }

  @Override
  public void register(Map<String, ToolHandler> tools) {
    tools.put("listCodeContexts", ToolHandler.blocking(CodeArgs.Listing.class, this::listCodeContexts));
    tools.put("deleteCodeContext", ToolHandler.blocking(CodeArgs.Delete.class, this::deleteCodeContext));
  }

  /** runCode with a context: the context's stream collected into one result, output as progress. */
  CompletableFuture<ToolOutcome> runInContext(ExecArgs.RunCode args, CallContext ctx) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    CodeLanguage language;
    switch (args.language()) {
      case "python" -> language = CodeLanguage.PYTHON;
      case "javascript" -> language = CodeLanguage.JAVASCRIPT;
      default -> {
        return CompletableFuture.completedFuture(ToolOutcome.error("Code contexts run python or javascript, not "
            + args.language() + ". Leave out context to run " + args.language() + " in a fresh process."));
      }
    }
    CodeContext context = contextFor(sb, args, language);
    if (context.language() != language) {
      return CompletableFuture.completedFuture(ToolOutcome.error("Context '" + args.context() + "' runs "
          + context.language().wireName() + ", not " + language.wireName() + ". Use another context name."));
    }
    Collector collector = new Collector(sb, args, context, ctx);
    context.runStream(args.code(), SandboxTools.seconds(args.timeoutSeconds(), SandboxTools.DEFAULT_EXEC_TIMEOUT))
        .subscribe(collector);
    return collector.result;
  }

  private CodeContext contextFor(Sandboxes.Entry sb, ExecArgs.RunCode args, CodeLanguage language) {
    Map<String, CodeContext> names = named.computeIfAbsent(sb.id(), k -> new ConcurrentHashMap<>());
    CodeContext c = names.get(args.context());
    if (c != null) {
      return c;
    }
    synchronized (this) {
      c = names.get(args.context());
      if (c == null) {
        CodeContextOptions options = CodeContextOptions.of(language).withCwd(args.cwd());
        for (Map.Entry<String, String> e : SandboxTools.environment(config, args.env()).entrySet()) {
          options = options.withEnv(e.getKey(), e.getValue());
        }
        c = sb.sandbox().code().createContext(options);
        names.put(args.context(), c);
      }
      return c;
    }
  }

  ToolOutcome listCodeContexts(CodeArgs.Listing args) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    Map<String, CodeContext> names = named.getOrDefault(sb.id(), Map.of());
    ObjectNode r = Json.object();
    ArrayNode list = r.putArray("contexts");
    for (CodeContextInfo i : sb.sandbox().code().contexts()) {
      String name = names.entrySet().stream().filter(e -> e.getValue().id().equals(i.id())).map(Map.Entry::getKey)
          .findFirst().orElse(null);
      list.addObject().put("name", name).put("id", i.id()).put("language", i.language().wireName())
          .put("executions", i.executions()).put("busy", i.busy()).put("createdAt", i.createdAt().toString())
          .put("lastUsed", i.lastUsed().toString());
    }
    r.put("count", list.size()).put("sandboxId", sb.id());
    return ToolOutcome.ok(r);
  }

  ToolOutcome deleteCodeContext(CodeArgs.Delete args) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    CodeContext c = named.getOrDefault(sb.id(), Map.of()).remove(args.context());
    if (c == null) {
      c = sb.sandbox().code().context(args.context()).orElse(null); // an id works too
    }
    if (c == null) {
      return ToolOutcome.error("There is no code context '" + args.context() + "' in sandbox '" + sb.id()
          + "'. listCodeContexts shows the open ones.");
    }
    c.delete();
    return ToolOutcome.ok(Json.object().put("context", args.context()).put("deleted", true).put("sandboxId", sb.id()));
  }

  /** Collects one context run into the result; stdout and stderr also go out as progress. */
  private final class Collector implements Flow.Subscriber<CodeEvent> {
    final CompletableFuture<ToolOutcome> result = new CompletableFuture<>();
    private final Sandboxes.Entry sandbox;
    private final ExecArgs.RunCode args;
    private final CodeContext context;
    private final CappedText stdout;
    private final CappedText stderr;
    private final Progress progress;
    private final List<CodeOutput> outputs = new ArrayList<>();
    private long stdoutBytes;
    private long stderrBytes;
    private CodeEvent.Error error;

    Collector(Sandboxes.Entry sandbox, ExecArgs.RunCode args, CodeContext context, CallContext ctx) {
      this.sandbox = sandbox;
      this.args = args;
      this.context = context;
      int cap = SandboxTools.cap(config, args.maxOutputBytes());
      this.stdout = new CappedText(cap, redactor, 0);
      this.stderr = new CappedText(cap, redactor, 0);
      this.progress = new Progress(ctx, redactor);
    }

    @Override
    public void onSubscribe(Flow.Subscription s) {
      progress.ctx.onCancel(s::cancel); // the SDK interrupts the run
      s.request(Long.MAX_VALUE);
    }

    @Override
    public void onNext(CodeEvent e) {
      if (e instanceof CodeEvent.Stdout o) {
        long bytes = o.text().getBytes(StandardCharsets.UTF_8).length;
        stdout.append(o.text(), stdoutBytes, bytes);
        stdoutBytes += bytes;
        progress.output(StdStream.STDOUT, o.text(), bytes);
      } else if (e instanceof CodeEvent.Stderr o) {
        long bytes = o.text().getBytes(StandardCharsets.UTF_8).length;
        stderr.append(o.text(), stderrBytes, bytes);
        stderrBytes += bytes;
        progress.output(StdStream.STDERR, o.text(), bytes);
      } else if (e instanceof CodeEvent.Result r) {
        outputs.add(r.output());
      } else if (e instanceof CodeEvent.Error err) {
        error = err;
      } else if (e instanceof CodeEvent.Complete c) {
        stdout.ended();
        stderr.ended();
        progress.flush();
        result.complete(outcome(c));
      }
    }

    private ToolOutcome outcome(CodeEvent.Complete c) {
      boolean ok = error == null;
      ObjectNode r = Json.object()
          .put("command", args.language() + " code in context '" + args.context() + "'")
          .put("exitCode", ok ? 0 : 1).put("success", ok)
          .put("stdout", stdout.text()).put("stderr", stderr.text())
          .put("stdoutBytes", stdoutBytes).put("stderrBytes", stderrBytes)
          .put("truncated", c.truncated() || stdout.truncated() || stderr.truncated())
          .put("timedOut", c.timedOut());
      r.putNull("signal");
      r.put("durationMs", c.duration().toMillis()).put("pid", 0).put("sandboxId", sandbox.id())
          .put("context", args.context()).put("contextId", context.id())
          .put("executionCount", c.executionCount()).put("interrupted", c.interrupted()).put("restarted", c.restarted());
      List<ToolOutcome.Image> images = new ArrayList<>();
      ArrayNode shown = r.putArray("outputs");
      for (CodeOutput o : outputs) {
        ObjectNode item = shown.addObject().put("text", o.text()).put("isMainResult", o.isMainResult());
        o.data().keySet().forEach(item.putArray("mimeTypes")::add);
        o.get("image/png").ifPresent(png -> images.add(new ToolOutcome.Image("image/png", png)));
        if (o.isMainResult()) {
          r.put("value", o.text());
        }
      }
      if (!ok) {
        ObjectNode err = r.putObject("error").put("name", error.error().name())
            .put("message", error.error().message());
        error.error().traceback().forEach(err.putArray("traceback")::add);
      }
      List<String> notes = new ArrayList<>();
      if (c.restarted()) {
        notes.add("The interpreter was restarted: variables from earlier runs in this context are gone.");
      }
      if (c.timedOut()) {
        notes.add("The run was interrupted after its timeout; pass a larger timeoutSeconds if it needs longer.");
      } else if (!ok) {
        notes.add("The code raised " + error.error().name() + "; the context keeps its other state, so fix the"
            + " code and run again.");
      }
      if (!notes.isEmpty()) {
        r.put("note", String.join(" ", notes));
      }
      return new ToolOutcome(r, null, !ok, images);
    }

    @Override
    public void onError(Throwable t) {
      if (t instanceof SandboxNotFoundException && "CONTEXT_NOT_FOUND".equals(((SandboxNotFoundException) t).code())) {
        named.getOrDefault(sandbox.id(), Map.of()).remove(args.context(), context);
        result.complete(ToolOutcome.error("Code context '" + args.context() + "' is gone (deleted, or its sandbox"
            + " restarted). Run again to create it afresh; its earlier state is lost."));
        return;
      }
      result.completeExceptionally(t);
    }

    @Override
    public void onComplete() {
      if (!result.isDone()) {
        result.completeExceptionally(new dev.sandboxsdk.SandboxConnectionException(
            "the code run's stream ended without a result", null));
      }
    }
  }
}
