package dev.sandboxsdk.agent.http;

import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import dev.sandboxsdk.agent.AgentConfig;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.fs.Anchor;
import dev.sandboxsdk.agent.fs.PathErrors;
import dev.sandboxsdk.agent.fs.Workspace;
import dev.sandboxsdk.agent.process.ProcessManager;
import dev.sandboxsdk.agent.watch.FileWatch;
import dev.sandboxsdk.agent.watch.Globs;
import dev.sandboxsdk.agent.watch.WatchRequest;
import dev.sandboxsdk.agent.watch.Watches;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * POST /api/watch: Cloudflare's file watch, an event stream of the changes under a directory of
 * the workspace ({@code create}, {@code modify}, {@code delete}), read from the kernel through the
 * JDK's {@link java.nio.file.WatchService} (inotify on Linux) by a {@link FileWatch}.
 *
 * <p>The route validates the request, opens the watch (through {@link Watches}) and writes its
 * events to the client from the request's own thread. Everything is released when the client
 * hangs up (found at the next write or keep-alive), when the watched directory goes away, or when
 * the agent stops.
 */
final class WatchEndpoints {
  private static final Logger log = LoggerFactory.getLogger(WatchEndpoints.class);
  /** Cloudflare's default exclusions, used when the request names neither {@code include} nor {@code exclude}. */
  static final List<String> DEFAULT_EXCLUDES = List.of(".git", "node_modules", ".DS_Store");
  static final Set<String> EVENT_TYPES = Set.of("create", "modify", "delete");
  private static final Set<String> FIELDS = Set.of("path", "recursive", "include", "exclude", "events", "sessionId",
      "timeoutMs");
  /** The longest {@code timeoutMs} accepted: one day (as port-watch). */
  static final long MAX_TIMEOUT_MS = 24L * 60 * 60 * 1000;
  /** Brackets and braces are not glob syntax here (as in Cloudflare's agent): refused, not taken literally. */
  private static final Pattern UNSUPPORTED_GLOB = Pattern.compile("[\\[\\]{}]");
  /** How often the writer looks up from an idle queue (root moved, agent stopping, keep-alive due). */
  private static final long TICK_MS = 500;

  private final ProcessManager processes;
  private final AgentConfig config;
  private final Workspace workspace;
  private final Watches watches;

  WatchEndpoints(ProcessManager processes, Workspace workspace) {
    this.processes = processes;
    this.config = processes.config();
    this.workspace = workspace;
    this.watches = new Watches(workspace);
  }

  /** Registers the file watch, run as the command user. */
  void register(Routes routes) {
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
        try {
          sse.send(error);
        } catch (IOException ignored) {
          // the client is gone as well
        }
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
    Path root;
    try (Anchor a = workspace.resolve("path", raw, true, false)) {
      if (a.name() != null) { // the walk ended at something that is not a directory (or nothing)
        try {
          Files.readAttributes(a.path(), BasicFileAttributes.class, a.linkOptions());
        } catch (IOException e) {
          throw PathErrors.failure(e, "path", raw);
        }
        throw new AgentException(ErrorCode.NOT_DIRECTORY, "'" + PathErrors.shorten(raw) + "' is not a directory;"
            + " watch the directory that holds it, with include: [\"" + a.name() + "\"]",
            Map.of("field", "path", "path", PathErrors.shorten(raw)));
      }
      root = a.logical(); // events name paths inside the workspace, whatever links inside it led here
    }
    Boolean recursive = body.bool("recursive");
    List<String> include = patterns(body, "include");
    List<String> exclude = patterns(body, "exclude");
    if (include != null && !include.isEmpty() && exclude != null && !exclude.isEmpty()) {
      throw AgentException.invalid("include", "'include' and 'exclude' cannot be used together: include lists what to"
          + " report, exclude what to leave out");
    }
    if (include == null && exclude == null) {
      exclude = DEFAULT_EXCLUDES;
    }
    List<String> events = body.stringList("events");
    Set<String> kinds = EVENT_TYPES;
    if (events != null && !events.isEmpty()) {
      kinds = new LinkedHashSet<>();
      for (String e : events) {
        if (!EVENT_TYPES.contains(e)) {
          throw AgentException.invalid("events", "'events' may hold 'create', 'modify' and 'delete', got '"
              + PathErrors.shorten(e) + "'" + (e.startsWith("move") ? " (a move is reported as delete and create)"
              : e.equals("attrib") ? " (attribute changes are reported as modify)" : ""));
        }
        kinds.add(e);
      }
    }
    body.string("sessionId"); // accepted for Cloudflare's clients; there are no sessions here
    Long timeoutMs = body.integer("timeoutMs", 1, MAX_TIMEOUT_MS);
    return new WatchRequest(root, raw, recursive == null || recursive, Globs.of(include), Globs.of(exclude),
        Set.copyOf(kinds), timeoutMs);
  }

  private static List<String> patterns(Json body, String field) {
    List<String> list = body.stringList(field);
    if (list == null) {
      return null;
    }
    if (list.size() > Globs.MAX_PATTERNS) {
      throw AgentException.invalid(field, "'" + field + "' may hold at most " + Globs.MAX_PATTERNS + " patterns, got "
          + list.size());
    }
    for (String g : list) {
      if (g.isBlank() || g.indexOf('\0') >= 0 || g.length() > Globs.MAX_PATTERN_CHARS
          || UNSUPPORTED_GLOB.matcher(g).find()) {
        throw AgentException.invalid(field, "'" + field + "' has an unsupported pattern '" + PathErrors.shorten(g)
            + "': use *, **, ? and / (no brackets or braces), non-empty, at most " + Globs.MAX_PATTERN_CHARS
            + " characters");
      }
    }
    return list;
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
    ObjectNode e = Json.object();
    e.put("type", type);
    return e;
  }
}
