package dev.sandboxsdk.contract;

import dev.sandboxsdk.Command;
import dev.sandboxsdk.ExecOptions;
import dev.sandboxsdk.ExecResult;
import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.testkit.Await;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A {@link SandboxProbe} that asks through the sandbox itself, with {@link Sandbox#exec}: it reads
 * {@code /proc/<pid>/stat} and files inside the sandbox, so pids and paths are the sandbox's own
 * and it works wherever the Sandbox API reaches (a container, a remote host). It needs
 * {@code /bin/sh}, {@code cat} and a {@code /proc} in which the commands under inspection are
 * visible to the probe's commands (the same user, or no {@code hidepid}).
 *
 * <p>Each answer is one exec call. Every process listing includes the probe's own shell, and the
 * probe fails with {@link AssertionError} when that is missing, so an unreadable {@code /proc}
 * can never look like "every process is gone".
 *
 * <p>Use a client that the tests do not close or destroy; it may be the sandbox under test.
 */
public final class ExecProbe implements SandboxProbe {
  private static final Duration CALL_TIMEOUT = Duration.ofSeconds(10);
  // $1.. are "<pid>/stat" names; the shell's own stat comes first, to prove /proc is readable.
  private static final String STAT_SOME = "echo \"$$\"; cd /proc || exit 3; cat \"$$/stat\" \"$@\" 2>/dev/null; exit 0";
  private static final String STAT_ALL = "echo \"$$\"; cd /proc || exit 3; cat \"$$/stat\" [0-9]*/stat 2>/dev/null; exit 0";

  private final Sandbox sandbox;
  private final String workspace;

  /**
   * A probe that runs its commands through {@code sandbox}.
   *
   * @param workspace the workspace as commands in the sandbox see it; relative paths resolve against it
   */
  public ExecProbe(Sandbox sandbox, String workspace) {
    this.sandbox = Objects.requireNonNull(sandbox, "sandbox == null");
    this.workspace = Objects.requireNonNull(workspace, "workspace == null");
  }

  @Override
  public boolean exists(String path) {
    ExecResult r = sh("test -e \"$1\"", resolve(path));
    if (r.exitCode() == 0) {
      return true;
    }
    if (r.exitCode() == 1) {
      return false;
    }
    throw cannotTell("whether " + path + " exists", r);
  }

  @Override
  public long readPid(String path, Duration timeout) throws InterruptedException {
    String file = resolve(path);
    ExecResult[] last = {null};
    long[] pid = {-1};
    boolean found = Await.until(timeout, () -> {
      ExecResult r = sh("cat \"$1\"", file);
      last[0] = r;
      String s = r.stdout();
      if (r.exitCode() == 0 && s.endsWith("\n") && !s.isBlank()) {
        try {
          pid[0] = Long.parseLong(s.strip());
          return true;
        } catch (NumberFormatException notYet) {
          return false; // not a whole line yet
        }
      }
      return false;
    });
    if (!found) {
      throw new AssertionError("no pid appeared in " + file + " within " + timeout + " (last read: " + last[0] + ")");
    }
    return pid[0];
  }

  @Override
  public boolean alive(long pid) {
    return !aliveAmong(List.of(pid)).isEmpty();
  }

  @Override
  public List<Long> aliveAmong(Collection<Long> pids) {
    List<String> names = new ArrayList<>();
    for (long pid : pids) {
      names.add(pid + "/stat");
    }
    Map<Long, Stat> stats = stats(STAT_SOME, names);
    List<Long> out = new ArrayList<>();
    for (long pid : pids) {
      Stat s = stats.get(pid);
      if (s != null && s.isAlive()) {
        out.add(pid);
      }
    }
    return out;
  }

  @Override
  public List<Long> groupMembers(long pgid) {
    List<Long> members = new ArrayList<>();
    for (Stat s : stats(STAT_ALL, List.of()).values()) {
      if (s.pgrp == pgid && s.isAlive()) {
        members.add(s.pid);
      }
    }
    return members;
  }

  @Override
  public String realPath(String path) {
    ExecResult r = sh("cd -- \"$1\" && pwd -P", resolve(path));
    if (r.exitCode() != 0 || !r.stdout().endsWith("\n")) {
      throw cannotTell("the real path of " + path, r);
    }
    return r.stdout().substring(0, r.stdout().length() - 1);
  }

  @Override
  public String toString() {
    return "ExecProbe{" + sandbox + ", workspace=" + workspace + "}";
  }

  private String resolve(String path) {
    return path.startsWith("/") ? path : workspace + "/" + path;
  }

  /** The stat lines the script printed, by pid; fails unless the probe's own shell is among them. */
  private Map<Long, Stat> stats(String script, List<String> args) {
    ExecResult r = sh(script, args.toArray(new String[0]));
    List<String> lines = r.stdout().lines().toList();
    if (r.exitCode() != 0 || r.truncated() || lines.isEmpty()) {
      throw cannotTell("which processes are alive", r);
    }
    long self;
    try {
      self = Long.parseLong(lines.get(0).strip());
    } catch (NumberFormatException e) {
      throw cannotTell("which processes are alive (no shell pid first)", r);
    }
    Map<Long, Stat> stats = new HashMap<>();
    for (String line : lines.subList(1, lines.size())) {
      Stat s = Stat.parse(line);
      if (s == null) {
        throw cannotTell("which processes are alive (cannot parse '" + line + "')", r);
      }
      stats.put(s.pid, s);
    }
    if (!stats.containsKey(self)) {
      throw cannotTell("which processes are alive: the probe cannot read its own /proc/" + self + "/stat", r);
    }
    return stats;
  }

  private ExecResult sh(String script, String... args) {
    List<String> argv = new ArrayList<>(List.of("sh", "-c", script, "sh"));
    argv.addAll(List.of(args));
    ExecResult r = sandbox.exec(Command.of(argv), ExecOptions.builder().timeout(CALL_TIMEOUT).build());
    if (r.timedOut()) {
      throw cannotTell("anything: the probe command timed out", r);
    }
    return r;
  }

  private static AssertionError cannotTell(String what, ExecResult r) {
    return new AssertionError("the exec probe cannot tell " + what + ": exit " + r.exitCode() + ", stdout '"
        + abbreviate(r.stdout()) + "', stderr '" + abbreviate(r.stderr()) + "'");
  }

  private static String abbreviate(String s) {
    return s.length() <= 500 ? s : s.substring(0, 500) + "...";
  }

  /** What the probe needs of {@code /proc/<pid>/stat}: "pid (comm) state ppid pgrp ...". */
  private static final class Stat {
    final long pid;
    final String state;
    final long pgrp;

    private Stat(long pid, String state, long pgrp) {
      this.pid = pid;
      this.state = state;
      this.pgrp = pgrp;
    }

    boolean isAlive() {
      return !state.equals("Z") && !state.equals("X");
    }

    static Stat parse(String line) {
      int open = line.indexOf(" (");
      int close = line.lastIndexOf(')'); // comm may itself contain parentheses and spaces
      if (open <= 0 || close < open || close + 2 > line.length()) {
        return null;
      }
      String[] f = line.substring(close + 2).split(" ");
      if (f.length < 3) {
        return null;
      }
      try {
        return new Stat(Long.parseLong(line.substring(0, open)), f[0], Long.parseLong(f[2]));
      } catch (NumberFormatException e) {
        return null;
      }
    }
  }
}
