package dev.sandboxsdk.agent.watch;

import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.sun.net.httpserver.HttpExchange;
import dev.sandboxsdk.agent.AgentConfig;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.fs.Workspace;
import dev.sandboxsdk.agent.http.Json;
import dev.sandboxsdk.agent.http.Query;
import dev.sandboxsdk.agent.http.Routes;
import dev.sandboxsdk.agent.http.SseWriter;
import dev.sandboxsdk.agent.process.ProcessManager;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * POST /api/watch: Cloudflare's file watch, an event stream of the changes under a directory of
 * the workspace ({@code create}, {@code modify}, {@code delete}), read from the kernel through the
 * JDK's {@link java.nio.file.WatchService} (inotify on Linux) by a {@link FileWatch}.
 *
 * <p>The route parses the request (checked by {@link WatchRules}), opens the watch (through
 * {@link Watches}) and writes its events to the client from the request's own thread. Everything is released when the client
 * hangs up (found at the next write or keep-alive), when the watched directory goes away, or when
 * the agent stops.
 */
public final class WatchRoutes {
  private static final Logger log = LoggerFactory.getLogger(WatchRoutes.class);
  private static final Set<String> FIELDS = Set.of("path", "recursive", "include", "exclude", "events", "sessionId",
      "timeoutMs");
  /** The longest {@code timeoutMs} accepted: one day (as port-watch). */
  static final long MAX_TIMEOUT_MS = 24L * 60 * 60 * 1000;
  /** How often the writer looks up from an idle queue (root moved, agent stopping, keep-alive due). */
  private static final long TICK_MS = 500;

  private final ProcessManager processes;
  private final AgentConfig config;
  private final Workspace workspace;
  private final Watches watches;

  public WatchRoutes(ProcessManager processes, Workspace workspace) {
    this.processes = processes;
    this.config = processes.config();
    this.workspace = workspace;
    this.watches = new Watches(workspace);
  }

  /** Registers the file watch, run as the command user. */
  public void register(Routes routes) {
    routes.on("POST", "/api/watch", Routes.asUser(workspace, this::watch));
  }

  void watch(HttpExchange exchange) throws IOException {
    Query.none(exchange);
    WatchRequest r = parse(Json.read(exchange, config.maxBodyBytes(), processes.outputBudget()).allowOnly(FIELDS));
    // Registration happens before the headers, so a refusal (cap, limit, permission) is a plain JSON error.
    FileWatch w = watches.open(r);
    try {
      SseWriter sse = SseWriter.open(exchange);
      try {
        stream(w, r, sse);
      } catch (IOException e) {
        log.debug("watch client of {} went away: {}", r.root(), e.toString());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (RuntimeException e) {
        ObjectNode error = event("error");
        error.put("error", "the agent failed while watching: " + e.getClass().getSimpleName());
        error.put("code", ErrorCode.INTERNAL_ERROR.name());
        sse.sendQuietly(error);
        throw e;
      } finally {
        sse.close();
      }
    } finally {
      w.close();
    }
  }

  WatchRequest parse(Json body) {
    String raw = body.string("path");
    Path root = WatchRules.root(workspace, raw);
    Boolean recursive = body.bool("recursive");
    List<String> include = WatchRules.patterns("include", body.stringList("include"));
    List<String> exclude = WatchRules.patterns("exclude", body.stringList("exclude"));
    if (include != null && !include.isEmpty() && exclude != null && !exclude.isEmpty()) {
      throw AgentException.invalid("include", "'include' and 'exclude' cannot be used together: include lists what to"
          + " report, exclude what to leave out");
    }
    if (include == null && exclude == null) {
      exclude = WatchRules.DEFAULT_EXCLUDES;
    }
    Set<String> kinds = WatchRules.kinds(body.stringList("events"));
    body.string("sessionId"); // accepted for Cloudflare's clients; there are no sessions here
    Long timeoutMs = body.integer("timeoutMs", 1, MAX_TIMEOUT_MS);
    return new WatchRequest(root, raw, recursive == null || recursive, Globs.of(include), Globs.of(exclude), kinds,
        timeoutMs);
  }

  /** The request's thread: sends {@code watching}, then the queue, until the end or a hang-up. */
  private void stream(FileWatch w, WatchRequest request, SseWriter sse) throws IOException, InterruptedException {
    sse.send(w.watching());
    long keepAliveNanos = TimeUnit.MILLISECONDS.toNanos(config.keepAliveMs());
    long tick = Math.min(TICK_MS, config.keepAliveMs());
    long deadline = request.timeoutMs() == null ? Long.MAX_VALUE
        : System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(request.timeoutMs());
    for (;;) {
      if (request.timeoutMs() != null) {
        long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
        if (left <= 0) {
          w.stop("timeoutMs (" + request.timeoutMs() + " ms) passed");
        }
        tick = Math.max(1, Math.min(tick, left));
      }
      ObjectNode e = w.next(tick);
      if (e != null) {
        sse.send(e);
        if (e.path("type").asText().equals("stopped") || e.path("type").asText().equals("error")) {
          return;
        }
        continue;
      }
      if (!sse.keepAliveIfIdle(keepAliveNanos)) {
        return; // the client went away
      }
      if (processes.isShuttingDown()) {
        w.stop("the agent is shutting down");
      } else if (w.rootReplaced()) {
        w.stop("the watched directory was deleted, moved or replaced");
      }
    }
  }

  private static ObjectNode event(String type) {
    ObjectNode e = JsonNodeFactory.instance.objectNode();
    e.put("type", type);
    return e;
  }
}
