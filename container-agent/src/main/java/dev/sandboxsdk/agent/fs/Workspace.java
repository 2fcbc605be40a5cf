package dev.sandboxsdk.agent.fs;

import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.process.CommandUser;
import dev.sandboxsdk.agent.process.FileIdentity;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;

/**
 * The workspace as the agent's file routes see it: a directory descriptor opened once at start, and
 * every caller's path resolved from it one component at a time ({@code openat} with {@code
 * O_NOFOLLOW}), never by walking a path string again. A symbolic link met on the way is read and
 * followed by this class, only while it stays inside the workspace; a link to anywhere else, or a
 * {@code ..} above the workspace, is refused without looking at what lies there. So no concurrent
 * rename, swap or link a command makes can move an operation outside the workspace.
 *
 * <p>With a command user, {@link #asUser} runs a route's file work with that user's file system
 * identity on the calling thread (fsuid, fsgid, no supplementary groups): a second wall, so even a
 * flaw in resolution cannot reach what commands cannot (the agent's {@code /proc/self}, root's files),
 * and what the routes create belongs to the user.
 *
 * <p>Thread-safe: the root descriptor is shared and never changes; each resolution has its own.
 */
public final class Workspace {
  /** Links followed in one resolution before it fails as a loop (the kernel's own limit). */
  static final int MAX_LINKS = 40;
  private static final int DIR_FLAGS = FsCalls.O_PATH | FsCalls.O_NOFOLLOW | FsCalls.O_DIRECTORY | FsCalls.O_CLOEXEC;

  private final Path configured;
  private final Path root;
  private final int rootFd;
  private final CommandUser user;

  private Workspace(Path configured, Path root, int rootFd, CommandUser user) {
    this.configured = configured;
    this.root = root;
    this.rootFd = rootFd;
    this.user = user;
  }

  /**
   * Opens the workspace's descriptor.
   *
   * @param user the command user whose identity file work takes, or null to keep the agent's
   */
  public static Workspace open(Path workspace, CommandUser user) {
    if (FsCalls.unavailable() != null) {
      throw new IllegalStateException(FsCalls.unavailable());
    }
    Path configured = workspace.toAbsolutePath().normalize();
    Path real;
    try {
      real = configured.toRealPath();
    } catch (IOException e) {
      throw new UncheckedIOException("the workspace " + configured + " is not accessible", e);
    }
    int fd = FsCalls.openat(-100 /* AT_FDCWD */, real.toString(), FsCalls.O_PATH | FsCalls.O_DIRECTORY
        | FsCalls.O_CLOEXEC, 0);
    if (fd < 0) {
      throw new IllegalStateException("cannot open the workspace " + real + ": errno " + FsCalls.errno());
    }
    return new Workspace(configured, real, fd, user);
  }

  /** The workspace's real path. */
  public Path root() {
    return root;
  }

  /** Runs {@code action} with the command user's file system identity on this thread, if there is one. */
  public <T> T asUser(FileIdentity.Work<T> work) throws IOException {
    return user == null ? work.run() : FileIdentity.as(user.uid(), user.gid(), work);
  }

  /**
   * Resolves a caller's path.
   *
   * @param field the request field that holds it, named in errors
   * @param follow whether a link in the final component is followed (inside the workspace only)
   * @param createDirectories whether missing directories on the way are made (like {@code mkdir -p})
   */
  public Anchor resolve(String field, String raw, boolean follow, boolean createDirectories) {
    List<String> names = relative(field, raw);
    return new Walk(field, raw, follow, createDirectories).run(names);
  }

  /** The caller's path as names relative to the workspace, normalized; refused when it leaves it. */
  public List<String> relative(String field, String raw) {
    if (raw == null) {
      throw AgentException.invalid(field, "'" + field + "' is required");
    }
    if (raw.isEmpty()) {
      throw AgentException.invalid(field, "'" + field + "' is empty");
    }
    if (raw.indexOf('\0') >= 0) {
      throw AgentException.invalid(field, "'" + field + "' contains a NUL character");
    }
    Path given;
    try {
      given = Path.of(raw);
    } catch (InvalidPathException e) {
      throw AgentException.invalid(field, "'" + field + "' is not a valid path: " + e.getReason());
    }
    List<String> names = inside(given.isAbsolute() ? given.normalize() : root.resolve(given).normalize());
    if (names == null) {
      throw refused(field, raw, "it is outside the workspace " + root);
    }
    return names;
  }

  /** The names of an absolute, normalized path below the workspace (named by its real or configured path), or null. */
  private List<String> inside(Path p) {
    Path base = p.startsWith(root) ? root : p.startsWith(configured) ? configured : null;
    if (base == null) {
      return null;
    }
    List<String> names = new ArrayList<>();
    for (Path n : base.relativize(p)) {
      if (!n.toString().isEmpty()) {
        names.add(n.toString());
      }
    }
    return names;
  }

  static AgentException refused(String field, String raw, String why) {
    return new AgentException(ErrorCode.PERMISSION_DENIED, "path '" + PathErrors.shorten(raw) + "' is not allowed: "
        + why, Map.of("field", field, "path", PathErrors.shorten(raw)));
  }

  /** One resolution: the descriptors of the directories walked so far, and their names. */
  private final class Walk {
    private final String field;
    private final String raw;
    private final boolean follow;
    private final boolean create;
    private final Deque<Integer> fds = new ArrayDeque<>();
    private final Deque<String> walked = new ArrayDeque<>();
    private int links;
    private int made;

