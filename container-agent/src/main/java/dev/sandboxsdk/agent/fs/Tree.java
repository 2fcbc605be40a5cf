package dev.sandboxsdk.agent.fs;

import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SecureDirectoryStream;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFileAttributes;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * Walks below an {@link Anchor} with the JDK's {@link SecureDirectoryStream}: every directory is
 * opened relative to its parent's descriptor with {@code O_NOFOLLOW}, every entry is examined, and
 * removed, relative to its directory's ({@code fstatat}, {@code unlinkat}), so a command swapping a
 * directory for a link meanwhile cannot lead the walk out. Iterative, with a depth cap: a tree a
 * command made thousands of levels deep costs neither the stack nor a descriptor per level beyond
 * the cap.
 */
public final class Tree {
  /** How deep a listing or a recursive delete goes; deeper trees are refused with this figure. */
  public static final int MAX_DEPTH = 512;
  /**
   * Directory descriptors all walks of the agent may hold at once (each level of each walk holds
   * one): many deep walks at once wait for each other instead of taking the agent's descriptors.
   */
  static final int MAX_OPEN = 1024;
  /** How long a walk waits for a descriptor of the budget before it answers 503. */
  private static final long WAIT_MS = 10_000;
  private static final Semaphore DESCRIPTORS = new Semaphore(MAX_OPEN);

  private Tree() {}

  /** One entry of a listing: its path relative to the listed directory, and what lstat says. */
  public record Entry(String relativePath, String name, PosixFileAttributes attributes) {
  }

  /** Receives entries; answers false to stop the walk (the listing is full). */
  @FunctionalInterface
  public interface Visitor {
    boolean visit(Entry entry);
  }

  /**
   * Lists the directory the anchor holds: names sorted, pre-order, links not followed, hidden
   * entries (and what is in them) skipped unless asked.
   *
   * @return whether the visitor stopped the walk
   */
  public static boolean list(Anchor dir, boolean recursive, boolean hidden, String field, String raw, Visitor visitor)
      throws IOException {
    Deque<Frame> stack = new ArrayDeque<>();
    try {
      stack.push(new Frame(open(dir.path()), "", hidden));
      while (!stack.isEmpty()) {
        Frame f = stack.peek();
        if (f.next >= f.names.size()) {
          stack.pop().close();
          continue;
        }
        String name = f.names.get(f.next++);
        PosixFileAttributes a;
        try {
          a = attributes(f.stream, name);
        } catch (NoSuchFileException e) {
          continue; // deleted meanwhile
        }
        String relative = f.prefix + name;
        if (!visitor.visit(new Entry(relative, name, a))) {
          return true;
        }
        if (recursive && a.isDirectory()) {
          if (stack.size() >= MAX_DEPTH) {
            throw tooDeep(field, raw, "listed");
          }
          SecureDirectoryStream<Path> child = openChild(f.stream, name);
          if (child != null) {
            stack.push(new Frame(child, relative + "/", hidden));
          }
        }
      }
      return false;
    } finally {
      closeAll(stack);
    }
  }

  /** Deletes the anchor's entry, a directory, with everything in it. */
  public static void delete(Anchor entry, String field, String raw) throws IOException {
    Deque<Frame> stack = new ArrayDeque<>();
    try (SecureDirectoryStream<Path> parent = open(entry.directory())) {
      SecureDirectoryStream<Path> top = parent.newDirectoryStream(Path.of(entry.name()), LinkOption.NOFOLLOW_LINKS);
      stack.push(new Frame(top, entry.name(), true));
      while (!stack.isEmpty()) {
        Frame f = stack.peek();
        if (f.next >= f.names.size()) {
          stack.pop().close();
          (stack.isEmpty() ? parent : stack.peek().stream).deleteDirectory(Path.of(f.prefix));
          continue;
        }
        String name = f.names.get(f.next++);
        PosixFileAttributes a;
        try {
          a = attributes(f.stream, name);
        } catch (NoSuchFileException e) {
          continue;
        }
        if (a.isDirectory()) {
          if (stack.size() >= MAX_DEPTH) {
            throw tooDeep(field, raw, "deleted");
          }
          SecureDirectoryStream<Path> child = openChild(f.stream, name);
          if (child != null) {
            stack.push(new Frame(child, name, true));
          }
        } else {
          try {
            f.stream.deleteFile(Path.of(name));
          } catch (NoSuchFileException e) {
            // gone meanwhile
          }
        }
      }
    } finally {
      closeAll(stack);
    }
  }

