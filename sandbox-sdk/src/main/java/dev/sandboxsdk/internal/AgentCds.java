package dev.sandboxsdk.internal;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Class-data sharing for the local agent's JVM (issue 13, start to ready): the first launch with
 * a given JDK and agent classpath dumps the classes it loaded into an archive at its exit
 * ({@code -XX:ArchiveClassesAtExit}, JDK 13+); later launches map it
 * ({@code -XX:SharedArchiveFile}) and skip parsing and verifying those classes. JDK 19's
 * {@code -XX:+AutoCreateSharedArchive} does the same, but the SDK runs on 17.
 *
 * <p>Archives live in {@code $XDG_CACHE_HOME/sandbox-sdk/cds} (else {@code ~/.cache/...}), a
 * directory only this user can use, named by a digest of the JDK (home and build) and of every
 * classpath jar's path, size and modification time, so an upgrade of either makes a new one and
 * the JVM's own checks never meet a stale archive. A dump goes to a file of its own and is
 * renamed into place once the agent has exited normally, so concurrent first launches and an
 * agent killed mid-dump leave no half-written archive. A launch with another java executable
 * than this JVM's, a classpath with a directory, or the caller's own CDS options gets none. The
 * system property {@code sandbox.agent.cds=false} turns it off.
 */
final class AgentCds {
  private static final Logger log = LoggerFactory.getLogger(AgentCds.class);
  static final String PROPERTY = "sandbox.agent.cds";
  static final String DIR_PROPERTY = "sandbox.agent.cdsDir";
  /** Archives nobody used for this long are removed when a new one is made. */
  private static final Duration UNUSED_FOR = Duration.ofDays(30);
  /** A dump file this old belongs to a launch that never finished it. */
  private static final Duration ABANDONED_DUMP = Duration.ofHours(1);

  /** What to add to the agent's JVM options, and what to do once it has exited. */
  record Plan(List<String> jvmOptions, Path dump, Path archive) {
    static final Plan NONE = new Plan(List.of(), null, null);

    /** Moves a finished dump into place; called after the agent exited with {@code exitCode}. */
    void agentExited(int exitCode) {
      if (dump == null || Files.notExists(dump)) {
        return; // no dump, or the other of stop() and the exit callback handled it
      }
      try {
        // 0: stdin closed; 143: SIGTERM (the JVM dumps on that exit path too); anything else may be a cut dump.
        if ((exitCode == 0 || exitCode == 143) && Files.size(dump) > 0) {
          try {
            Files.move(dump, archive, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
          } catch (AtomicMoveNotSupportedException e) {
            Files.move(dump, archive, StandardCopyOption.REPLACE_EXISTING);
          }
          log.debug("agent class-data archive made: {}", archive);
        }
      } catch (IOException e) {
        log.debug("no agent class-data archive: {}", e.toString());
      } finally {
        try {
          Files.deleteIfExists(dump);
        } catch (IOException ignored) {
          // removed with the other abandoned dumps next time
        }
      }
    }
  }

  private AgentCds() {}

  /**
   * The plan for one launch.
   *
   * @param ownJava whether the agent runs on this JVM's own java executable
   * @param classpath the agent's classpath
   * @param callerJvmArgs the caller's JVM options (their CDS options win)
   */
  static Plan plan(boolean ownJava, String classpath, List<String> callerJvmArgs) {
    if (!ownJava || "false".equalsIgnoreCase(System.getProperty(PROPERTY, "true"))) {
      return Plan.NONE;
    }
    for (String a : callerJvmArgs) {
      if (a.startsWith("-Xshare") || a.contains("SharedArchiveFile") || a.contains("ArchiveClassesAtExit")
          || a.contains("UseSharedSpaces")) {
        return Plan.NONE;
      }
    }
    try {
      String key = key(classpath);
      if (key == null) {
        return Plan.NONE;
      }
      Path dir = directory();
      Path archive = dir.resolve("agent-" + key + ".jsa");
      if (Files.isRegularFile(archive) && Files.size(archive) > 0) {
        Files.setLastModifiedTime(archive, FileTime.from(Instant.now())); // in use: not removed as unused
        return new Plan(List.of("-XX:SharedArchiveFile=" + archive), null, archive);
      }
      removeOld(dir);
      Path dump = dir.resolve("agent-" + key + "." + UUID.randomUUID() + ".dump");
      return new Plan(List.of("-XX:ArchiveClassesAtExit=" + dump), dump, archive);
    } catch (IOException | RuntimeException e) {
      log.debug("no agent class-data archive: {}", e.toString());
      return Plan.NONE;
    }
  }

  /** The digest of this JDK and every classpath entry; null if an entry is not a jar file. */
  static String key(String classpath) throws IOException {
    StringBuilder in = new StringBuilder();
    in.append(System.getProperty("java.home")).append('\0').append(System.getProperty("java.vm.version")).append('\0');
    for (String entry : classpath.split(File.pathSeparator)) {
      Path p = Path.of(entry).toRealPath();
      if (!Files.isRegularFile(p)) {
        return null; // CDS archives only classes from jar files
      }
      in.append(p).append('\0').append(Files.size(p)).append('\0').append(Files.getLastModifiedTime(p).toMillis())
          .append('\0');
    }
    try {
      byte[] digest = MessageDigest.getInstance("SHA-256").digest(in.toString().getBytes(StandardCharsets.UTF_8));
      return HexFormat.of().formatHex(digest, 0, 12);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e); // every JDK has SHA-256
    }
  }

  private static Path directory() throws IOException {
    String configured = System.getProperty(DIR_PROPERTY);
    Path dir;
    if (configured != null && !configured.isBlank()) {
      dir = Path.of(configured);
    } else {
      String cache = System.getenv("XDG_CACHE_HOME");
      Path base = cache != null && !cache.isBlank() ? Path.of(cache) : Path.of(System.getProperty("user.home"), ".cache");
      dir = base.resolve("sandbox-sdk").resolve("cds");
    }
    if (!Files.isDirectory(dir)) {
      Files.createDirectories(dir.getParent());
      try {
        Files.createDirectory(dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
      } catch (java.nio.file.FileAlreadyExistsException raced) {
        // another launch made it
      }
    }
    return dir;
  }

  /** Removes archives unused for 30 days and dumps of launches that never finished. */
  private static void removeOld(Path dir) throws IOException {
    Instant now = Instant.now();
    List<Path> old = new ArrayList<>();
    try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, "agent-*")) {
      for (Path f : files) {
        Instant modified = Files.getLastModifiedTime(f).toInstant();
        String name = f.getFileName().toString();
        if (name.endsWith(".jsa") && modified.isBefore(now.minus(UNUSED_FOR))
            || name.endsWith(".dump") && modified.isBefore(now.minus(ABANDONED_DUMP))) {
          old.add(f);
        }
      }
    }
    for (Path f : old) {
      Files.deleteIfExists(f);
    }
  }
}
