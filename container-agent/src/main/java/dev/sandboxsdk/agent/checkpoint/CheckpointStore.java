package dev.sandboxsdk.agent.checkpoint;

import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.agent.AgentConfig;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.checkpoint.Commands.Outcome;
import dev.sandboxsdk.agent.fs.PathErrors;
import dev.sandboxsdk.agent.process.CommandUser;
import dev.sandboxsdk.agent.process.ProcessManager;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Checkpoints of the whole workspace, kept as tar archives in the agent's checkpoint directory
 * (outside the workspace, mode 0700, the agent's own); the routes of {@code /api/checkpoints} use it.
 *
 * <p>GNU tar does the archiving, started with an argument vector (never a shell) as the command
 * user when there is one: in a container the agent is root without CAP_DAC_OVERRIDE or CAP_CHOWN,
 * so it could neither read every file of the user nor give restored files back to the user, while
 * tar as the user reads what the user can read and restores files the user owns and can write.
 * tar's output goes straight to a temporary file that the agent opened (so the user's tar can
 * write it without being able to open the directory), and a restore's tar reads the archive from
 * a descriptor the agent opened: the archive never passes through the agent's heap. The temporary
 * file becomes the checkpoint (rename) only when tar succeeded and the bytes are on disk.
 *
 * <p>One create, restore or delete runs at a time (others get 409 CHECKPOINT_BUSY); listing
 * reads the directory at any time. A restore refuses while processes run unless forced, which
 * kills them first, and no command may start until it is done.
 */
public final class CheckpointStore {
  private static final Logger log = LoggerFactory.getLogger(CheckpointStore.class);
  static final Pattern NAME = Pattern.compile("[A-Za-z0-9._-]{1,64}");
  static final Pattern ID = Pattern.compile("ckpt_[0-9a-f]{16}");
  private static final String ARCHIVE = ".tar";
  private static final String META = ".json";
  private static final String TEMP_PREFIX = ".tmp-";
  private static final SecureRandom RANDOM = new SecureRandom();
  /** Metadata is read as strictly as request bodies are (the HTTP package's Json.MAPPER). */
  private static final ObjectMapper MAPPER = JsonMapper.builder()
      .enable(DeserializationFeature.FAIL_ON_READING_DUP_TREE_KEY)
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
      .build();

