package dev.sandboxsdk.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.SandboxException;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
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
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * The state directory of the local provider's named sandboxes: {@code <state>/sandboxes/<name>/}
 * with {@code workspace/}, {@code checkpoints/} and {@code sandbox.json} (0600; the directories
 * 0700). The record names the sandbox's agent, while one runs, by pid and start time, and the
 * machine boot and PID namespace it runs in, so that any JVM of the same user can tell whether it
 * runs without asking it: a pid reused by another process, or one from before a reboot, does not
 * count. It holds no token: a JVM reaches only the agents it started itself (docs/decisions.md).
 * Changes happen under an exclusive lock on {@code <name>/lock}, between JVMs (a file lock) and
 * between threads of one JVM. Not API.
 */
public final class LocalState {
  /** The record's file name. */
  public static final String RECORD = "sandbox.json";
  private static final ConcurrentHashMap<Path, ReentrantLock> JVM_LOCKS = new ConcurrentHashMap<>();

  private final Path root;

  /** The state of the local provider whose state directory is {@code stateDirectory}. */
  public LocalState(Path stateDirectory) {
    this.root = stateDirectory.toAbsolutePath().normalize().resolve("sandboxes");
  }

  /** The default state directory: {@code $XDG_STATE_HOME/sandbox-sdk}, else {@code ~/.local/state/sandbox-sdk}. */
  public static Path defaultDirectory() {
    String xdg = System.getenv("XDG_STATE_HOME");
    if (xdg != null && !xdg.isBlank() && Path.of(xdg).isAbsolute()) {
      return Path.of(xdg, "sandbox-sdk");
    }
    return Path.of(System.getProperty("user.home"), ".local", "state", "sandbox-sdk");
  }

  /** The directory of every named sandbox. */
  public Path root() {
    return root;
  }

  /** The directory of the sandbox {@code name}. */
  public Path dir(String name) {
    return root.resolve(name);
  }

  /** Its workspace. */
  public Path workspace(String name) {
    return dir(name).resolve("workspace");
  }

  /** Its checkpoint directory, outside the workspace. */
  public Path checkpoints(String name) {
    return dir(name).resolve("checkpoints");
  }

