package dev.sandboxsdk.agent.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import dev.sandboxsdk.agent.AgentConfig;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.fs.PathErrors;
import dev.sandboxsdk.agent.process.CommandUser;
import dev.sandboxsdk.agent.process.ProcessManager;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code /api/checkpoints}: checkpoints of the whole workspace, kept as tar archives in the agent's
 * checkpoint directory (outside the workspace, mode 0700, the agent's own).
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
final class CheckpointEndpoints {
  private static final Logger log = LoggerFactory.getLogger(CheckpointEndpoints.class);
  static final Pattern NAME = Pattern.compile("[A-Za-z0-9._-]{1,64}");
  static final Pattern ID = Pattern.compile("ckpt_[0-9a-f]{16}");
  private static final String ARCHIVE = ".tar";
  private static final String META = ".json";
  private static final String TEMP_PREFIX = ".tmp-";
  private static final int MAX_STDERR_BYTES = 8 * 1024;
  /** tar of a huge workspace may take long; this only stops one that hangs (a dead NFS mount). */
  private static final long TAR_TIMEOUT_MINUTES = 60;
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final String DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin";

  private final ProcessManager processes;
  private final AgentConfig config;
  private final CommandUser user;
  private final Path workspace;
  private final Path dir;
  private final boolean temporary;
  /** Why checkpoints cannot be kept (the directory cannot be made), or null. */
  private final String unavailable;
  private final ReentrantLock busy = new ReentrantLock();
  private volatile String busyWith = "";

  CheckpointEndpoints(ProcessManager processes) {
    this.processes = processes;
    this.config = processes.config();
    this.user = processes.commandUser();
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

  /** A checkpoint as its metadata file records it. */
  record Checkpoint(String id, String name, long sizeBytes, Instant createdAt) {
    ObjectNode toJson() {
      ObjectNode n = Json.object();
      n.put("id", id);
      n.put("name", name);
      n.put("sizeBytes", sizeBytes);
      n.put("createdAt", createdAt.toString());
      return n;
    }
  }

  // ---- routes ---------------------------------------------------------------------------------

  /** POST /api/checkpoints {"name": ...}: 201 with the new checkpoint. */
  void create(HttpExchange exchange) throws IOException {
    Query.none(exchange);
    Json body = Json.read(exchange, config.maxBodyBytes(), processes.outputBudget()).allowOnly(Set.of("name"));
    String name = body.string("name");
    if (name == null || !NAME.matcher(name).matches()) {
      throw AgentException.invalid("name", "'name' must be 1 to 64 of the characters A-Z a-z 0-9 . _ -");
    }
    requireAvailable();
    lock("creating checkpoint '" + name + "'");
    Checkpoint c;
    try {
      c = createLocked(name);
    } finally {
      unlock();
    }
    ObjectNode answer = Json.object();
    answer.set("checkpoint", c.toJson());
    Responses.send(exchange, 201, Responses.stamp(answer));
  }

  /** GET /api/checkpoints: every checkpoint, oldest first. */
  void list(HttpExchange exchange) throws IOException {
    Query.none(exchange);
    ObjectNode answer = Json.object();
    ArrayNode items = answer.putArray("checkpoints");
    if (unavailable == null) {
      for (Checkpoint c : all()) {
        items.add(c.toJson());
      }
    }
    Responses.ok(exchange, answer);
  }

  /** POST /api/checkpoints/{id}/restore {"force": false}. */
  void restore(HttpExchange exchange, String id) throws IOException {
    Query.none(exchange);
    Json body = Json.read(exchange, config.maxBodyBytes(), processes.outputBudget()).allowOnly(Set.of("force"));
    Boolean forceField = body.bool("force");
    boolean force = forceField != null && forceField;
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
    ObjectNode answer = Json.object();
    answer.set("checkpoint", c.toJson());
    answer.put("killedProcesses", killed);
    Responses.ok(exchange, answer);
  }

  /** DELETE /api/checkpoints/{id}. */
  void delete(HttpExchange exchange, String id) throws IOException {
    Query.none(exchange);
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
    ObjectNode answer = Json.object();
    answer.set("checkpoint", c.toJson());
    Responses.ok(exchange, answer);
  }

  /** Deletes the temporary checkpoint directory; a given one stays with its checkpoints. */
  void close() {
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
      Outcome o = run(argv, null, temp.toFile());
      // 1: "file changed as we read it" (a command wrote meanwhile); the archive is complete.
      if (o.exit() != 0 && o.exit() != 1) {
        throw tarFailure("checkpoint", o, "nothing was kept");
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
        ch.write(ByteBuffer.wrap(Json.MAPPER.writeValueAsBytes(meta)));
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
    Outcome o = run(argv, archive.toFile(), null);
    if (o.exit() != 0) {
      throw tarFailure("restore of " + c.id(), o, "the workspace holds part of the checkpoint; restore again");
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
    Outcome o = run(remove, null, null);
    if (o.exit() != 0) {
      // Directories the user made read-only (0555) or unreadable (0000): give them u+rwx, then again.
      run(List.of("chmod", "-R", "u+rwx", "--", workspace.toString()), null, null);
      o = run(remove, null, null);
      if (o.exit() != 0) {
        throw new AgentException(ErrorCode.FILESYSTEM_ERROR, "restore of " + id + ": cannot empty the workspace: "
            + abbreviate(o.stderr().trim()) + "; the workspace may be partly emptied; restore again",
            Map.of("checkpointId", id));
      }
    }
  }

  // ---- helpers --------------------------------------------------------------------------------

  record Outcome(int exit, String stderr) {
  }

  /**
   * Runs {@code argv} as the command user (or the agent's user without one), with an environment of
   * PATH and LC_ALL=C only, in "/"; stdin and stdout from files the agent opens. Waits for the end.
   */
  private Outcome run(List<String> argv, File stdin, File stdout) {
    ProcessBuilder pb;
    if (user != null) {
      pb = user.helper(argv);
    } else {
      pb = new ProcessBuilder(argv).directory(new File("/"));
      Map<String, String> env = pb.environment();
      String path = env.get("PATH");
      env.clear(); // never the agent's token
      env.put("PATH", path == null ? DEFAULT_PATH : path);
      env.put("LC_ALL", "C");
    }
    pb.redirectInput(stdin != null ? ProcessBuilder.Redirect.from(stdin) : ProcessBuilder.Redirect.from(new File("/dev/null")));
    pb.redirectOutput(stdout != null ? ProcessBuilder.Redirect.to(stdout) : ProcessBuilder.Redirect.DISCARD);
    pb.redirectError(ProcessBuilder.Redirect.PIPE);
    Process p;
    try {
      p = pb.start();
    } catch (IOException e) {
      throw new AgentException(ErrorCode.INTERNAL_ERROR, "cannot run " + argv.get(0) + " for checkpoints ("
          + argv.get(0) + " must be installed where the agent runs): " + e.getMessage());
    }
    try {
      String err = readCapped(p.getErrorStream());
      if (!p.waitFor(TAR_TIMEOUT_MINUTES, TimeUnit.MINUTES)) {
        p.destroyForcibly();
        return new Outcome(-1, err + "\n" + argv.get(0) + " did not finish within " + TAR_TIMEOUT_MINUTES + " minutes");
      }
      return new Outcome(p.exitValue(), err);
    } catch (InterruptedException e) {
      p.destroyForcibly();
      Thread.currentThread().interrupt();
      throw new AgentException(ErrorCode.SHUTTING_DOWN, "interrupted while running " + argv.get(0));
    } catch (IOException e) {
      p.destroyForcibly();
      throw new AgentException(ErrorCode.INTERNAL_ERROR, "cannot read the messages of " + argv.get(0) + ": " + e);
    }
  }

  /** The first bytes of the stream; the rest is read and dropped so the process never blocks. */
  private static String readCapped(InputStream in) throws IOException {
    byte[] kept = in.readNBytes(MAX_STDERR_BYTES);
    byte[] skip = new byte[8192];
    while (in.read(skip) >= 0) {
      // drain
    }
    return new String(kept, StandardCharsets.UTF_8);
  }

  /** tar's failure as the protocol error its message names (no space, permission, ...). */
  private AgentException tarFailure(String what, Outcome o, String consequence) {
    String err = abbreviate(o.stderr().trim());
    Map<String, Object> context = new LinkedHashMap<>();
    context.put("exitCode", o.exit());
    context.put("stderr", err);
    // "Wrote only N of M bytes": a short write to the archive, which on a local disk is a full one.
    if (err.contains("No space left") || err.contains("Disk quota exceeded") || err.contains("Wrote only")) {
      return new AgentException(ErrorCode.NO_SPACE, what + " failed: no space left on the device (or quota exceeded);"
          + " " + consequence + ". Free space (delete checkpoints or files) and try again", context);
    }
    if (err.contains("Permission denied") || err.contains("Operation not permitted")) {
      return new AgentException(ErrorCode.PERMISSION_DENIED, what + " failed: " + err + "; " + consequence
          + ". Files the sandbox's user cannot read cannot be checkpointed", context);
    }
    return new AgentException(ErrorCode.FILESYSTEM_ERROR, what + " failed: tar exited with " + o.exit()
        + (err.isEmpty() ? "" : ": " + err) + "; " + consequence, context);
  }

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
      JsonNode n = Json.MAPPER.readTree(Files.readAllBytes(meta));
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

  private static String abbreviate(String s) {
    return s.length() <= 2000 ? s : s.substring(0, 2000) + "...";
  }
}
