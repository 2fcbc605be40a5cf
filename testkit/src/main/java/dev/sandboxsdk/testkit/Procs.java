package dev.sandboxsdk.testkit;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * Looks at real processes through /proc, the way an operator would: the tests use it to prove that
 * a process the agent or the SDK says it killed is really gone.
 */
public final class Procs {
  private Procs() {}

  /** True if the pid exists and is neither a zombie nor dead. */
  public static boolean alive(long pid) {
    String[] f = stat(pid);
    return f != null && !f[0].equals("Z") && !f[0].equals("X");
  }

  /** The pids among {@code pids} that are still alive. */
  public static List<Long> aliveAmong(Collection<Long> pids) {
    List<Long> out = new ArrayList<>();
    for (long pid : pids) {
      if (alive(pid)) {
        out.add(pid);
      }
    }
    return out;
  }

  /** Pids of the live (neither zombie nor dead) members of a process group. */
  public static List<Long> groupMembers(long pgid) {
    List<Long> members = new ArrayList<>();
    try (DirectoryStream<Path> dirs = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
      for (Path dir : dirs) {
        long pid = Long.parseLong(dir.getFileName().toString());
        String[] f = stat(pid);
        if (f != null && !f[0].equals("Z") && !f[0].equals("X") && Long.parseLong(f[2]) == pgid) {
          members.add(pid);
        }
      }
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    return members;
  }

  /**
   * Pids of live processes whose command line, arguments joined by spaces, contains {@code text}
   * (a tag such as {@code sleep 812345.3} or a workspace path), so a test never mistakes another
   * program's processes for its own.
   */
  public static List<Long> withCommandLineContaining(String text) {
    List<Long> found = new ArrayList<>();
    try (DirectoryStream<Path> dirs = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
      for (Path dir : dirs) {
        long pid = Long.parseLong(dir.getFileName().toString());
        if (cmdline(pid).contains(text) && alive(pid)) {
          found.add(pid);
        }
      }
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    return found;
  }

  /** The command line with spaces between arguments, or "" if the process is gone. */
  public static String cmdline(long pid) {
    try {
      byte[] b = Files.readAllBytes(Path.of("/proc", Long.toString(pid), "cmdline"));
      return new String(b, StandardCharsets.ISO_8859_1).replace('\0', ' ').trim();
    } catch (IOException | RuntimeException gone) {
      return "";
    }
  }

  /**
   * Reads a pid that a command wrote to a file ({@code echo $$ > file}), waiting until the file
   * holds a whole line; fails with an {@link AssertionError} if none comes within {@code timeout}.
   */
  public static long readPid(Path file, Duration timeout) throws InterruptedException {
    long[] pid = {-1};
    boolean found = Await.until(timeout, () -> {
      try {
        String s = Files.readString(file, StandardCharsets.US_ASCII);
        if (s.endsWith("\n") && !s.isBlank()) {
          pid[0] = Long.parseLong(s.strip());
          return true;
        }
      } catch (IOException | NumberFormatException notYet) {
        // not written yet
      }
      return false;
    });
    if (!found) {
      throw new AssertionError("no pid appeared in " + file + " within " + timeout);
    }
    return pid[0];
  }

  /** Fields after "(comm)": state, ppid, pgrp, ...; null when the process is gone. */
  private static String[] stat(long pid) {
    try {
      String s = Files.readString(Path.of("/proc", Long.toString(pid), "stat"), StandardCharsets.ISO_8859_1);
      return s.substring(s.lastIndexOf(')') + 2).split(" ");
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }
}