  /**
   * Creates the directory of a new sandbox with its workspace and checkpoint directory.
   *
   * @throws SandboxException if a sandbox of that name exists already
   */
  public void createDirectories(String name) {
    try {
      Files.createDirectories(root, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
      Files.createDirectory(dir(name), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
      Files.createDirectory(workspace(name));
      Files.createDirectory(checkpoints(name), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    } catch (FileAlreadyExistsException e) {
      throw new SandboxException("a local sandbox named '" + name + "' exists already (in " + root
          + "): get(\"" + name + "\") returns it, destroy() removes it", e);
    } catch (IOException e) {
      throw new SandboxException("cannot create the local sandbox directory " + dir(name) + ": " + e.getMessage(), e);
    }
  }

  /** The names of the sandboxes that have a record. */
  public List<String> names() {
    List<String> out = new ArrayList<>();
    if (!Files.isDirectory(root)) {
      return out;
    }
    try (DirectoryStream<Path> dirs = Files.newDirectoryStream(root)) {
      for (Path d : dirs) {
        if (Files.isRegularFile(d.resolve(RECORD), LinkOption.NOFOLLOW_LINKS)) {
          out.add(d.getFileName().toString());
        }
      }
    } catch (IOException e) {
      throw new SandboxException("cannot list the local sandboxes in " + root + ": " + e.getMessage(), e);
    }
    return out;
  }

  /** The record of {@code name}, or empty if there is none (never created, or destroyed). */
  public Optional<Entry> read(String name) {
    try {
      JsonNode n = Wire.MAPPER.readTree(Files.readString(dir(name).resolve(RECORD), StandardCharsets.UTF_8));
      return n instanceof ObjectNode o ? Optional.of(Entry.of(o)) : Optional.empty();
    } catch (NoSuchFileException e) {
      return Optional.empty();
    } catch (IOException e) {
      throw new SandboxException("cannot read the record of the local sandbox '" + name + "' ("
          + dir(name).resolve(RECORD) + "): " + e.getMessage(), e);
    }
  }

  /** Replaces the record of {@code name} atomically (a reader sees the old or the new one). */
  public void write(String name, Entry entry) {
    Path file = dir(name).resolve(RECORD);
    Path tmp = file.resolveSibling(RECORD + ".tmp");
    try {
      Files.deleteIfExists(tmp);
      Files.createFile(tmp, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
      Files.writeString(tmp, Wire.MAPPER.writerWithDefaultPrettyPrinter().writeValueAsString(entry.toJson()),
          StandardCharsets.UTF_8, StandardOpenOption.TRUNCATE_EXISTING);
      Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      throw new SandboxException("cannot write the record of the local sandbox '" + name + "' (" + file + "): "
          + e.getMessage(), e);
    }
  }

  /**
   * Runs {@code action} holding the sandbox's lock, against other JVMs and other threads of this one.
   *
   * @throws SandboxException if the sandbox's directory is gone (destroyed meanwhile)
   */
  public <T> T locked(String name, Supplier<T> action) {
    Path dir = dir(name);
    ReentrantLock jvmLock = JVM_LOCKS.computeIfAbsent(dir, d -> new ReentrantLock());
    jvmLock.lock();
    try {
      if (jvmLock.getHoldCount() > 1) {
        return action.get(); // this thread holds the file lock already
      }
      if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
        throw new SandboxException("the local sandbox '" + name + "' no longer exists (destroyed)", null);
      }
      try (FileChannel ch = FileChannel.open(dir.resolve("lock"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
           FileLock ignored = ch.lock()) {
        return action.get();
      } catch (IOException e) {
        throw new SandboxException("cannot lock the local sandbox '" + name + "' (" + dir.resolve("lock") + "): "
            + e.getMessage(), e);
      }
    } finally {
      jvmLock.unlock();
    }
  }

  /** A process named by pid and start time, in the boot and PID namespace {@code where}. */
  public record Proc(String where, long pid, long startMillis) {
    /** This JVM. */
    static Proc current() {
      return of(ProcessHandle.current());
    }

    static Proc of(ProcessHandle h) {
      return new Proc(Workspaces.where(), h.pid(), h.info().startInstant().map(Instant::toEpochMilli).orElse(0L));
    }

    /** Whether it runs; false if it ran on another boot or in another PID namespace. */
    boolean running() {
      return Workspaces.where().equals(where) && Workspaces.isRunning(pid, startMillis);
    }

    ObjectNode toJson() {
      return Wire.MAPPER.createObjectNode().put("where", where).put("pid", pid).put("start", startMillis);
    }

    static Proc of(JsonNode n) {
      return n.isObject() && n.path("pid").canConvertToLong()
          ? new Proc(n.path("where").asText(), n.path("pid").asLong(), n.path("start").asLong(0)) : null;
    }
  }

  /**
   * The record of one sandbox ({@code sandbox.json}): mutable, read and written under the
   * sandbox's lock.
   */
  public static final class Entry {
    public String name;
    public Instant createdAt;
    public Instant lastActivityAt;
    public Instant stoppedAt;
    /** Removed when its handle closes or its owner JVM is gone: an unnamed sandbox. */
    public boolean removeOnClose;
    public Proc owner;
    public Proc agent;
    /** The JVM that runs {@link #agent}. */
    public long agentJvmPid;
    public boolean network;
    /** The agent's --idle-timeout-ms, or null for none. */
    public Long idleTimeoutMs;
    public long startupTimeoutMs = 60_000;
    public Map<String, String> env = new LinkedHashMap<>();
    public Map<String, String> labels = new LinkedHashMap<>();
    public List<String> agentArguments = new ArrayList<>();
    /** The repository cloned at creation, without credentials; for people reading the record. */
    public String gitRepository;
    /** The policy of the sandbox's egress proxy, or null for none. */
    public dev.sandboxsdk.EgressPolicy egressPolicy;
    /** The names of the sandbox's egress secrets; their values are never in the record. */
    public final List<String> egressSecrets = new ArrayList<>();

    /** Records this JVM as the owner: the sandbox is removed once this JVM is gone. */
    public void ownedByThisJvm() {
      owner = Proc.current();
    }

    /** Whether the owner (of an unnamed sandbox) still runs; true when that cannot be told. */
    public boolean ownerAlive() {
      return owner == null || !Workspaces.where().equals(owner.where()) || owner.running();
    }

    /** Records the agent that serves the sandbox now, run by this JVM. */
    public void agent(ProcessHandle h) {
      agent = Proc.of(h);
      agentJvmPid = ProcessHandle.current().pid();
    }

    /** The recorded agent, if it still runs. */
    public Optional<ProcessHandle> runningAgent() {
      return agent != null && agent.running() ? ProcessHandle.of(agent.pid()) : Optional.empty();
    }

    ObjectNode toJson() {
      ObjectNode o = Wire.MAPPER.createObjectNode();
      o.put("name", name);
      o.put("createdAt", String.valueOf(createdAt));
      putInstant(o, "lastActivityAt", lastActivityAt);
      putInstant(o, "stoppedAt", stoppedAt);
      if (removeOnClose) {
        o.put("removeOnClose", true);
      }
      if (owner != null) {
        o.set("owner", owner.toJson());
      }
      if (agent != null) {
        o.set("agent", agent.toJson().put("jvmPid", agentJvmPid));
      }
      ObjectNode st = o.putObject("settings");
      st.put("network", network);
      if (idleTimeoutMs != null) {
        st.put("idleTimeoutMs", idleTimeoutMs);
      }
      st.put("startupTimeoutMs", startupTimeoutMs);
      env.forEach(st.putObject("env")::put);
      labels.forEach(st.putObject("labels")::put);
      agentArguments.forEach(st.putArray("agentArguments")::add);
      if (gitRepository != null) {
        st.put("gitRepository", gitRepository);
      }
      if (egressPolicy != null) {
        st.set("egressPolicy", RealEgress.body(egressPolicy));
      }
      if (!egressSecrets.isEmpty()) {
        egressSecrets.forEach(st.putArray("egressSecrets")::add);
      }
      return o;
    }

    static Entry of(ObjectNode o) {
      Entry e = new Entry();
      e.name = o.path("name").asText();
      e.createdAt = instant(o, "createdAt");
      e.lastActivityAt = instant(o, "lastActivityAt");
      e.stoppedAt = instant(o, "stoppedAt");
      e.removeOnClose = o.path("removeOnClose").asBoolean(false);
      e.owner = Proc.of(o.path("owner"));
      e.agent = Proc.of(o.path("agent"));
      e.agentJvmPid = o.path("agent").path("jvmPid").asLong(-1);
      JsonNode st = o.path("settings");
      e.network = st.path("network").asBoolean(false);
      e.idleTimeoutMs = st.path("idleTimeoutMs").canConvertToLong() ? st.path("idleTimeoutMs").asLong() : null;
      e.startupTimeoutMs = st.path("startupTimeoutMs").asLong(60_000);
      st.path("env").fields().forEachRemaining(f -> e.env.put(f.getKey(), f.getValue().asText()));
      st.path("labels").fields().forEachRemaining(f -> e.labels.put(f.getKey(), f.getValue().asText()));
      st.path("agentArguments").forEach(a -> e.agentArguments.add(a.asText()));
      e.gitRepository = st.hasNonNull("gitRepository") ? st.path("gitRepository").asText() : null;
      e.egressPolicy = st.path("egressPolicy").isObject() ? RealEgress.policy(st.get("egressPolicy")) : null;
      st.path("egressSecrets").forEach(n -> e.egressSecrets.add(n.asText()));
      return e;
    }

    private static void putInstant(ObjectNode o, String field, Instant value) {
      if (value != null) {
        o.put(field, value.toString());
      }
    }

    private static Instant instant(ObjectNode o, String field) {
      JsonNode n = o.get(field);
      if (n == null || !n.isTextual()) {
        return null;
      }
      try {
        return Instant.parse(n.asText());
      } catch (RuntimeException ex) {
        return null;
      }
    }
  }
}
