package dev.sandboxsdk.agent.process;

import dev.sandboxsdk.agent.AgentException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Signals whole process groups. The JDK can only send SIGTERM/SIGKILL to single pids, so the agent
 * runs kill(1) with negative pids, batching many groups into one invocation.
 */
final class ProcessGroups {
  private static final Logger log = LoggerFactory.getLogger(ProcessGroups.class);
  private static final Path PROC = Path.of("/proc");
  /** Where programs are looked up when PATH is unset. */
  static final String DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin";

  /** The most environ files one scan helper is given, well below the kernel's argument limit. */
  private static final int SCAN_BATCH = 4096;

  private final String killBinary;
  /** Runs the marker scan as that user; null to read /proc in the agent itself. */
  private final CommandUser scanAs;
  private final String grepBinary;
  /** Whether {@link Libc} is loaded: signals then go out with kill(2) instead of a kill(1) spawn. */
  private volatile boolean libc;

  ProcessGroups(String killBinary) {
    this(killBinary, null, null);
  }

  /**
   * @param scanAs the command user, whose processes' environ a root agent without
   *     CAP_DAC_READ_SEARCH or CAP_SYS_PTRACE cannot read; the scan then runs as that user
   * @param grepBinary grep(1), needed when {@code scanAs} is set
   */
  ProcessGroups(String killBinary, CommandUser scanAs, String grepBinary) {
    this.killBinary = killBinary;
    this.scanAs = scanAs;
    this.grepBinary = grepBinary;
  }

  /**
   * Signals with kill(2) from now on: no spawn per signal (one that, through the JDK, closes every
   * descriptor of the agent one by one), and it works without a free process slot.
   */
  void useLibc() {
    libc = true;
    probeWithKill = true;
  }

  /** Whether {@link #existing} asks the kernel with kill(2) and signal 0 instead of scanning /proc. */
  private static volatile boolean probeWithKill;

  /**
   * Those of {@code pgids} that still have a member, zombies included (a zombie holds its pid, and
   * so its group number, until it is reaped). With libc loaded the kernel answers for each group
   * at once (kill(2) with signal 0: ESRCH once no task is left in it); a /proc scan can miss the
   * members of a group that forks and exits faster than the scan reads (a fork bomb under load).
   */
  static List<Long> existing(Collection<Long> pgids) {
    List<Long> found = new ArrayList<>();
    if (probeWithKill) {
      for (long pgid : pgids) {
        if (pgid > 1 && (Libc.kill((int) -pgid, 0) == 0 || Libc.errno() != Libc.ESRCH)) {
          found.add(pgid);
        }
      }
      return found;
    }
    Set<Long> groups = groupsWithAnyMember();
    for (long pgid : pgids) {
      if (groups.contains(pgid)) {
        found.add(pgid);
      }
    }
    return found;
  }

  /** kill(2) for each id ({@code group}: to its process group); ids already gone are ignored. */
  private static void killDirectly(Collection<Long> ids, Signal signal, boolean group) {
    for (long id : ids) {
      if (id > 1) { // never 0, 1, -1: "my group", init, "everyone"
        Libc.kill((int) (group ? -id : id), signal.number());
      }
    }
  }

  /** Sends {@code signal} to every group in {@code pgids}; groups that are already gone are ignored. */
  void signal(Collection<Long> pgids, Signal signal) {
    if (libc) {
      killDirectly(pgids, signal, true);
      return;
    }
    if (!run(killCommand(killBinary, pgids, signal), signal)) {
      Set<Long> groups = new HashSet<>(pgids);
      List<Long> members = new ArrayList<>();
      forEachProcess((pid, dir) -> {
        if (groups.contains(liveGroupOf(dir))) {
          members.add(pid);
        }
      });
      signalWithoutFork(members, signal);
    }
  }

  /** Sends {@code signal} to single processes (not their groups); pids already gone are ignored. */
  void signalProcesses(Collection<Long> pids, Signal signal) {
    if (libc) {
      killDirectly(pids, signal, false);
      return;
    }
    if (!run(killCommand(killBinary, pids, signal, ""), signal)) {
      signalWithoutFork(pids, signal);
    }
  }

