package dev.sandboxsdk.internal;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The temporary workspaces of local sandboxes and their ownership markers. Each workspace the SDK
 * creates ({@code sandbox-workspace-*} in {@code java.io.tmpdir}) gets a marker file next to it
 * ({@code sandbox-workspace-*.owner}) naming the JVM that owns it and, once started, its agent,
 * each by pid and start time. A workspace is stale when its marker says so and neither process is
 * alive any more (a pid reused by another process does not count: its start time differs).
 * Only directories with such a marker, owned by this OS user, are ever deleted: never a workspace
 * the caller supplied, never one whose owner or agent still runs, never one whose marker cannot
 * be read, and never one made on another machine, after a reboot or in another PID namespace (a
 * container sharing the temporary directory), where its pids mean nothing here. Not API.
 */
public final class Workspaces {
  private static final Logger log = LoggerFactory.getLogger("dev.sandboxsdk.local.LocalSandbox");
  static final String PREFIX = "sandbox-workspace-";
  static final String MARKER_SUFFIX = ".owner";
  /** Start times read twice for the same process agree to the millisecond; allow slack, never delete wrongly. */
  private static final long START_SLACK_MILLIS = 2_000;
  private static final AtomicBoolean BACKGROUND_RUNNING = new AtomicBoolean();
  /** This boot of this machine and this PID namespace: where the pids in a marker mean something. */
  private static final String WHERE = computeWhere();

  private Workspaces() {}

  /** Creates a new temporary workspace and its marker, owned by this JVM. */
  public static Path createOwned() throws IOException {
    Path ws = Files.createTempDirectory(PREFIX).toAbsolutePath();
    try {
      writeMarker(ws, null);
    } catch (IOException e) {
      deleteTree(ws);
      throw e;
    }
    return ws;
  }

  /** Adds the agent serving {@code workspace} to its marker, so the workspace counts as live while the agent runs. */
  public static void recordAgent(Path workspace, ProcessHandle agent) {
    try {
      writeMarker(workspace, agent);
    } catch (IOException e) {
      log.warn("could not record the agent in the ownership marker of {}: {}", workspace, e.toString());
    }
  }

  /** Deletes an owned workspace and then its marker. */
  public static void deleteOwned(Path workspace) {
    deleteTree(workspace);
    if (!Files.exists(workspace, LinkOption.NOFOLLOW_LINKS)) {
      deleteQuietly(marker(workspace));
    }
  }

  /**
   * Deletes the stale workspaces in {@code java.io.tmpdir} (see the class comment).
   *
   * @return the workspaces deleted
   */
  public static List<Path> cleanupStale() {
    Path tmp = Path.of(System.getProperty("java.io.tmpdir")).toAbsolutePath();
    List<Path> deleted = new ArrayList<>();
    String me = System.getProperty("user.name");
    try (DirectoryStream<Path> markers = Files.newDirectoryStream(tmp, PREFIX + "*" + MARKER_SUFFIX)) {
      for (Path marker : markers) {
        String name = marker.getFileName().toString();
        Path ws = tmp.resolve(name.substring(0, name.length() - MARKER_SUFFIX.length()));
        try {
          if (!Files.isRegularFile(marker, LinkOption.NOFOLLOW_LINKS)
              || !Files.getOwner(marker, LinkOption.NOFOLLOW_LINKS).getName().equals(me)
              || !isStale(Files.readString(marker, StandardCharsets.UTF_8))) {
            continue;
          }
          if (Files.exists(ws, LinkOption.NOFOLLOW_LINKS)) {
            if (!Files.isDirectory(ws, LinkOption.NOFOLLOW_LINKS)
                || !Files.getOwner(ws, LinkOption.NOFOLLOW_LINKS).getName().equals(me)) {
              continue;
            }
            deleteTree(ws);
            if (Files.exists(ws, LinkOption.NOFOLLOW_LINKS)) {
              continue; // keep the marker: the next cleanup tries again
            }
            deleted.add(ws);
            log.info("deleted the workspace {} of a local sandbox whose JVM and agent are gone", ws);
          }
          deleteQuietly(marker);
        } catch (NoSuchFileException gone) {
          // another cleanup got there first
        } catch (IOException | RuntimeException e) {
          log.debug("skipping the workspace marker {}: {}", marker, e.toString());
        }
      }
    } catch (IOException e) {
      log.debug("cannot list {} for stale workspaces: {}", tmp, e.toString());
    }
    return deleted;
  }

  /** Runs {@link #cleanupStale()} on a daemon thread unless one is running already. */
  public static void cleanupStaleInBackground() {
    if (!BACKGROUND_RUNNING.compareAndSet(false, true)) {
      return;
    }
    Thread t = new Thread(() -> {
      try {
        cleanupStale();
      } catch (RuntimeException e) {
        log.debug("stale workspace cleanup failed", e);
      } finally {
        BACKGROUND_RUNNING.set(false);
      }
    }, "sandbox-workspace-cleanup");
    t.setDaemon(true);
    t.start();
  }

  static Path marker(Path workspace) {
    return workspace.resolveSibling(workspace.getFileName() + MARKER_SUFFIX);
  }