  static {
    MAPPER.getFactory().setStreamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(64).build());
  }

  private final ProcessManager processes;
  private final CommandUser user;
  private final Commands commands;
  private final Path workspace;
  private final Path dir;
  private final boolean temporary;
  /** Why checkpoints cannot be kept (the directory cannot be made), or null. */
  private final String unavailable;
  private final ReentrantLock busy = new ReentrantLock();
  private volatile String busyWith = "";

  public CheckpointStore(ProcessManager processes) {
    this.processes = processes;
    AgentConfig config = processes.config();
    this.user = processes.commandUser();
    this.commands = new Commands(user);
    this.workspace = config.workspace();
    this.temporary = config.checkpointDir() == null;
    Path d = config.checkpointDir();
    String why = null;
    try {
      if (d == null) {
        d = Files.createTempDirectory("sandbox-agent-checkpoints-",
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
      } else {
        Files.createDirectories(d);
        Files.setPosixFilePermissions(d, PosixFilePermissions.fromString("rwx------"));
        removeLeftovers(d);
      }
    } catch (IOException | UnsupportedOperationException e) {
      why = "the checkpoint directory " + d + " cannot be used: " + e;
      log.warn("{}; checkpoints are unavailable", why);
    }
    this.dir = d;
    this.unavailable = why;
  }

  /** A restored checkpoint and how many processes were killed for it. */
  public record Restored(Checkpoint checkpoint, int killedProcesses) {
  }

  // ---- operations -----------------------------------------------------------------------------

  /** Makes a checkpoint named {@code name} (validated here) of the workspace as it is now. */
  public Checkpoint create(String name) throws IOException {
    if (name == null || !NAME.matcher(name).matches()) {
      throw AgentException.invalid("name", "'name' must be 1 to 64 of the characters A-Z a-z 0-9 . _ -");
    }
    requireAvailable();
    lock("creating checkpoint '" + name + "'");
    try {
      return createLocked(name);
    } finally {
      unlock();
    }
  }

  /** Every checkpoint, oldest first; none when checkpoints are unavailable. */
  public List<Checkpoint> list() throws IOException {
    return unavailable == null ? all() : List.of();
  }

  /** Replaces the workspace with checkpoint {@code id}; with {@code force}, kills running processes first. */
  public Restored restore(String id, boolean force) throws IOException {
    checkId(id);
    requireAvailable();
    int killed = 0;
    Checkpoint c;
    // No command may start from here on: one that did would see the workspace being replaced.
    lock("restoring checkpoint " + id, () -> processes.pauseSpawns("checkpoint " + id + " is being restored"));
    try {
      try {
        c = find(id);
        int running = processes.runningCount();
        if (running > 0 && !force) {
          throw new AgentException(ErrorCode.PROCESSES_RUNNING, running + " process(es) are running; a restore"
              + " would change files under them. Kill them first (kill-all, and end running execs), or restore with"
              + " force, which kills them", Map.of("running", running, "checkpointId", id));
        }
        if (force) {
          killed = processes.killEverything();
          running = processes.runningCount();
          if (running > 0) {
            throw new AgentException(ErrorCode.PROCESSES_RUNNING, running + " process(es) still run after they were"
                + " killed; try again", Map.of("running", running, "checkpointId", id));
          }
        }
        long t0 = System.nanoTime();
        restoreLocked(c);
        log.info("checkpoint {} ('{}', {} bytes) restored in {} ms{}", c.id(), c.name(), c.sizeBytes(),
            (System.nanoTime() - t0) / 1_000_000, killed > 0 ? " after killing " + killed + " process(es)" : "");
      } finally {
        processes.resumeSpawns();
      }
    } finally {
      unlock();
    }
    return new Restored(c, killed);
  }

  /** Deletes checkpoint {@code id}; answers what it was. */
  public Checkpoint delete(String id) throws IOException {
    checkId(id);
    requireAvailable();
    lock("deleting checkpoint " + id);
    Checkpoint c;
    try {
      c = find(id);
      // The metadata first: without it the archive is no checkpoint, and a start removes it.
      Files.deleteIfExists(dir.resolve(id + META));
      Files.deleteIfExists(dir.resolve(id + ARCHIVE));
    } finally {
      unlock();
    }
    return c;
  }

  /** Deletes the temporary checkpoint directory; a given one stays with its checkpoints. */
  public void close() {
    if (temporary && unavailable == null) {
      try {
        deleteTree(dir);
      } catch (IOException | UncheckedIOException e) {
        log.warn("cannot remove the temporary checkpoint directory {}: {}", dir, e.toString());
      }
    }
  }

  // ---- create -------------------------------------------------------------------------------

  private Checkpoint createLocked(String name) throws IOException {
    String id = "ckpt_" + HexFormat.of().formatHex(randomBytes(8));
    Instant createdAt = Instant.now();
    Path temp = dir.resolve(TEMP_PREFIX + id + ARCHIVE);
    Path metaTemp = dir.resolve(TEMP_PREFIX + id + META);
    boolean done = false;
    long t0 = System.nanoTime();
    try {
      Files.createFile(temp, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
      // --numeric-owner: ids, not names (the sandbox has its own /etc/passwd); --sparse keeps holes
      // as holes; "." with -C: every name, including ones with newlines or a leading '-', comes from
      // tar's own directory walk, never from an argument.
      List<String> argv = List.of("tar", "--create", "--file=-", "--format=gnu", "--numeric-owner", "--sparse",
          "--directory=" + workspace, ".");
      Outcome o = commands.run(argv, null, temp.toFile());
      // 1: "file changed as we read it" (a command wrote meanwhile); the archive is complete.
      if (o.exit() != 0 && o.exit() != 1) {
        throw Commands.tarFailure("checkpoint", o, "nothing was kept");
      }
      if (o.exit() == 1) {
        log.info("checkpoint '{}': files changed while they were archived: {}", name, o.stderr().trim());
      }
      try (FileChannel ch = FileChannel.open(temp, StandardOpenOption.WRITE)) {
        ch.force(true);
      }
      long size = Files.size(temp);
      Checkpoint c = new Checkpoint(id, name, size, createdAt);
      ObjectNode meta = c.toJson();
      meta.put("format", "gnu-tar");
      meta.put("workspace", workspace.toString());
      try (FileChannel ch = FileChannel.open(metaTemp, Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE),
          PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")))) {
        ch.write(ByteBuffer.wrap(MAPPER.writeValueAsBytes(meta)));
        ch.force(true);
      }
      // The archive under its name first, then the metadata that makes it a checkpoint.
      Files.move(temp, dir.resolve(id + ARCHIVE), StandardCopyOption.ATOMIC_MOVE);
      Files.move(metaTemp, dir.resolve(id + META), StandardCopyOption.ATOMIC_MOVE);
      syncDirectory();
      done = true;
      log.info("checkpoint {} ('{}') of {} bytes made in {} ms", id, name, size, (System.nanoTime() - t0) / 1_000_000);
      return c;
    } catch (IOException e) {
      throw ioFailure(e, "checkpoint '" + name + "'");
    } finally {
      if (!done) {
        Files.deleteIfExists(temp);
        Files.deleteIfExists(metaTemp);
        Files.deleteIfExists(dir.resolve(id + ARCHIVE));
      }
    }
  }

  // ---- restore ------------------------------------------------------------------------------

  private void restoreLocked(Checkpoint c) throws IOException {
    Path archive = dir.resolve(c.id() + ARCHIVE);
    if (!Files.isRegularFile(archive, LinkOption.NOFOLLOW_LINKS)) {
      throw notFound(c.id());
    }
    emptyWorkspace(c.id());
    // --preserve-permissions: modes as recorded, not filtered by a umask. As root (an agent
    // without --command-user run by root) tar also gives files their recorded owners.
    // --record-size=1M: tar writes a file's data in pieces of its record size less the header, and
    // with the default 10 KiB such writes, none aligned to a page, extracting 1 GiB took 3 to 20
    // times as long on ext4 as with 1 MiB ones (docs/performance-history.md, "Checkpoints").
    // --read-full-records: reading in bigger records than the archive was written with is safe.
    List<String> argv = new ArrayList<>(List.of("tar", "--extract", "--file=-", "--record-size=1M", "--read-full-records",
        "--numeric-owner", "--preserve-permissions", "--directory=" + workspace));
    if (user != null && !ownedByUser(workspace)) {
      // A workspace the user does not own (a pod's emptyDir is root's, mode 0777) keeps its own
      // mode and times: the user may not change them, so the archive's "./" is skipped (only that
      // entry: --no-recursion stops the pattern from matching as a leading directory of the rest).
      argv.addAll(List.of("--no-recursion", "--anchored", "--exclude=."));
    }
    Outcome o = commands.run(argv, archive.toFile(), null);
    if (o.exit() != 0) {
      throw Commands.tarFailure("restore of " + c.id(), o, "the workspace holds part of the checkpoint; restore again");
    }
  }

  private boolean ownedByUser(Path p) {
    try {
      return ((Number) Files.getAttribute(p, "unix:uid", LinkOption.NOFOLLOW_LINKS)).longValue() == user.uid();
    } catch (IOException | UnsupportedOperationException e) {
      return true; // as before: tar says what it could not do
    }
  }

  /**
   * Removes everything inside the workspace (not the workspace itself, which may be a mount
   * point), as the user that owns it. A directory without write permission is opened up first
   * (the user may; it is going away anyway).
   */
  private void emptyWorkspace(String id) {
    List<String> remove = List.of("find", workspace.toString(), "-mindepth", "1", "-maxdepth", "1",
        "-exec", "rm", "-rf", "--", "{}", "+");
    Outcome o = commands.run(remove, null, null);
    if (o.exit() != 0) {
      // Directories the user made read-only (0555) or unreadable (0000): give them u+rwx, then again.
      commands.run(List.of("chmod", "-R", "u+rwx", "--", workspace.toString()), null, null);
      o = commands.run(remove, null, null);
      if (o.exit() != 0) {
        throw new AgentException(ErrorCode.FILESYSTEM_ERROR, "restore of " + id + ": cannot empty the workspace: "
            + Commands.abbreviate(o.stderr().trim()) + "; the workspace may be partly emptied; restore again",
            Map.of("checkpointId", id));
      }
    }
  }

  // ---- helpers --------------------------------------------------------------------------------

  private static AgentException ioFailure(IOException e, String what) {
    String reason = String.valueOf(e.getMessage());
    if (reason.contains("No space left") || reason.contains("quota exceeded")) {
      return new AgentException(ErrorCode.NO_SPACE, what + " failed: no space left on the device (or quota exceeded)"
          + " for the checkpoint directory; nothing was kept. Free space (delete checkpoints) and try again");
    }
    if (e instanceof FileAlreadyExistsException) {
      return new AgentException(ErrorCode.INTERNAL_ERROR, what + " failed: the checkpoint id is taken; try again");
    }
    return new AgentException(ErrorCode.FILESYSTEM_ERROR, what + " failed: " + e);
  }

  private void requireAvailable() {
    if (unavailable != null) {
      throw new AgentException(ErrorCode.FILESYSTEM_ERROR, "checkpoints are unavailable: " + unavailable
          + " (mount a writable volume there, or start the agent with --checkpoint-dir pointing at a writable"
          + " directory outside the workspace)");
    }
  }

  private void lock(String what) {
    lock(what, () -> { });
  }

  /** Takes the lock or throws CHECKPOINT_BUSY; {@code first} runs before others can see {@code what}. */
  private void lock(String what, Runnable first) {
    if (!busy.tryLock()) {
      String current = busyWith;
      throw new AgentException(ErrorCode.CHECKPOINT_BUSY, "another checkpoint operation is in progress"
          + (current.isEmpty() ? "" : " (" + current + ")") + "; try again when it is done",
          Map.of("inProgress", current));
    }
    try {
      first.run();
    } catch (RuntimeException e) {
      busy.unlock();
      throw e;
    }
    busyWith = what;
  }

  private void unlock() {
    busyWith = "";
    busy.unlock();
  }

  private static void checkId(String id) {
    if (!ID.matcher(id).matches()) {
      throw new AgentException(ErrorCode.CHECKPOINT_NOT_FOUND, "no checkpoint '" + PathErrors.shorten(id)
          + "': checkpoint ids look like ckpt_0123456789abcdef", Map.of("checkpointId", PathErrors.shorten(id)));
    }
  }

  private Checkpoint find(String id) {
    Checkpoint c = complete(id);
    if (c == null) {
      throw notFound(id);
    }
    return c;
  }

  /** The checkpoint {@code id} if its metadata names it and its archive is there, else null. */
  private Checkpoint complete(String id) {
    Checkpoint c = read(dir.resolve(id + META));
    return c != null && c.id().equals(id) && Files.isRegularFile(dir.resolve(id + ARCHIVE), LinkOption.NOFOLLOW_LINKS)
        ? c : null;
  }

  private static AgentException notFound(String id) {
    return new AgentException(ErrorCode.CHECKPOINT_NOT_FOUND, "no checkpoint '" + id + "' (never made, or deleted)",
        Map.of("checkpointId", id));
  }

  /** Every complete checkpoint, oldest first (ties by id). */
  private List<Checkpoint> all() throws IOException {
    List<Checkpoint> found = new ArrayList<>();
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir, "ckpt_*" + META)) {
      for (Path meta : entries) {
        String file = meta.getFileName().toString();
        String id = file.substring(0, file.length() - META.length());
        Checkpoint c = ID.matcher(id).matches() ? complete(id) : null;
        if (c != null) {
          found.add(c);
        }
      }
    }
    found.sort(Comparator.comparing(Checkpoint::createdAt).thenComparing(Checkpoint::id));
    return found;
  }

  /** The checkpoint a metadata file records, or null if it is missing or unreadable. */
  private static Checkpoint read(Path meta) {
    try {
      if (Files.size(meta) > 64 * 1024) {
        return null;
      }
      JsonNode n = MAPPER.readTree(Files.readAllBytes(meta));
      return new Checkpoint(n.path("id").asText(), n.path("name").asText(), n.path("sizeBytes").asLong(),
          Instant.parse(n.path("createdAt").asText()));
    } catch (NoSuchFileException e) {
      return null;
    } catch (IOException | RuntimeException e) {
      log.warn("unreadable checkpoint metadata {}: {}", meta, e.toString());
      return null;
    }
  }

  /** What an agent stopped mid-checkpoint left: temporary files and archives without metadata. */
  private static void removeLeftovers(Path d) throws IOException {
    try (Stream<Path> entries = Files.list(d)) {
      for (Path p : (Iterable<Path>) entries::iterator) {
        String file = p.getFileName().toString();
        boolean orphan = file.endsWith(ARCHIVE) && !Files.exists(d.resolve(
            file.substring(0, file.length() - ARCHIVE.length()) + META));
        if (file.startsWith(TEMP_PREFIX) || orphan) {
          log.info("removing {} (left by a checkpoint that did not finish)", p);
          Files.deleteIfExists(p);
        }
      }
    }
  }

  private void syncDirectory() {
    try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
      ch.force(true);
    } catch (IOException e) {
      // not every file system lets a directory be synced; the renames are done either way
    }
  }

  private static void deleteTree(Path root) throws IOException {
    if (!Files.exists(root, LinkOption.NOFOLLOW_LINKS)) {
      return;
    }
    try (Stream<Path> walk = Files.walk(root)) {
      for (Path p : (Iterable<Path>) walk.sorted(Comparator.reverseOrder())::iterator) {
        Files.deleteIfExists(p);
      }
    }
  }

  private static byte[] randomBytes(int n) {
    byte[] b = new byte[n];
    RANDOM.nextBytes(b);
    return b;
  }

}
