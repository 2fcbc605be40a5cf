package dev.sandboxsdk.agent.process;

import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.LinkOption;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;

/**
 * Named pipes that carry the stdout and stderr of spawned processes, in a private directory.
 *
 * <p>Why not the JDK's own pipes: when the direct child exits, the JDK's reaper drains and closes
 * the parent's end of its stdout/stderr pipes unless a reader happens to hold the stream's lock
 * at that moment. Output that a background child of the command writes later is then lost, and
 * the child dies of SIGPIPE (think {@code server &}). The agent owns the read end of a FIFO, so
 * it reads until the last writer, whoever it is, closes it.
 *
 * <p>A FIFO is reused once its reader has seen end of file (no writer is left). New ones are
 * made in batches with one {@code mkfifo} call. Thread-safe.
 *
 * <p>The directory is root's alone ({@code rwx------}), so nobody else can reach a FIFO by its
 * name. With a command user the FIFOs themselves are {@code rw----rw-}: a command that reopens
 * its own stdout or stderr by name ({@code echo x > /dev/stderr} goes through
 * {@code /proc/self/fd/2}, which skips the directory but not the FIFO's own mode) must be
 * allowed to, and the agent cannot give them to the user without CAP_CHOWN. Others still
 * cannot get at them: the directory bars the name, and {@code /proc/<pid>/fd} of a command is
 * open only to its own user.
 */
final class FifoPool implements AutoCloseable {
  private static final int BATCH = 64;

  private final Path dir;
  private final String mkfifo;
  private final String mode;
  private final boolean libc;
  private final ConcurrentLinkedQueue<Path> free = new ConcurrentLinkedQueue<>();
  private int created;

  private static final String PREFIX = "sandbox-agent-pipes-";

  FifoPool(String mkfifo) throws IOException {
    this(mkfifo, false);
  }

  /** @param forOtherUser whether commands run as another user (see the class comment) */
  FifoPool(String mkfifo, boolean forOtherUser) throws IOException {
    this(mkfifo, forOtherUser, false);
  }

  /**
   * @param libc whether {@link Libc} is loaded: FIFOs are then made with mkfifo(3) in the agent,
   *     without spawning mkfifo(1) (a spawn that, through the JDK, closes every descriptor the
   *     agent holds one by one)
   */
  FifoPool(String mkfifo, boolean forOtherUser, boolean libc) throws IOException {
    this.libc = libc;
    this.mkfifo = mkfifo;
    this.mode = forOtherUser ? "606" : "600";
    removeLeftoversOfDeadAgents();
    // The pid in the name lets a later agent remove this directory if we die without cleaning up.
    this.dir = Files.createTempDirectory(PREFIX + ProcessHandle.current().pid() + "-",
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    grow();
  }

  /** Deletes pipe directories of agents that were killed before they could remove them. */
  private static void removeLeftoversOfDeadAgents() {
    Path tmp = Path.of(System.getProperty("java.io.tmpdir"));
    try (DirectoryStream<Path> dirs = Files.newDirectoryStream(tmp, PREFIX + "*")) {
      for (Path d : dirs) {
        String rest = d.getFileName().toString().substring(PREFIX.length());
        int dash = rest.indexOf('-');
        if (dash <= 0) {
          continue;
        }
        try {
          long pid = Long.parseLong(rest.substring(0, dash));
          if (ProcessHandle.of(pid).isEmpty() && Files.isDirectory(d, LinkOption.NOFOLLOW_LINKS)) {
            deleteTree(d);
          }
        } catch (NumberFormatException ignored) {
          // not one of ours
        }
      }
    } catch (IOException ignored) {
      // tidying up is best effort
    }
  }

  private static void deleteTree(Path root) {
    Trees.deleteQuietly(root); // best effort
  }

  Path take() {
    while (true) {
      Path p = free.poll();
      if (p == null) {
        grow();
      } else if (isFifo(p)) {
        return p;
      }
      // Gone: a command cleaned the temp directory (rm -rf /tmp/*). Drop it; grow() remakes the
      // directory when the queue runs dry.
    }
  }

  private static boolean isFifo(Path p) {
    try {
      return Files.readAttributes(p, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS).isOther();
    } catch (IOException e) {
      return false;
    }
  }

  /** Removes a FIFO that must not be reused; those who hold it open keep it. */
  void discard(Path fifo) {
    try {
      Files.deleteIfExists(fifo);
    } catch (IOException ignored) {
      // the directory goes on close anyway
    }
  }

  /** Returns a FIFO whose reader saw end of file, so nothing holds it any more. */
  void give(Path fifo) {
    free.add(fifo);
  }

  private static String firstLine(String s) {
    String t = s.strip();
    int nl = t.indexOf('\n');
    return nl < 0 ? t : t.substring(0, nl);
  }

  private synchronized void grow() {
    if (!free.isEmpty()) {
      return;
    }
    try {
      Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    } catch (IOException e) {
      throw new AgentException(ErrorCode.INTERNAL_ERROR, "the agent cannot recreate its pipe directory " + dir
          + " for command output: " + e.getMessage() + " (is its temporary directory full?)");
    }
    List<String> cmd = new ArrayList<>(List.of(mkfifo, "-m", mode));
    List<Path> batch = new ArrayList<>();
    for (int i = 0; i < BATCH; i++) {
      Path p = dir.resolve("p" + (created++));
      batch.add(p);
      cmd.add(p.toString());
    }
    if (libc && makeInProcess(batch)) {
      free.addAll(batch);
      return;
    }
    try {
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes());
      if (!p.waitFor(10, TimeUnit.SECONDS) || p.exitValue() != 0) {
        // A full disk shows here (no inode for a FIFO). Use those that were made; with none, say
        // why instead of a bare internal error. The caller's process is not started; the next
        // call tries again.
        for (Path made : batch) {
          if (isFifo(made)) {
            free.add(made);
          }
        }
        if (!free.isEmpty()) {
          return;
        }
        throw new AgentException(ErrorCode.INTERNAL_ERROR, "the agent cannot make the pipes for command output in "
            + dir + ": mkfifo failed: " + firstLine(out) + " (is its temporary directory full?)");
      }
    } catch (IOException e) {
      throw new IllegalStateException("cannot run mkfifo: " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while making pipes", e);
    }
    free.addAll(batch);
  }

  /**
   * Makes the FIFOs with mkfifo(3) and sets their mode (the umask applies to mkfifo); false if
   * one failed, and mkfifo(1) then makes the batch and words any error.
   */
  private boolean makeInProcess(List<Path> batch) {
    try {
      for (Path p : batch) {
        if (Libc.mkfifo(p.toString(), 0600) != 0) {
          batch.forEach(this::discard);
          return false;
        }
        Files.setPosixFilePermissions(p, PosixFilePermissions.fromString(mode.equals("606") ? "rw----rw-" : "rw-------"));
      }
      return true;
    } catch (IOException | RuntimeException e) {
      batch.forEach(this::discard); // a clean slate for mkfifo(1), which stops at a name that exists
      return false;
    }
  }

  @Override
  public void close() {
    deleteTree(dir);
  }
}