  private static void writeMarker(Path ws, ProcessHandle agent) throws IOException {
    ProcessHandle me = ProcessHandle.current();
    StringBuilder s = new StringBuilder()
        .append("# ownership marker of the local sandbox workspace ").append(ws.getFileName())
        .append(": deleted as stale once both processes below are gone\n")
        .append("where=").append(WHERE).append('\n')
        .append("pid=").append(me.pid()).append('\n')
        .append("start=").append(startMillis(me)).append('\n');
    if (agent != null) {
      s.append("agentPid=").append(agent.pid()).append('\n')
          .append("agentStart=").append(startMillis(agent)).append('\n');
    }
    Path marker = marker(ws);
    Path tmp = marker.resolveSibling(marker.getFileName() + ".tmp");
    Files.writeString(tmp, s, StandardCharsets.UTF_8);
    Files.move(tmp, marker, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  /** Stale: the owner is named and gone, and the agent, if named, is gone too. Unreadable counts as live. */
  static boolean isStale(String marker) {
    Map<String, Long> v = new HashMap<>();
    String where = null;
    for (String line : marker.split("\n")) {
      int eq = line.indexOf('=');
      if (line.startsWith("#") || eq < 0) {
        continue;
      }
      if (line.startsWith("where=")) {
        where = line.substring(eq + 1).strip();
        continue;
      }
      try {
        v.put(line.substring(0, eq).strip(), Long.parseLong(line.substring(eq + 1).strip()));
      } catch (NumberFormatException e) {
        return false;
      }
    }
    Long pid = v.get("pid");
    if (!WHERE.equals(where) || pid == null || v.get("start") == null || isRunning(pid, v.get("start"))) {
      return false;
    }
    Long agentPid = v.get("agentPid");
    return agentPid == null || !isRunning(agentPid, v.getOrDefault("agentStart", 0L));
  }

  /** Whether the process {@code pid} started at {@code startMillis} runs; true when that cannot be told. */
  static boolean isRunning(long pid, long startMillis) {
    Optional<ProcessHandle> h = ProcessHandle.of(pid);
    if (h.isEmpty() || !h.get().isAlive() || isZombie(pid)) {
      return false;
    }
    Optional<Instant> start = h.get().info().startInstant();
    if (start.isEmpty() || startMillis <= 0) {
      return true;
    }
    return Math.abs(start.get().toEpochMilli() - startMillis) <= START_SLACK_MILLIS;
  }

  /**
   * A process that has exited but is not yet reaped (its parent died, and init reaps it a moment
   * later) still counts as alive for {@link ProcessHandle}; on Linux, /proc tells.
   */
  private static boolean isZombie(long pid) {
    try {
      String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"), StandardCharsets.UTF_8);
      int afterName = stat.lastIndexOf(')');
      if (afterName < 0 || afterName + 2 >= stat.length()) {
        return false;
      }
      char state = stat.charAt(afterName + 2);
      return state == 'Z' || state == 'X';
    } catch (IOException | RuntimeException e) {
      return false; // no /proc, or the process is gone: ProcessHandle's answer stands
    }
  }

  static String where() {
    return WHERE;
  }

  private static String computeWhere() {
    return read("/proc/sys/kernel/random/boot_id") + "/" + link("/proc/self/ns/pid");
  }

  private static String read(String file) {
    try {
      return Files.readString(Path.of(file), StandardCharsets.UTF_8).strip();
    } catch (IOException | RuntimeException e) {
      return "";
    }
  }

  private static String link(String file) {
    try {
      return Files.readSymbolicLink(Path.of(file)).toString();
    } catch (IOException | RuntimeException e) {
      return "";
    }
  }

  private static long startMillis(ProcessHandle h) {
    return h.info().startInstant().map(Instant::toEpochMilli).orElse(0L);
  }

  private static void deleteQuietly(Path p) {
    try {
      Files.deleteIfExists(p);
    } catch (IOException e) {
      log.debug("could not delete {}: {}", p, e.toString());
    }
  }

  /** Deletes a directory tree without following symbolic links; logs what it cannot delete. */
  public static void deleteTree(Path root) {
    if (!Files.exists(root, LinkOption.NOFOLLOW_LINKS)) {
      return;
    }
    try {
      Files.walkFileTree(root, new SimpleFileVisitor<>() {
        @Override
        public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
          Files.deleteIfExists(file);
          return FileVisitResult.CONTINUE;
        }

        @Override
        public FileVisitResult visitFileFailed(Path file, IOException e) throws IOException {
          if (e instanceof NoSuchFileException) {
            return FileVisitResult.CONTINUE; // deleted meanwhile, e.g. by a command still running
          }
          throw e;
        }

        @Override
        public FileVisitResult postVisitDirectory(Path dir, IOException e) throws IOException {
          Files.deleteIfExists(dir);
          return FileVisitResult.CONTINUE;
        }
      });
    } catch (IOException | UncheckedIOException e) {
      log.warn("could not delete the sandbox workspace {}: {}", root, e.toString());
    }
  }
}
