package dev.sandboxsdk.agent.http;

import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import dev.sandboxsdk.agent.AgentConfig;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.fs.Anchor;
import dev.sandboxsdk.agent.fs.PathErrors;
import dev.sandboxsdk.agent.fs.Tree;
import dev.sandboxsdk.agent.fs.Workspace;
import dev.sandboxsdk.agent.process.ProcessManager;
import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.ClosedWatchServiceException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardWatchEventKinds;
import java.nio.file.WatchEvent;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * POST /api/watch: Cloudflare's file watch, an event stream of the changes under a directory of
 * the workspace ({@code create}, {@code modify}, {@code delete}), read from the kernel through the
 * JDK's {@link WatchService} (inotify on Linux).
 *
 * <p>One watch is one {@link WatchService} (one inotify instance and the JDK's poller thread) plus
 * one thread of ours that takes the kernel's events as they come, registers new directories, and
 * puts the events into a bounded queue; the request's own thread writes that queue to the client.
 * Everything is released when the client hangs up (found at the next write or keep-alive), when
 * the watched directory goes away, or when the agent stops.
 *
 * <p>The agent watches as itself: a directory it may not read is not watched.
 */
final class WatchEndpoints {
  private static final Logger log = LoggerFactory.getLogger(WatchEndpoints.class);
  /** Watch streams open at once: each holds an inotify instance (the kernel's default is 128 per user). */
  static final int MAX_WATCHES = 16;
  /** Directories one watch may hold: each is an inotify watch, counted against fs.inotify.max_user_watches. */
  static final int MAX_DIRECTORIES = 8192;
  /** Events waiting for a slow client; beyond that they are dropped and an {@code overflow} event says so. */
  static final int MAX_QUEUED_EVENTS = 1024;
  static final int MAX_PATTERNS = 32;
  static final int MAX_PATTERN_CHARS = 256;
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
  private final AtomicInteger open = new AtomicInteger();
  private final AtomicLong ids = new AtomicLong();

  WatchEndpoints(ProcessManager processes, Workspace workspace) {
    this.processes = processes;
    this.config = processes.config();
    this.workspace = workspace;
  }

  /** A validated request; {@code include} and {@code exclude} are null when not used. */
  record Request(Path root, String raw, boolean recursive, Globs include, Globs exclude, Set<String> events,
      Long timeoutMs) {
  }

  void watch(HttpExchange exchange) throws IOException {
    Query.none(exchange);
    Request r = parse(Json.read(exchange, config.maxBodyBytes(), processes.outputBudget()).allowOnly(FIELDS));
    if (open.incrementAndGet() > MAX_WATCHES) {
      open.decrementAndGet();
      throw new AgentException(ErrorCode.TOO_MANY_WATCHES, "this agent already serves " + MAX_WATCHES
          + " watch streams; close one (or watch one directory recursively instead of several)",
          Map.of("limit", MAX_WATCHES));
    }
    Watch w = null;
    try {
      // Registration happens before the headers, so a refusal (cap, limit, permission) is a plain JSON error.
      w = new Watch(r, "watch-" + ids.incrementAndGet());
      w.start();
      SseWriter sse = SseWriter.open(exchange);
      try {
        w.stream(sse);
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
      if (w != null) {
        w.close();
      }
      open.decrementAndGet();
    }
  }

  Request parse(Json body) {
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
    return new Request(root, raw, recursive == null || recursive, globs(include), globs(exclude), Set.copyOf(kinds),
        timeoutMs);
  }

  private static List<String> patterns(Json body, String field) {
    List<String> list = body.stringList(field);
    if (list == null) {
      return null;
    }
    if (list.size() > MAX_PATTERNS) {
      throw AgentException.invalid(field, "'" + field + "' may hold at most " + MAX_PATTERNS + " patterns, got " + list.size());
    }
    for (String g : list) {
      if (g.isBlank() || g.indexOf('\0') >= 0 || g.length() > MAX_PATTERN_CHARS || UNSUPPORTED_GLOB.matcher(g).find()) {
        throw AgentException.invalid(field, "'" + field + "' has an unsupported pattern '" + PathErrors.shorten(g)
            + "': use *, **, ? and / (no brackets or braces), non-empty, at most " + MAX_PATTERN_CHARS + " characters");
      }
    }
    return list;
  }

  /**
   * A list of globs, each matched against whole path segments anywhere in the path relative to
   * the watched directory: {@code *.log} matches {@code a/b.log}, {@code node_modules} matches
   * {@code node_modules/x/y}. Null for an empty list.
   */
  static Globs globs(List<String> globs) {
    return globs == null || globs.isEmpty() ? null : new Globs(globs);
  }

  /**
   * Globs matched by stepping through the path once with the set of glob positions reached, in
   * time linear in the path's length for each glob. A regular expression would backtrack: a
   * glob of many stars (which a client may send) against a long name (which a command may make)
   * took exponential time, with the watch's thread stuck in it.
   */
  static final class Globs {
    private static final int ANY = -1; // ** (crosses /)
    private static final int STAR = -2; // * (within a segment)
    private static final int ONE = -3; // ? (one character of a segment); else the character itself
    private final List<int[]> compiled = new ArrayList<>();

    Globs(List<String> globs) {
      for (String g : globs) {
        int[] tokens = new int[g.length()];
        int n = 0;
        for (int i = 0; i < g.length(); i++) {
          char c = g.charAt(i);
          if (c == '*' && i + 1 < g.length() && g.charAt(i + 1) == '*') {
            tokens[n++] = ANY;
            i++;
          } else {
            tokens[n++] = c == '*' ? STAR : c == '?' ? ONE : c;
          }
        }
        compiled.add(Arrays.copyOf(tokens, n));
      }
    }

    /** Whether any glob matches a run of whole segments of {@code rel}. */
    boolean matches(String rel) {
      for (int[] g : compiled) {
        if (matches(g, rel)) {
          return true;
        }
      }
      return false;
    }

    private static boolean matches(int[] g, String rel) {
      int m = g.length;
      boolean[] at = new boolean[m + 1];
      boolean[] next = new boolean[m + 1];
      for (int i = 0; ; i++) {
        if (i == 0 || rel.charAt(i - 1) == '/') {
          at[0] = true; // a match may start at every segment
        }
        for (int j = 0; j < m; j++) { // stars may match nothing
          if (at[j] && (g[j] == ANY || g[j] == STAR)) {
            at[j + 1] = true;
          }
        }
        if (at[m] && (i == rel.length() || rel.charAt(i) == '/')) {
          return true; // ... and must end with one
        }
        if (i == rel.length()) {
          return false;
        }
        char c = rel.charAt(i);
        Arrays.fill(next, false);
        boolean any = false;
        for (int j = 0; j < m; j++) {
          if (!at[j]) {
            continue;
          }
          int t = g[j];
          if (t == ANY || t == STAR && c != '/') {
            next[j] = true;
            any = true;
          } else if (t == ONE && c != '/' || t == c) {
            next[j + 1] = true;
            any = true;
          }
        }
        boolean[] swap = at;
        at = next;
        next = swap;
        if (!any && c != '/') {
          // Nothing alive and no segment starts next: skip to the next '/' (or the end).
          int slash = rel.indexOf('/', i + 1);
          if (slash < 0) {
            return false;
          }
          Arrays.fill(at, false);
          i = slash - 1;
        }
      }
    }
  }

  private static ObjectNode event(String type) {
    ObjectNode e = Json.object();
    e.put("type", type);
    return e;
  }

  /** One watch stream: its WatchService, its directories, its thread and its queue. */
  private final class Watch {
    private final Request request;
    private final String id;
    private final Queue queue;
    /** The directory each key watches now (a moved directory keeps its key: see {@link #registerTree}). */
    private final Map<WatchKey, Path> dirs = new HashMap<>();
    private final Map<Path, WatchKey> keys = new HashMap<>();
    /**
     * Directories registered and not yet reported deleted: the kernel drops a deleted directory's
     * watch before its parent reports the deletion, and the event must still say it was one.
     */
    private final Set<Path> knownDirs = new HashSet<>();
    private final Object rootFile;
    private WatchService service;
    private WatchKey rootKey;
    private Thread thread;

    Watch(Request request, String id) {
      this.request = request;
      this.id = id;
      ObjectNode overflow = event("overflow");
      overflow.put("path", request.root().toString());
      this.queue = new Queue(MAX_QUEUED_EVENTS, overflow);
      this.rootFile = fileKey(request.root());
    }

    /** Registers the tree; throws (before any response) if that is refused. */
    void start() {
      try {
        service = FileSystems.getDefault().newWatchService();
      } catch (IOException e) {
        throw limit(e);
      }
      try {
        registerTree(request.root(), false);
      } catch (RuntimeException e) {
        close();
        throw e;
      }
      rootKey = keys.get(request.root());
      if (rootKey == null) {
        close();
        throw new AgentException(ErrorCode.PERMISSION_DENIED, "permission denied: the agent may not watch '"
            + PathErrors.shorten(request.raw()) + "'", Map.of("field", "path", "path", PathErrors.shorten(request.raw())));
      }
      thread = new Thread(() -> {
        try {
          workspace.asUser(() -> {
            drain();
            return null;
          });
        } catch (IOException e) {
          log.debug("watch {} ended: {}", id, e.toString());
        }
      }, id);
      thread.setDaemon(true);
      thread.start();
    }

    /** The request's thread: sends {@code watching}, then the queue, until the end or a hang-up. */
    void stream(SseWriter sse) throws IOException, InterruptedException {
      ObjectNode watching = event("watching");
      watching.put("path", request.root().toString());
      watching.put("watchId", id);
      watching.put("recursive", request.recursive());
      synchronized (this) {
        watching.put("directories", keys.size());
      }
      sse.send(watching);
      long keepAliveNanos = TimeUnit.MILLISECONDS.toNanos(config.keepAliveMs());
      long tick = Math.min(TICK_MS, config.keepAliveMs());
      long deadline = request.timeoutMs() == null ? Long.MAX_VALUE
          : System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(request.timeoutMs());
      for (;;) {
        if (request.timeoutMs() != null) {
          long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
          if (left <= 0) {
            queue.end(stopped("timeoutMs (" + request.timeoutMs() + " ms) passed"));
          }
          tick = Math.max(1, Math.min(tick, left));
        }
        ObjectNode e = queue.take(tick);
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
          queue.end(stopped("the agent is shutting down"));
        } else if (!Objects.equals(fileKey(request.root()), rootFile)) {
          // inotify follows the inode: a renamed root would go on reporting under its old name.
          queue.end(stopped("the watched directory was deleted, moved or replaced"));
        }
      }
    }

    /** Our thread: the kernel's events become queued events; new directories are registered. */
    private void drain() {
      try {
        for (;;) {
          WatchKey key = service.take();
          boolean rootGone;
          synchronized (this) {
            handle(key);
            rootGone = !key.reset() && forgetKey(key) && key == rootKey;
          }
          if (rootGone) {
            queue.end(stopped("the watched directory was deleted"));
            return;
          }
        }
      } catch (ClosedWatchServiceException | InterruptedException e) {
        // closed: the stream ended
      } catch (AgentException e) {
        ObjectNode error = event("error");
        error.put("error", e.getMessage());
        error.put("code", e.code().name());
        queue.end(error);
      } catch (RuntimeException | Error e) {
        log.error("watch {} of {} failed", id, request.root(), e);
        ObjectNode error = event("error");
        error.put("error", "the agent failed while watching: " + e.getClass().getSimpleName());
        error.put("code", ErrorCode.INTERNAL_ERROR.name());
        queue.end(error);
      }
    }

    private void handle(WatchKey key) {
      Path dir = dirs.get(key);
      for (WatchEvent<?> e : key.pollEvents()) {
        if (e.kind() == StandardWatchEventKinds.OVERFLOW) {
          queue.overflow();
          knownDirs.removeIf(d -> !isDirectory(d)); // deletions we missed
          if (request.recursive()) {
            registerTree(request.root(), false); // directories made while events were lost
          }
          continue;
        }
        if (dir == null) {
          continue; // a key forgotten while its last events were on the way
        }
        Path p = dir.resolve((Path) e.context());
        String rel = request.root().relativize(p).toString();
        boolean excluded = request.exclude() != null && request.exclude().matches(rel);
        if (e.kind() == StandardWatchEventKinds.ENTRY_CREATE) {
          boolean isDir = isDirectory(p);
          offer("create", p, rel, isDir, excluded);
          if (isDir && request.recursive() && !excluded) {
            registerTree(p, true);
          }
        } else if (e.kind() == StandardWatchEventKinds.ENTRY_DELETE) {
          // Gone, so only our own map knows whether it was a directory; its watches (and those
          // below) go too, or a directory moved elsewhere would go on reporting under this name.
          boolean wasDir = forgetTree(p);
          offer("delete", p, rel, wasDir, excluded);
        } else {
          offer("modify", p, rel, isDirectory(p), excluded);
        }
      }
    }

    private void offer(String kind, Path p, String rel, boolean isDir, boolean excluded) {
      if (excluded || !request.events().contains(kind)
          || request.include() != null && !request.include().matches(rel)) {
        return;
      }
      ObjectNode e = event("event");
      e.put("eventType", kind);
      e.put("path", p.toString());
      e.put("isDirectory", isDir);
      queue.offer(e);
    }

    /**
     * Registers {@code start} and, for a recursive watch, every directory below it that is not
     * excluded; links are never followed. With {@code announce}, everything found below {@code
     * start} is reported as created: it appeared before its directory was watched, and would
     * otherwise never be seen (it may be reported twice if it appeared while this ran).
     */
    private void registerTree(Path start, boolean announce) {
      if (!register(start) || !request.recursive()) {
        return;
      }
      // Found through directory descriptors (Tree), registered through their own (register): a
      // directory swapped for a link meanwhile is neither listed nor watched, and nothing outside
      // the workspace is ever named in an event.
      try (Anchor dir = workspace.resolve("path", start.toString(), false, false); Anchor held = dir.hold("path", "")) {
        if (held.name() == null && !Files.isDirectory(held.path())) {
          return;
        }
        Tree.list(held, true, true, "path", request.raw(), e -> {
          Path p = start.resolve(e.relativePath());
          String rel = request.root().relativize(p).toString();
          boolean excluded = request.exclude() != null && request.exclude().matches(rel);
          if (announce) { // a file, a link (never followed), or something else
            offer("create", p, rel, e.attributes().isDirectory(), excluded);
          }
          if (e.attributes().isDirectory() && !excluded) {
            register(p);
          }
          return true;
        });
      } catch (AgentException | IOException e) {
        if (e instanceof AgentException && ((AgentException) e).code() == ErrorCode.TOO_MANY_WATCHES) {
          throw (AgentException) e;
        }
        if (e instanceof AgentException && ((AgentException) e).code() == ErrorCode.PAYLOAD_TOO_LARGE && !announce) {
          throw new AgentException(ErrorCode.PAYLOAD_TOO_LARGE, "the tree under '" + PathErrors.shorten(request.raw())
              + "' is more than " + Tree.MAX_DEPTH + " directories deep; watch a directory deeper inside it, or with"
              + " recursive: false", Map.of("path", PathErrors.shorten(request.raw()), "maxDepth", Tree.MAX_DEPTH));
        }
        log.debug("watch {}: walking below a directory failed: {}", id, e.toString());
      }
    }

    /** Whether the path inside the workspace is a directory now (not a link to one). */
    private boolean isDirectory(Path p) {
      try (Anchor a = workspace.resolve("path", p.toString(), false, false)) {
        return Files.isDirectory(a.path(), a.linkOptions());
      } catch (AgentException e) {
        return false;
      }
    }

    /** Watches one directory; false if it is gone, unreadable, or turned out to lead elsewhere. */
    private boolean register(Path dir) {
      WatchKey known = keys.get(dir);
      if (known != null && known.isValid()) {
        return true;
      }
      if (keys.size() >= MAX_DIRECTORIES) {
        throw new AgentException(ErrorCode.TOO_MANY_WATCHES, "the watch of '" + PathErrors.shorten(request.raw())
            + "' would need more than " + MAX_DIRECTORIES + " directories; watch a smaller directory, with"
            + " recursive: false, or exclude large directories", Map.of("limit", MAX_DIRECTORIES, "path",
            PathErrors.shorten(request.raw())));
      }
      WatchKey key;
      // inotify is given the directory's descriptor path: the kernel watches the very directory the
      // descriptor holds, never what a link swapped in meanwhile leads to.
      try (Anchor a = workspace.resolve("path", dir.toString(), false, false); Anchor held = a.hold("path", "")) {
        if (!Files.isDirectory(held.path())) {
          return false; // a file or a link now
        }
        key = held.path().register(service, StandardWatchEventKinds.ENTRY_CREATE, StandardWatchEventKinds.ENTRY_DELETE,
            StandardWatchEventKinds.ENTRY_MODIFY);
      } catch (AgentException | NoSuchFileException | AccessDeniedException e) {
        return false;
      } catch (IOException e) {
        String reason = String.valueOf(e.getMessage());
        if (reason.contains("inotify") || reason.contains("No space left")) {
          throw limit(e);
        }
        log.debug("watch {}: cannot watch a directory: {}", id, reason);
        return false;
      }
      Path previous = dirs.put(key, dir); // the same key if this inode was watched under another name
      if (previous != null && !previous.equals(dir)) {
        keys.remove(previous);
      }
      keys.put(dir, key);
      knownDirs.add(dir);
      return true;
    }

    /** Stops watching {@code p} and everything below it; true if {@code p} was a watched directory. */
    private boolean forgetTree(Path p) {
      boolean wasDir = knownDirs.contains(p);
      if (!wasDir || p.equals(request.root())) {
        return wasDir;
      }
      knownDirs.removeIf(d -> d.startsWith(p));
      List<Path> below = new ArrayList<>();
      for (Path d : keys.keySet()) {
        if (d.startsWith(p)) {
          below.add(d);
        }
      }
      for (Path d : below) {
        WatchKey k = keys.remove(d);
        dirs.remove(k);
        k.cancel();
      }
      return true;
    }

    /** Drops a key the kernel invalidated; true (for chaining) always. */
    private boolean forgetKey(WatchKey key) {
      Path d = dirs.remove(key);
      if (d != null && keys.get(d) == key) {
        keys.remove(d);
      }
      return true;
    }

    private ObjectNode stopped(String reason) {
      ObjectNode e = event("stopped");
      e.put("reason", reason);
      return e;
    }

    private AgentException limit(IOException e) {
      return new AgentException(ErrorCode.TOO_MANY_WATCHES, "the system's inotify limit is reached ("
          + e.getMessage() + "); raise fs.inotify.max_user_watches / max_user_instances, or watch less",
          Map.of("path", PathErrors.shorten(request.raw())));
    }

    void close() {
      if (service != null) {
        try {
          service.close(); // ends the JDK's poller thread and closes the inotify descriptor
        } catch (IOException e) {
          log.debug("watch {}: closing the watch service failed: {}", id, e.toString());
        }
      }
      if (thread != null) {
        thread.interrupt();
        try {
          thread.join(TimeUnit.SECONDS.toMillis(5));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }
  }

  private static Object fileKey(Path p) {
    try {
      return Files.readAttributes(p, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS).fileKey();
    } catch (IOException e) {
      return null;
    }
  }

  /**
   * The events waiting for the client, at most {@code capacity}: when full, new events are dropped
   * and one {@code overflow} event marks the place. A burst of the same event (a file written in
   * many small pieces) is queued once. A final event ({@code stopped}, {@code error}) is always
   * taken, after what is already queued.
   */
  static final class Queue {
    private final ArrayDeque<ObjectNode> events = new ArrayDeque<>();
    private final int capacity;
    private final ObjectNode overflow;
    private ObjectNode last;
    private ObjectNode end;

    Queue(int capacity, ObjectNode overflow) {
      this.capacity = capacity;
      this.overflow = overflow;
    }

    synchronized void offer(ObjectNode e) {
      if (end != null || e.equals(last)) {
        return;
      }
      if (events.size() >= capacity) {
        overflow();
        return;
      }
      events.addLast(e);
      last = e;
      notifyAll();
    }

    /** Marks lost events (unless the last thing queued says so already). */
    synchronized void overflow() {
      if (end != null || last == overflow) {
        return;
      }
      events.addLast(overflow);
      last = overflow;
      notifyAll();
    }

    /** The final event: sent after what is queued; later offers are ignored. */
    synchronized void end(ObjectNode e) {
      if (end == null) {
        end = e;
        notifyAll();
      }
    }

    /** The next event, waiting up to {@code ms}; null if none came. */
    synchronized ObjectNode take(long ms) throws InterruptedException {
      long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
      for (;;) {
        ObjectNode e = events.pollFirst();
        if (e != null) {
          if (e == last) {
            last = null; // the queue is empty: the next identical event is news again
          }
          return e;
        }
        if (end != null) {
          return end;
        }
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          return null;
        }
        TimeUnit.NANOSECONDS.timedWait(this, left);
      }
    }
  }
}