  private static PosixFileAttributes attributes(SecureDirectoryStream<Path> dir, String name) throws IOException {
    return dir.getFileAttributeView(Path.of(name), PosixFileAttributeView.class, LinkOption.NOFOLLOW_LINKS)
        .readAttributes();
  }

  /** The child directory, or null when it went (or became something else) since it was examined. */
  private static SecureDirectoryStream<Path> openChild(SecureDirectoryStream<Path> dir, String name) throws IOException {
    try {
      return dir.newDirectoryStream(Path.of(name), LinkOption.NOFOLLOW_LINKS);
    } catch (NoSuchFileException e) {
      return null;
    } catch (IOException e) {
      String reason = e.getMessage() == null ? "" : e.getMessage();
      if (reason.contains("Not a directory") || reason.contains("Too many levels of symbolic links")) {
        return null; // swapped for a file or a link meanwhile: not followed
      }
      throw e;
    }
  }

  /** A directory reached through a descriptor's {@code /proc/self/fd} path (the only link followed). */
  static SecureDirectoryStream<Path> open(Path dir) throws IOException {
    DirectoryStream<Path> s = Files.newDirectoryStream(dir);
    if (!(s instanceof SecureDirectoryStream)) {
      s.close();
      throw new IllegalStateException("this platform has no SecureDirectoryStream");
    }
    return (SecureDirectoryStream<Path>) s;
  }

  private static AgentException tooDeep(String field, String raw, String verb) {
    return new AgentException(ErrorCode.PAYLOAD_TOO_LARGE, "'" + PathErrors.shorten(raw) + "' is more than " + MAX_DEPTH
        + " directories deep, more than one request walks; the tree cannot be " + verb + " at once (work on a"
        + " directory deeper inside it first)", Map.of("field", field, "path", PathErrors.shorten(raw),
        "maxDepth", MAX_DEPTH));
  }

  private static void closeAll(Deque<Frame> stack) {
    while (!stack.isEmpty()) {
      try {
        stack.pop().close();
      } catch (IOException e) {
        // closing a directory stream does not fail in a way worth reporting
      }
    }
  }

  /** One open directory of the walk, its names read and sorted up front. */
  private static final class Frame {
    final SecureDirectoryStream<Path> stream;
    final String prefix;
    final List<String> names = new ArrayList<>();
    int next;

    Frame(SecureDirectoryStream<Path> stream, String prefix, boolean hidden) throws IOException {
      this.stream = stream;
      this.prefix = prefix;
      try {
        if (!DESCRIPTORS.tryAcquire(WAIT_MS, TimeUnit.MILLISECONDS)) {
          stream.close();
          throw new AgentException(ErrorCode.OUTPUT_BUDGET_EXHAUSTED, "the agent's directory walks hold all "
              + MAX_OPEN + " descriptors they may; retry later", Map.of("limit", MAX_OPEN));
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        stream.close();
        throw new AgentException(ErrorCode.INTERNAL_ERROR, "interrupted");
      }
      try {
        for (Path c : stream) {
          String n = c.getFileName().toString();
          if (hidden || !n.startsWith(".")) {
            names.add(n);
          }
        }
      } catch (RuntimeException e) { // DirectoryIteratorException
        close();
        if (e.getCause() instanceof IOException) {
          throw (IOException) e.getCause();
        }
        throw e;
      }
      names.sort(null);
    }

    void close() throws IOException {
      try {
        stream.close();
      } finally {
        DESCRIPTORS.release();
      }
    }
  }
}