  /**
   * When kill(1) cannot be started (no process or thread left under a pids limit: a fork bomb),
   * the JDK's own kill(2) still works without a fork: SIGKILL and SIGTERM only, which is what
   * stopping a bomb needs. Other signals are not delivered then (logged).
   */
  private static void signalWithoutFork(Collection<Long> pids, Signal signal) {
    if (signal != Signal.SIGKILL && signal != Signal.SIGTERM) {
      log.warn("cannot deliver {} to {} processes without kill(1)", signal, pids.size());
      return;
    }
    for (long pid : pids) {
      ProcessHandle.of(pid).ifPresent(h -> {
        if (signal == Signal.SIGKILL) {
          h.destroyForcibly();
        } else {
          h.destroy();
        }
      });
    }
  }

  /** Runs kill(1); false if it could not be started at all. */
  private boolean run(List<String> cmd, Signal signal) {
    if (cmd.isEmpty()) {
      return true;
    }
    try {
      Process p = new ProcessBuilder(cmd)
          .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
          .redirectOutput(ProcessBuilder.Redirect.DISCARD)
          .redirectError(ProcessBuilder.Redirect.DISCARD)
          .start();
      if (!p.waitFor(10, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        log.warn("kill(1) did not finish within 10 s");
      }
    } catch (IOException | OutOfMemoryError e) {
      // IOException: fork failed (EAGAIN under a pids limit); OutOfMemoryError: no native thread for the reaper
      log.warn("cannot run {} to deliver {} ({}); signalling directly", killBinary, signal, e.toString());
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return true;
  }

  /**
   * The kill(1) command line that signals {@code pgids}, or an empty list if there is none to
   * signal. The signal goes in the {@code -TERM} form: procps-ng 4.0's kill, given {@code -s TERM
   * -- -50}, silently skips a first group number below about 100 (read as an option), and in a
   * container the first commands get exactly such small pids.
   */
  static List<String> killCommand(String killBinary, Collection<Long> pgids, Signal signal) {
    return killCommand(killBinary, pgids, signal, "-");
  }

  /** {@code kill -SIG -- <prefix>id ...}: {@code "-"} addresses groups, {@code ""} single processes. */
  private static List<String> killCommand(String killBinary, Collection<Long> ids, Signal signal, String prefix) {
    List<String> cmd = new ArrayList<>(ids.size() + 3);
    cmd.add(killBinary);
    cmd.add("-" + signal.shortName());
    cmd.add("--");
    for (long id : ids) {
      if (id > 1) { // never -1 (every process) or -0 (our own group)
        cmd.add(prefix + id);
      }
    }
    return cmd.size() == 3 ? List.of() : cmd;
  }

  /** The process groups that still have at least one member that is not a zombie. */
  static Set<Long> liveGroups() {
    Set<Long> groups = new HashSet<>();
    forEachProcess((pid, dir) -> {
      long pgid = liveGroupOf(dir);
      if (pgid >= 0) {
        groups.add(pgid);
      }
    });
    return groups;
  }

  /**
   * The process groups that have any member left, zombies included (a zombie holds its pid until
   * it is reaped).
   */
  static Set<Long> groupsWithAnyMember() {
    Set<Long> groups = new HashSet<>();
    forEachProcess((pid, dir) -> {
      long pgid = groupOf(dir, true);
      if (pgid >= 0) {
        groups.add(pgid);
      }
    });
    return groups;
  }

  /** Calls {@code action} with the pid and {@code /proc/<pid>} directory of every process. */
  private static void forEachProcess(java.util.function.BiConsumer<Long, Path> action) {
    try (DirectoryStream<Path> dirs = Files.newDirectoryStream(PROC)) {
      for (Path dir : dirs) {
        String name = dir.getFileName().toString();
        if (name.isEmpty() || !Character.isDigit(name.charAt(0))) {
          continue;
        }
        try {
          action.accept(Long.parseLong(name), dir);
        } catch (NumberFormatException ignored) {
          // not a process directory
        }
      }
    } catch (IOException e) {
      log.warn("cannot scan /proc: {}", e.toString());
    }
  }

  /** A live process that carries a run marker: its pid, its process group and its marker value. */
  record Marked(long pid, long pgid, String mark) {}

  /**
   * Every live (not zombie) process whose environment holds {@code name=prefix...}, where
   * {@code prefix} and the rest of the value are made of hex digits and dots (the run marker).
   * In command-user mode the environ files are read by a helper running as that user.
   */
  List<Marked> find(String name, String prefix) {
    if (scanAs == null) {
      return marked(name, prefix);
    }
    if (libc) {
      List<Marked> found = markedWithUsersFileIds(name, prefix);
      if (found != null) {
        return found;
      }
    }
    return markedAsUser(name, prefix);
  }

  /**
   * {@link #marked} for processes of the command user, read by the agent itself on this thread
   * with its file-system uid and gid switched to the user's for the scan (they are per thread,
   * and the kernel checks a reader of /proc/<pid>/environ by them, as it would the user's own
   * grep). No helper process and no new thread: kill-all and a timeout's kill scan this way while
   * a fork bomb holds every process slot of the container. Null if the switch did not take
   * (no CAP_SETUID or CAP_SETGID); the caller then runs the helper.
   */
  private List<Marked> markedWithUsersFileIds(String name, String prefix) {
    try {
      return FileIdentity.as(scanAs.uid(), scanAs.gid(), () -> marked(name, prefix));
    } catch (AgentException | IOException e) {
      log.debug("cannot switch the file-system ids to {}; scanning with a helper: {}", scanAs, e.getMessage());
      return null;
    }
  }

  /**
   * Every live (not zombie) process whose environment holds {@code name=prefix...}, found in
   * {@code /proc/<pid>/environ} (readable for the agent's own user's processes).
   */
  static List<Marked> marked(String name, String prefix) {
    byte[] needle = (name + "=" + prefix).getBytes(StandardCharsets.ISO_8859_1);
    List<Marked> found = new ArrayList<>();
    long self = ProcessHandle.current().pid();
    forEachProcess((pid, dir) -> {
      byte[] environ;
      try {
        environ = Files.readAllBytes(dir.resolve("environ"));
      } catch (IOException | RuntimeException unreadable) {
        return; // another user's process, or it exited while we looked
      }
      String mark = find(environ, needle, name.length() + 1);
      long pgid = mark == null ? -1 : liveGroupOf(dir);
      if (pid != self && pgid > 0) {
        found.add(new Marked(pid, pgid, mark));
      }
    });
    return found;
  }

  /**
   * {@link #marked} for processes of the command user: grep, run as that user, reads the environ
   * of every process whose /proc directory that user owns (a process that made itself
   * non-dumpable is owned by root there and unreadable to anyone without CAP_SYS_PTRACE) and
   * prints {@code /proc/<pid>/environ:NAME=VALUE}, NUL-terminated; the agent reads the groups
   * from /proc/<pid>/stat, which anyone may.
   */
  private List<Marked> markedAsUser(String name, String prefix) {
    List<String> files = new ArrayList<>();
    forEachProcess((pid, dir) -> {
      try {
        Object owner = Files.getAttribute(dir, "unix:uid", java.nio.file.LinkOption.NOFOLLOW_LINKS);
        if (owner instanceof Integer uid && Integer.toUnsignedLong(uid) == scanAs.uid()) {
          files.add(dir.resolve("environ").toString());
        }
      } catch (IOException | RuntimeException gone) {
        // exited while we looked
      }
    });
    List<Marked> found = new ArrayList<>();
    String pattern = "^" + name + "=" + prefix.replace(".", "\\.") + "[0-9a-f.]*";
    for (int from = 0; from < files.size(); from += SCAN_BATCH) {
      List<String> argv = new ArrayList<>(List.of(grepBinary, "-s", "-a", "-z", "-o", "-H", "-e", pattern, "--"));
      argv.addAll(files.subList(from, Math.min(files.size(), from + SCAN_BATCH)));
      String out;
      try {
        Process p = scanAs.helper(argv).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        out = new String(p.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
        if (!p.waitFor(10, TimeUnit.SECONDS)) {
          p.destroyForcibly();
        }
      } catch (IOException | OutOfMemoryError e) {
        // OutOfMemoryError: no native thread for the JDK's process reaper (a pids limit)
        log.warn("cannot run {} as {} to find escaped processes: {}", grepBinary, scanAs, e.toString());
        return found;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return found;
      }
      for (String record : out.split("\0")) {
        // "/proc/<pid>/environ:NAME=VALUE"
        int colon = record.indexOf(":" + name + "=");
        if (!record.startsWith("/proc/") || colon < 0) {
          continue;
        }
        Path dir = Path.of(record.substring(0, colon)).getParent();
        try {
          long pid = Long.parseLong(dir.getFileName().toString());
          long pgid = liveGroupOf(dir);
          if (pgid > 0) {
            found.add(new Marked(pid, pgid, record.substring(colon + name.length() + 2)));
          }
        } catch (NumberFormatException ignored) {
          // not a process directory
        }
      }
    }
    return found;
  }

  /**
   * Every live process whose real uid is {@code uid} (from /proc/<pid>/status, which anyone may
   * read, even for a process that made itself non-dumpable), with its group; mark is null.
   */
  static List<Marked> ofUser(long uid) {
    List<Marked> found = new ArrayList<>();
    long self = ProcessHandle.current().pid();
    forEachProcess((pid, dir) -> {
      if (pid == self) {
        return;
      }
      try {
        for (String line : Files.readAllLines(dir.resolve("status"), StandardCharsets.ISO_8859_1)) {
          if (line.startsWith("Uid:")) {
            String[] ids = line.substring(4).trim().split("\\s+");
            if (Long.parseLong(ids[0]) == uid) {
              long pgid = liveGroupOf(dir);
              if (pgid > 0) {
                found.add(new Marked(pid, pgid, null));
              }
            }
            return;
          }
        }
      } catch (IOException | RuntimeException gone) {
        // exited while we looked
      }
    });
    return found;
  }

  /** The value of the variable whose {@code name=} prefix plus value prefix is {@code needle}, or null. */
  private static String find(byte[] environ, byte[] needle, int valueAt) {
    int start = 0;
    while (start < environ.length) {
      int end = start;
      while (end < environ.length && environ[end] != 0) {
        end++;
      }
      if (end - start >= needle.length && java.util.Arrays.equals(environ, start, start + needle.length, needle, 0, needle.length)) {
        return new String(environ, start + valueAt, end - start - valueAt, StandardCharsets.ISO_8859_1);
      }
      start = end + 1;
    }
    return null;
  }

  /** The process group of {@code /proc/<pid>}, or -1 if it is gone or a zombie. */
  private static long liveGroupOf(Path dir) {
    return groupOf(dir, false);
  }

  /** The process group of {@code /proc/<pid>}, or -1 if it is gone (or a zombie, unless {@code zombies}). */
  private static long groupOf(Path dir, boolean zombies) {
    String stat;
    try {
      stat = Files.readString(dir.resolve("stat"), StandardCharsets.ISO_8859_1);
    } catch (IOException | RuntimeException gone) {
      return -1; // exited while we looked
    }
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
    int close = stat.lastIndexOf(')');
    if (close < 0 || close + 2 >= stat.length()) {
      return -1;
    }
    String[] f = stat.substring(close + 2).split(" ", 4);
    if (f.length < 3 || !zombies && (f[0].equals("Z") || f[0].equals("X"))) {
      return -1;
    }
    try {
      return Long.parseLong(f[2]);
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  /** The SigIgn mask of this process (bit N-1 set when signal N is ignored), or 0 if unknown. */
  static long ignoredSignals() {
    try {
      for (String line : Files.readAllLines(PROC.resolve("self/status"), StandardCharsets.ISO_8859_1)) {
        if (line.startsWith("SigIgn:")) {
          return Long.parseUnsignedLong(line.substring(7).trim(), 16);
        }
      }
    } catch (IOException | NumberFormatException e) {
      log.debug("cannot read the signal mask: {}", e.toString());
    }
    return 0;
  }

  /** Finds an executable on the agent's PATH, or returns null. */
  static String which(String name, String path) {
    for (String dir : (path == null ? DEFAULT_PATH : path).split(":")) {
      if (dir.isEmpty()) {
        continue;
      }
      Path candidate = Path.of(dir, name);
      if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
        return candidate.toString();
      }
    }
    return null;
  }
}
