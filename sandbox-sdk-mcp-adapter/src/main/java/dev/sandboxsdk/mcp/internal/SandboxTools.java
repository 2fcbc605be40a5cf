package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.Command;
import dev.sandboxsdk.ProcessNotFoundException;
import dev.sandboxsdk.SandboxAuthException;
import dev.sandboxsdk.SandboxConnectionException;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxInvalidRequestException;
import dev.sandboxsdk.SandboxTimeoutException;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The tools: each is a thin call of the public SDK API on one of the server's sandboxes, with its
 * arguments already checked against the tool's inputSchema. Long calls ({@code exec},
 * {@code runCode}, {@code streamProcessLogs}) run on the SDK's streams and hold no thread while
 * they wait. The tool groups ({@link ExecTools}, {@link ProcessTools}, {@link FileTools}, ...)
 * implement them; this class dispatches calls, maps failures to error results and holds the
 * argument helpers the groups share. Thread-safe.
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
    // Never in a sandbox, but a bound host that echoes its request could hand one back.
    config.egressSecrets().forEach(s -> secrets.putIfAbsent(s.name(), s.value()));
    return secrets;
  }

  public SandboxTools(AdapterConfig config, Sandboxes sandboxes) {
    this.config = config;
    this.sandboxes = sandboxes;
    this.redactor = new Redactor(secrets(config));
    timer.setRemoveOnCancelPolicy(true);
    CodeTools code = new CodeTools(config, sandboxes, redactor);
    new ExecTools(config, sandboxes, redactor, code).register(tools);
    new ProcessTools(config, sandboxes, redactor, timer).register(tools);
    // Further capabilities are groups of their own; a new one is one more entry here.
    List.<ToolGroup>of(new LifecycleTools(sandboxes, config.passEnv()), new CheckpointTools(sandboxes),
        new FileTools(config, sandboxes, redactor), new PortTools(sandboxes), new GitTools(sandboxes, config.passEnv()),
        new WatchTools(sandboxes, timer), new EgressTools(sandboxes), new SessionTools(sandboxes), code)
        .forEach(g -> g.register(tools));
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

  /** Tool {@code name}'s handler, or null (for tests). */
  ToolHandler handler(String name) {
    return tools.get(name);
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

  // ---- argument and result helpers, shared by the tool groups

  static String sandboxId(ObjectNode args) {
    return args.hasNonNull("sandboxId") ? args.get("sandboxId").asText() : null;
  }

  /** The command of an exec or startProcess: a shell string or an argv, exactly one of the two. */
  static Command command(String command, List<String> argv) {
    if ((command == null) == (argv == null)) {
      throw new ToolException(command != null
          ? "Give either command (a shell string) or argv (an array), not both."
          : "Give the command to run: command (a shell string such as \"ls -la\") or argv (such as [\"ls\", \"-la\"]).");
    }
    return command != null ? Command.shell(command) : Command.of(argv);
  }

  /**
   * The passed-through secrets under the call's own variables {@code given} (in the call's
   * order, or null), which cannot override them.
   */
  static Map<String, String> environment(AdapterConfig config, Map<String, String> given) {
    Map<String, String> env = new HashMap<>();
    if (given != null) {
      for (Map.Entry<String, String> f : given.entrySet()) {
        if (!f.getKey().matches("[A-Za-z_][A-Za-z0-9_]*")) {
          throw new ToolException("env: '" + f.getKey() + "' is not a valid variable name");
        }
        env.put(f.getKey(), f.getValue());
      }
    }
    if (config.passEnvPerCall()) {
      env.putAll(config.passEnv());
    } else { // the sandbox's own environment has them; a call's variable of that name would override it
      config.passEnv().keySet().forEach(env::remove);
    }
    return env;
  }

  /** The output cap a call asks for ({@code asked}, null when absent), at most the server's. */
  static int cap(AdapterConfig config, Integer asked) {
    int max = config.maxOutputBytes();
    return asked != null ? Math.min(max, asked) : max;
  }

  /** A time argument in seconds (null when absent) as a duration of at least 1 ms. */
  static Duration seconds(Double seconds, Duration fallback) {
    if (seconds == null) {
      return fallback;
    }
    return Duration.ofMillis(Math.max(1, Math.round(seconds * 1000)));
  }

  /** {@code result} as the JSON object of its record: components in declaration order. */
  static ObjectNode json(Record result) {
    return Json.MAPPER.valueToTree(result);
  }

  static ObjectNode withSandbox(ObjectNode r, Sandboxes.Entry sb) {
    return r.put("sandboxId", sb.id());
  }
}