    Walk(String field, String raw, boolean follow, boolean create) {
      this.field = field;
      this.raw = raw;
      this.follow = follow;
      this.create = create;
    }

    Anchor run(List<String> names) {
      Deque<String> todo = new ArrayDeque<>(names);
      try {
        while (!todo.isEmpty()) {
          String name = todo.removeFirst();
          if (name.isEmpty() || name.equals(".")) {
            continue;
          }
          if (name.equals("..")) { // only from a link's target: the caller's own path was normalized
            if (fds.isEmpty()) {
              throw refused(field, raw, "a symbolic link in it leads outside the workspace");
            }
            FsCalls.close(fds.pop());
            walked.removeLast();
            continue;
          }
          Anchor done = step(name, todo);
          if (done != null) {
            return done;
          }
        }
        // The path is a directory itself (the workspace, or where links led): hold that one.
        boolean top = fds.isEmpty();
        int fd = top ? rootFd : fds.pop();
        return new Anchor(fd, !top, null, logical(null), top);
      } finally {
        while (!fds.isEmpty()) {
          FsCalls.close(fds.pop());
        }
      }
    }

    /** Takes one name; an anchor when the walk ends at it, else null (the walk goes on). */
    private Anchor step(String name, Deque<String> todo) {
      int dir = fds.isEmpty() ? rootFd : fds.peek();
      boolean last = todo.isEmpty();
      if (last && !follow) {
        return anchorAt(name);
      }
      int fd = FsCalls.openat(dir, name, DIR_FLAGS, 0);
      if (fd >= 0) {
        fds.push(fd);
        walked.addLast(name);
        return null;
      }
      int err = FsCalls.errno();
      if (err == FsCalls.ENOTDIR || err == FsCalls.ELOOP) {
        String target = readLink(dir, name);
        if (target != null) {
          followLink(target, todo);
          return null;
        }
        if (last) {
          return anchorAt(name); // a file
        }
        throw new AgentException(ErrorCode.NOT_DIRECTORY, "'" + PathErrors.shorten(raw) + "': '" + name
            + "' on the way is not a directory", Map.of("field", field, "path", PathErrors.shorten(raw)));
      }
      if (err == FsCalls.ENOENT) {
        if (last) {
          return anchorAt(name); // missing: the operation reports it or makes it
        }
        if (create && ++made <= MAX_LINKS + 4096) { // a command deleting each one as it is made cannot spin this forever
          makeDirectory(dir, name);
          todo.addFirst(name);
          return null;
        }
        throw new AgentException(ErrorCode.FILE_NOT_FOUND, "file not found: " + PathErrors.shorten(raw)
            + " (a directory on the way does not exist)", Map.of("field", field, "path", PathErrors.shorten(raw)));
      }
      throw PathErrors.failure(new FileSystemException(raw, null, strerror(err)), field, raw);
    }

    private void followLink(String target, Deque<String> todo) {
      if (++links > MAX_LINKS) {
        throw new AgentException(ErrorCode.TOO_MANY_LINKS, "too many levels of symbolic links: "
            + PathErrors.shorten(raw), Map.of("field", field, "path", PathErrors.shorten(raw)));
      }
      List<String> next;
      if (target.startsWith("/")) {
        Path t;
        try {
          t = Path.of(target).normalize();
        } catch (InvalidPathException e) {
          t = null;
        }
        next = t == null ? null : inside(t);
        if (next == null) {
          throw refused(field, raw, "a symbolic link in it leads outside the workspace");
        }
        while (!fds.isEmpty()) { // from the top again
          FsCalls.close(fds.pop());
        }
        walked.clear();
      } else {
        next = List.of(target.split("/"));
      }
      for (int i = next.size() - 1; i >= 0; i--) {
        todo.addFirst(next.get(i));
      }
    }

    private Anchor anchorAt(String name) {
      boolean top = fds.isEmpty();
      int fd = top ? rootFd : fds.pop();
      return new Anchor(fd, !top, name, logical(name), false);
    }

    private Path logical(String name) {
      Path p = root;
      for (String w : walked) {
        p = p.resolve(w);
      }
      return name == null ? p : p.resolve(name);
    }

    private void makeDirectory(int dir, String name) {
      try {
        Files.createDirectory(Path.of("/proc/self/fd/" + dir).resolve(name));
      } catch (FileAlreadyExistsException e) {
        // made meanwhile; the walk opens it (or finds it is not a directory)
      } catch (IOException e) {
        throw PathErrors.failure(e, field, raw);
      }
    }
  }

  /** The link's target, or null when {@code name} is not a link. */
  private static String readLink(int dir, String name) {
    byte[] buf = new byte[4097];
    long n = FsCalls.readlinkat(dir, name, buf, buf.length);
    if (n < 0 || n >= buf.length) {
      return null;
    }
    return new String(buf, 0, (int) n, StandardCharsets.UTF_8);
  }

  static String strerror(int errno) {
    switch (errno) {
      case FsCalls.ENOENT: return "No such file or directory";
      case FsCalls.EACCES: return "Permission denied";
      case FsCalls.ENOTDIR: return "Not a directory";
      case FsCalls.ENAMETOOLONG: return "File name too long";
      case FsCalls.ELOOP: return "Too many levels of symbolic links";
      default: return "errno " + errno;
    }
  }
}
