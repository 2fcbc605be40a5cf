package dev.sandboxsdk.agent.watch;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.fs.Anchor;
import dev.sandboxsdk.agent.fs.PathErrors;
import dev.sandboxsdk.agent.fs.Tree;
import dev.sandboxsdk.agent.fs.Workspace;
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
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One watch stream: its WatchService (one inotify instance and the JDK's poller thread), its
 * directories, its thread and its queue. Our thread takes the kernel's events as they come,
 * registers new directories and queues the events; the route takes them with {@link #next} and
 * writes them to the client. Opened by {@link Watches}.
 *
 * <p>The agent watches as itself: a directory it may not read is not watched.
 */
public final class FileWatch {
  private static final Logger log = LoggerFactory.getLogger(FileWatch.class);
  /** Directories one watch may hold: each is an inotify watch, counted against fs.inotify.max_user_watches. */
  static final int MAX_DIRECTORIES = 8192;
  /** Events waiting for a slow client; beyond that they are dropped and an {@code overflow} event says so. */
  static final int MAX_QUEUED_EVENTS = 1024;

  private final Workspace workspace;
  private final Runnable onClose;
  private final AtomicBoolean closed = new AtomicBoolean();
  private final WatchRequest request;
  private final String id;
  private final WatchQueue queue;
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

  FileWatch(WatchRequest request, String id, Workspace workspace, Runnable onClose) {
    this.workspace = workspace;
    this.onClose = onClose;
    this.request = request;
    this.id = id;
    ObjectNode overflow = event("overflow");
    overflow.put("path", request.root().toString());
    this.queue = new WatchQueue(MAX_QUEUED_EVENTS, overflow);
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

  /** The first event of the stream: what is watched, with how many directories. */
  public ObjectNode watching() {
    ObjectNode watching = event("watching");
    watching.put("path", request.root().toString());
    watching.put("watchId", id);
    watching.put("recursive", request.recursive());
    synchronized (this) {
      watching.put("directories", keys.size());
    }
    return watching;
  }

  /** The next event, waiting up to {@code ms}; null if none came. A final one is returned again and again. */
  public ObjectNode next(long ms) throws InterruptedException {
    return queue.take(ms);
  }

  /** Ends the stream with a {@code stopped} event after what is queued. */
  public void stop(String reason) {
    queue.end(stopped(reason));
  }

  /** Whether the watched directory is no longer the one the watch began with. */
  public boolean rootReplaced() {
    // inotify follows the inode: a renamed root would go on reporting under its old name.
    return !Objects.equals(fileKey(request.root()), rootFile);
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

  /** Releases the watch service and our thread, and gives the watch back to {@link Watches}. */
  public void close() {
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
    if (closed.compareAndSet(false, true)) {
      onClose.run();
    }
  }

  private static Object fileKey(Path p) {
    try {
      return Files.readAttributes(p, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS).fileKey();
    } catch (IOException e) {
      return null;
    }
  }

  static ObjectNode event(String type) {
    ObjectNode e = JsonNodeFactory.instance.objectNode();
    e.put("type", type);
    return e;
  }
}
