package dev.sandboxsdk.agent;

import dev.sandboxsdk.testkit.Procs;
import java.util.ArrayList;
import java.util.List;

/**
 * Finds a test's own processes by a tag in their command line ({@code sleep 812345.3}), so tests
 * never mistake another program's processes for theirs.
 */
final class Tagged {
  private Tagged() {}

  /** Live processes whose command line contains {@code tag}. */
  static List<Long> pids(String tag) {
    return Procs.withCommandLineContaining(tag);
  }

  /** Live {@code sleep} processes whose argument contains {@code tag}. */
  static List<Long> sleepPids(String tag) {
    List<Long> sleeps = new ArrayList<>();
    for (long pid : pids(tag)) {
      if (cmdline(pid).startsWith("sleep ")) {
        sleeps.add(pid);
      }
    }
    return sleeps;
  }

  static long sleeps(String tag) {
    return sleepPids(tag).size();
  }

  /** The one live sleep whose argument contains {@code text}. */
  static long pidOf(String text) {
    List<Long> found = sleepPids(text);
    if (found.size() != 1) {
      throw new IllegalStateException("expected one sleep with '" + text + "', found " + found);
    }
    return found.get(0);
  }

  /** The command line with spaces between arguments, or "" if the process is gone. */
  static String cmdline(long pid) {
    return Procs.cmdline(pid);
  }
}
