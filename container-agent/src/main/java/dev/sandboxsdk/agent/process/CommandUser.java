package dev.sandboxsdk.agent.process;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

/**
 * The unprivileged user every command runs as ({@code --command-user}), and the util-linux
 * {@code setpriv} prefix that switches to it: real and effective uid and gid, supplementary groups
 * from {@code /etc/group} (or none when the user has no passwd entry), no inheritable, bounding or
 * ambient capabilities and {@code no_new_privs}, so no setuid program or file capability can give
 * any back. The agent stays root and keeps only what it needs to switch and to signal (CAP_SETUID,
 * CAP_SETGID, CAP_SETPCAP for the bounding set, CAP_KILL).
 *
 * <p>Immutable.
 */
public final class CommandUser {
  private static final Pattern NUMERIC = Pattern.compile("([0-9]{1,10})(?::([0-9]{1,10}))?");
  private static final Pattern NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9._-]*\\$?");
  /** The largest id the kernel accepts; (uid_t) -1 means "unchanged" to setresuid. */
  private static final long MAX_ID = 4_294_967_294L;
  /** Where a user without a passwd entry gets its HOME, as {@code docker run --user UID} does. */
  static final String NO_HOME = "/";

  private final String spec;
  private final String name;
  private final long uid;
  private final long gid;
  private final String home;
  private final List<String> prefix;

  private CommandUser(String spec, String name, long uid, long gid, String home, String setpriv) {
    this.spec = spec;
    this.name = name;
    this.uid = uid;
    this.gid = gid;
    this.home = home;
    this.prefix = List.of(setpriv, "--reuid=" + uid, "--regid=" + gid,
        name != null ? "--init-groups" : "--clear-groups",
        "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--");
  }

  /**
   * Why {@code spec} is not a {@code --command-user} value (a user name, {@code UID} or {@code
   * UID:GID}), or null if it is one. Whether the user exists is checked at start.
   */
  public static String syntaxError(String spec) {
    var m = NUMERIC.matcher(spec);
    if (m.matches()) {
      if (Long.parseLong(m.group(1)) == 0 || (m.group(2) != null && Long.parseLong(m.group(2)) == 0)) {
        return "commands must not run as root (uid or gid 0): '" + spec + "'";
      }
      if (Long.parseLong(m.group(1)) > MAX_ID || (m.group(2) != null && Long.parseLong(m.group(2)) > MAX_ID)) {
        return "'" + spec + "' is out of range (ids go up to " + MAX_ID + ")";
      }
      return null;
    }
    if (!NAME.matcher(spec).matches()) {
      return "'" + spec + "' is neither a user name nor UID or UID:GID";
    }
    return null;
  }

  /**
   * Looks the user up in {@code passwd}. A name must have an entry; a bare {@code UID} must have
   * one too (its group comes from there); {@code UID:GID} need not (it then gets no
   * supplementary groups and HOME {@value #NO_HOME}).
   *
   * @throws IllegalStateException with a one-line reason if the user cannot be used
   */
  static CommandUser resolve(String spec, Path passwd, String setpriv) {
    String error = syntaxError(spec);
    if (error != null) {
      throw new IllegalStateException("--command-user: " + error);
    }
    List<String[]> entries = readPasswd(passwd);
    var m = NUMERIC.matcher(spec);
    String[] entry;
    long uid;
    Long gid = null;
    if (m.matches()) {
      uid = Long.parseLong(m.group(1));
      gid = m.group(2) == null ? null : Long.parseLong(m.group(2));
      entry = find(entries, 2, String.valueOf(uid));
      if (entry == null && gid == null) {
        throw new IllegalStateException("--command-user " + spec + ": uid " + uid + " has no entry in " + passwd
            + "; give its group as well (--command-user " + uid + ":GID)");
      }
    } else {
      entry = find(entries, 0, spec);
      if (entry == null) {
        throw new IllegalStateException("--command-user " + spec + ": no such user in " + passwd);
      }
      uid = parseId(entry[2]);
    }
    if (gid == null) {
      gid = parseId(entry[3]);
    }
    if (uid <= 0 || gid <= 0) {
      throw new IllegalStateException("--command-user " + spec + ": commands must not run as root (uid " + uid
          + ", gid " + gid + ")");
    }
    if (setpriv == null) {
      throw new IllegalStateException("--command-user needs setpriv(1) on the agent's PATH"
          + " (Debian/Ubuntu: util-linux)");
    }
    String home = entry == null || entry[5].isEmpty() ? NO_HOME : entry[5];
    return new CommandUser(spec, entry == null ? null : entry[0], uid, gid, home, setpriv);
  }

  private static List<String[]> readPasswd(Path passwd) {
    List<String[]> entries = new ArrayList<>();
    try {
      for (String line : Files.readAllLines(passwd, StandardCharsets.UTF_8)) {
        String[] f = line.split(":", -1);
        if (f.length >= 7 && !line.startsWith("#")) {
          entries.add(f);
        }
      }
    } catch (IOException e) {
      throw new IllegalStateException("--command-user: cannot read " + passwd + ": " + e.getMessage());
    }
    return entries;
  }

  private static String[] find(List<String[]> entries, int field, String value) {
    for (String[] e : entries) {
      if (e[field].equals(value)) {
        return e;
      }
    }
    return null;
  }

  private static long parseId(String s) {
    try {
      return Long.parseLong(s);
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  /** What {@link #probe} reads of its own /proc/self/status once it runs as the user. */
  static final String PROBE_PATTERN = "^(Uid|Gid|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):";
  private static final String NO_CAPS = "0000000000000000";

  /**
   * Switches to the user once, the way every command will start ({@code launch}, e.g. env's
   * change of directory, then grep reading its own /proc/self/status), and fails with one line
   * if that is impossible (the agent is not root, or lacks CAP_SETUID or CAP_SETGID: setpriv
   * says why) or leaves the command anything: setpriv 2.38 exits 0 without emptying the
   * bounding set when the agent lacks CAP_SETPCAP, so the result is checked, not the status.
   */
  void probe(List<String> launch, String grep) {
    List<String> argv = new ArrayList<>(launch);
    argv.addAll(List.of(grep, "-E", PROBE_PATTERN, "/proc/self/status"));
    String out;
    int status;
    try {
      Process p = helper(argv).redirectErrorStream(true).start();
      out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
      if (!p.waitFor(10, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IllegalStateException("--command-user: setpriv did not finish within 10 s");
      }
      status = p.exitValue();
    } catch (IOException e) {
      throw new IllegalStateException("--command-user: cannot run " + prefix.get(0) + ": " + e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("--command-user: interrupted while checking the user switch");
    }
    String wrong = status != 0 ? (out.isEmpty() ? "setpriv exit status " + status : out.replace('\n', ' '))
        : leftOver(out);
    if (wrong != null) {
      throw new IllegalStateException("--command-user " + spec + ": the agent cannot switch to uid " + uid
          + " (" + wrong + "); the agent must run as root with CAP_SETUID, CAP_SETGID and CAP_SETPCAP");
    }
  }

  /** What the probe's status lines show the command would keep, or null if they are as they must be. */
  String leftOver(String statusLines) {
    java.util.Map<String, String> seen = new java.util.HashMap<>();
    for (String line : statusLines.split("\n")) {
      int colon = line.indexOf(':');
      if (colon > 0) {
        seen.put(line.substring(0, colon), line.substring(colon + 1).trim().replaceAll("\\s+", " "));
      }
    }
    List<String> wrong = new ArrayList<>();
    String uids = uid + " " + uid + " " + uid + " " + uid;
    String gids = gid + " " + gid + " " + gid + " " + gid;
    if (!uids.equals(seen.get("Uid"))) {
      wrong.add("Uid " + seen.get("Uid"));
    }
    if (!gids.equals(seen.get("Gid"))) {
      wrong.add("Gid " + seen.get("Gid"));
    }
    for (String caps : List.of("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")) {
      if (!NO_CAPS.equals(seen.get(caps))) {
        wrong.add(caps + " " + seen.get(caps));
      }
    }
    if (!"1".equals(seen.get("NoNewPrivs"))) {
      wrong.add("NoNewPrivs " + seen.get("NoNewPrivs"));
    }
    return wrong.isEmpty() ? null : "it would keep " + String.join(", ", wrong);
  }

  /**
   * Gives a workspace directory the agent made itself to this user, so commands can write there.
   *
   * @throws IllegalStateException if the agent may not change its owner (no CAP_CHOWN)
   */
  void adopt(Path workspace) {
    try {
      // rwxr-xr-x before the owner changes (then only CAP_FOWNER could): the agent, which cannot
      // search the user's directories otherwise, still sees what is in the workspace itself.
      Files.setPosixFilePermissions(workspace, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
      Files.setAttribute(workspace, "unix:gid", (int) gid, LinkOption.NOFOLLOW_LINKS);
      Files.setAttribute(workspace, "unix:uid", (int) uid, LinkOption.NOFOLLOW_LINKS);
    } catch (IOException | UnsupportedOperationException e) {
      throw new IllegalStateException("--command-user: cannot give the new workspace " + workspace + " to uid " + uid
          + " (" + e.getMessage() + "); pass --workspace with a directory that user owns");
    }
  }

  /**
   * Whether this user may create files in {@code dir}, asked of the kernel by {@code test -w} run
   * as the user (so supplementary groups and ACLs count).
   */
  boolean canWrite(Path dir) {
    String d = dir.toString();
    try {
      Process p = helper(List.of("test", "-d", d, "-a", "-w", d, "-a", "-x", d)).redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
      if (!p.waitFor(10, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return false;
      }
      return p.exitValue() == 0;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /**
   * A helper process that runs {@code argv} as this user, with stdin from /dev/null and an
   * environment of only PATH and LC_ALL: the agent's own environment (its token) must not be
   * readable in /proc by the commands, which run as the same user.
   */
  public ProcessBuilder helper(List<String> argv) {
    List<String> cmd = new ArrayList<>(prefix);
    cmd.addAll(argv);
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
        .directory(new File("/"));
    var env = pb.environment();
    String path = env.get("PATH");
    env.clear();
    env.put("PATH", path == null ? ProcessGroups.DEFAULT_PATH : path);
    env.put("LC_ALL", "C");
    return pb;
  }

  /** {@code setpriv ... --}: what a command line is prefixed with to run as this user. */
  List<String> prefix() {
    return prefix;
  }

  /** The value given to {@code --command-user}. */
  public String spec() {
    return spec;
  }

  /** The user's name in /etc/passwd, or null when it has no entry. */
  public String name() {
    return name;
  }

  public long uid() {
    return uid;
  }

  public long gid() {
    return gid;
  }

  /** HOME for commands: the passwd entry's home directory, or {@value #NO_HOME} without an entry. */
  public String home() {
    return home;
  }

  @Override
  public String toString() {
    return (name != null ? name + " " : "") + "(uid " + uid + ", gid " + gid + ")";
  }
}
