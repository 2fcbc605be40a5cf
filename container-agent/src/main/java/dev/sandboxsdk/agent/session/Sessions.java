package dev.sandboxsdk.agent.session;

import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.process.CommandUser;
import dev.sandboxsdk.agent.process.ExecSpec;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.ByteBuffer;
import java.nio.channels.SeekableByteChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SecureDirectoryStream;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipalLookupService;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The agent's shell sessions: each keeps one shell's state (directory, variables, functions,
 * aliases, options) in a file of a directory that commands can read and write (under the
 * sandbox's {@code /tmp}, outside the workspace; mode 700, or 1777 when commands run as another
 * user), and runs one command at a time. A command in a
 * session is an ordinary exec whose program is the {@link SessionScript} wrapper, so its
 * isolation, limits, timeout, kill and streaming are exactly those of any exec.
 *
 * <p>Bounded: at most {@code maxSessions}, each state at most {@code maxStateBytes} on disk. A
 * second command waits up to {@code waitMs} for the one running, then is refused. Thread-safe.
 */
public final class Sessions implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Sessions.class);
  /** Session ids the agent accepts: safe as a file name, readable in a URL. */
  static final Pattern ID = Pattern.compile("[A-Za-z0-9_][A-Za-z0-9._-]{0,63}");
  /** Default cap on sessions per agent. */
  public static final int DEFAULT_MAX_SESSIONS = 64;
  /** Default wait of a second command for the one running in its session. */
  public static final long DEFAULT_WAIT_MS = 30_000;
  /** Default cap on one session's saved state. */
  public static final long DEFAULT_MAX_STATE_BYTES = 1024 * 1024;

  private final Path dirOnHost;
  /**
   * The directory, opened once: commands can replace its path with a link to a host directory, so
   * the agent writes, gives away and deletes state files relative to this descriptor only.
   */
  private final SecureDirectoryStream<Path> dir;
  private final String dirInSandbox;
  private final CommandUser user;
  private final int maxSessions;
  private final long waitMs;
  private final SessionScript script;
  private final Map<String, Session> sessions = new LinkedHashMap<>();
  private final SecureRandom random = new SecureRandom();
  private boolean closed;

  private Sessions(Path dirOnHost, SecureDirectoryStream<Path> dir, String dirInSandbox, CommandUser user, int maxSessions, long waitMs,
      long maxStateBytes) {
    this.dirOnHost = dirOnHost;
    this.dir = dir;
    this.dirInSandbox = dirInSandbox;
    this.user = user;
    this.maxSessions = maxSessions;
    this.waitMs = waitMs;
    this.script = new SessionScript(maxStateBytes);
  }

  /**
   * Makes the sessions' directory in the commands' temporary directory.
   *
   * @param tmpOnHost the commands' temporary directory as the agent sees it
   * @param tmpInSandbox the same directory as commands see it
   * @param user the user commands run as, who gets the directory, or null for the agent's own
   */
  public static Sessions open(Path tmpOnHost, String tmpInSandbox, CommandUser user, int maxSessions, long waitMs,
      long maxStateBytes) {
    String name = "sandbox-sessions-" + HexFormat.of().formatHex(new SecureRandom().generateSeed(6));
    Path dir = tmpOnHost.resolve(name);
    try {
      Files.createDirectory(dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create the sessions' directory " + dir, e);
    }
    if (user != null) {
      // Shared like /tmp (sticky: only a file's owner and the directory's, the agent, remove
      // files), not given away: an agent without CAP_CHOWN could not, and one without
      // CAP_DAC_OVERRIDE could then no longer remove what the commands left in it.
      try {
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx"));
        Files.setAttribute(dir, "unix:mode", 01777);
      } catch (IOException | RuntimeException e) {
        throw new IllegalStateException("cannot let the command user " + user + " write the sessions' directory "
            + dir + ": " + e.getMessage(), e);
      }
    }
    SecureDirectoryStream<Path> opened;
    try {
      if (!(Files.newDirectoryStream(dir) instanceof SecureDirectoryStream<Path> secure)) {
        throw new IllegalStateException("this platform has no SecureDirectoryStream for " + dir);
      }
      opened = secure;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot open the sessions' directory " + dir, e);
    }
    return new Sessions(dir, opened, tmpInSandbox + "/" + name, user, maxSessions, waitMs, maxStateBytes);
  }

  /** The directory the state files are in, as the agent sees it. */
  public Path directory() {
    return dirOnHost;
  }

  /**
   * A new session, its state holding {@code cwd} and {@code env} (exported).
   *
   * @param id the caller's id, or null for a generated one
   * @throws AgentException VALIDATION_FAILED, SESSION_ALREADY_EXISTS, TOO_MANY_SESSIONS
   */
  public Session create(String id, String cwd, Map<String, String> env) {
    if (id != null && !ID.matcher(id).matches()) {
      throw AgentException.invalid("id", "a session id is 1 to 64 letters, digits, '_', '.' or '-', not starting"
          + " with '.' or '-'; got '" + (id.length() > 80 ? id.substring(0, 80) + "..." : id) + "'");
    }
    checkEnv(env, "env");
    byte[] state = SessionScript.initialState(cwd, env).getBytes(StandardCharsets.UTF_8);
    Session s;
    synchronized (this) {
      if (closed) {
        throw new AgentException(ErrorCode.SHUTTING_DOWN, "the agent is stopping");
      }
      if (id != null && sessions.containsKey(id)) {
        throw new AgentException(ErrorCode.SESSION_ALREADY_EXISTS, "a session '" + id + "' exists already",
            Map.of("sessionId", id));
      }
      if (sessions.size() >= maxSessions) {
        throw new AgentException(ErrorCode.TOO_MANY_SESSIONS, "this agent holds " + maxSessions + " sessions, its"
            + " limit: delete one (DELETE /api/sessions/{id}) first", Map.of("limit", maxSessions));
      }
      String sid = id != null ? id : newId();
      s = new Session(sid, dirOnHost.resolve(sid + ".state"), dirInSandbox + "/" + sid + ".state");
      sessions.put(sid, s);
    }
    try {
      // The first state is a file of its own: the command user replaces the state file by
      // renaming over it, which a sticky directory allows only for the user's own files.
      Path init = Path.of(s.id() + ".state.init");
      try (SeekableByteChannel out = dir.newByteChannel(init, java.util.Set.<java.nio.file.OpenOption>of(StandardOpenOption.CREATE_NEW,
          StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS),
          PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-r--r--")))) {
        ByteBuffer b = ByteBuffer.wrap(state);
        while (b.hasRemaining()) {
          out.write(b);
        }
      }
      if (user != null) {
        giveTo(user, init);
      }
    } catch (IOException e) {
      synchronized (this) {
        sessions.remove(s.id());
      }
      throw new AgentException(ErrorCode.FILESYSTEM_ERROR, "cannot write the state of session '" + s.id() + "': "
          + e.getMessage());
    }
    return s;
  }

  /** The sessions, oldest first. */
  public synchronized List<Session> list() {
    return new ArrayList<>(sessions.values());
  }

  /**
   * The session of this id.
   *
   * @throws AgentException SESSION_NOT_FOUND
   */
  public synchronized Session require(String id) {
    Session s = sessions.get(id);
    if (s == null) {
      throw notFound(id);
    }
    return s;
  }

  /**
   * Deletes a session: the command running in it, if any, is stopped (its state is not saved)
   * and its state file removed.
   *
   * @throws AgentException SESSION_NOT_FOUND
   */
  public Session delete(String id) {
    Session s;
    synchronized (this) {
      s = sessions.remove(id);
    }
    if (s == null) {
      throw notFound(id);
    }
    s.delete();
    removeState(s);
    return s;
  }

  /**
   * Holds {@code spec}'s session (waiting for the command before) and gives the spec that runs
   * its command in it; a spec without a session runs as it is. Close the run once its process
   * has ended.
   *
   * @throws AgentException SESSION_NOT_FOUND, SESSION_BUSY, VALIDATION_FAILED (an env name a
   *     shell cannot export)
   */
  public Run enter(ExecSpec spec) {
    if (spec.sessionId() == null) {
      return new Run(null, spec);
    }
    checkEnv(spec.env(), "env");
    Session s = require(spec.sessionId());
    s.acquire(waitMs);
    String command = spec.displayCommand();
    return new Run(s, spec.running(script.argv(s.stateInSandbox(), command, spec.cwd() != null, spec.env())));
  }

  /** A command holding its session; {@link #close()} lets the next one in. */
  public final class Run implements AutoCloseable {
    private final Session session;
    private final ExecSpec spec;

    Run(Session session, ExecSpec spec) {
      this.session = session;
      this.spec = spec;
    }

    /** What to spawn. */
    public ExecSpec spec() {
      return spec;
    }

    /** Tells the session how to stop this command if it is deleted meanwhile. */
    public void stopWith(Runnable stop) {
      if (session != null) {
        session.running(stop);
      }
    }

    @Override
    public void close() {
      if (session != null) {
        session.release();
        if (session.deleted()) {
          removeState(session); // the command may have saved after the delete removed it
        }
      }
    }
  }

  static AgentException notFound(String id) {
    return new AgentException(ErrorCode.SESSION_NOT_FOUND, "no session '" + id + "': create it with POST"
        + " /api/sessions, list them with GET /api/sessions", Map.of("sessionId", id));
  }

  private static void checkEnv(Map<String, String> env, String field) {
    for (String name : env.keySet()) {
      if (!SessionScript.isShellName(name)) {
        throw AgentException.invalid(field, "in a session, variable names must be shell names (letters, digits and"
            + " '_', not starting with a digit): '" + name + "'");
      }
    }
  }

  private String newId() {
    byte[] b = new byte[6];
    random.nextBytes(b);
    return "session-" + HexFormat.of().formatHex(b);
  }

  private void removeState(Session s) {
    try {
      for (String suffix : List.of(".state", ".state.tmp", ".state.init")) {
        try {
          dir.deleteFile(Path.of(s.id() + suffix));
        } catch (NoSuchFileException gone) {
          // never written, or removed already
        }
      }
    } catch (IOException e) {
      log.debug("could not remove the state of session {}: {}", s.id(), e.toString());
    }
  }

  /** Gives the file {@code name} of the directory to the command user, where the agent may (CAP_CHOWN). */
  private void giveTo(CommandUser user, Path name) {
    try {
      PosixFileAttributeView view = dir.getFileAttributeView(name, PosixFileAttributeView.class,
          LinkOption.NOFOLLOW_LINKS);
      UserPrincipalLookupService users = dirOnHost.getFileSystem().getUserPrincipalLookupService();
      view.setGroup(users.lookupPrincipalByGroupName(Long.toString(user.gid())));
      view.setOwner(users.lookupPrincipalByName(Long.toString(user.uid())));
    } catch (IOException | RuntimeException e) {
      log.debug("cannot give {} to {}: {}", name, user, e.toString());
    }
  }

  /** Stops every session's command and removes the directory. */
  @Override
  public void close() {
    List<Session> all;
    synchronized (this) {
      closed = true;
      all = new ArrayList<>(sessions.values());
      sessions.clear();
    }
    all.forEach(Session::delete);
    try {
      dir.close();
    } catch (IOException e) {
      log.debug("could not close {}: {}", dirOnHost, e.toString());
    }
    try (Stream<Path> files = Files.walk(dirOnHost)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException | UncheckedIOException e) {
      log.debug("could not remove {}: {}", dirOnHost, e.toString());
    }
  }
}
