package dev.sandboxsdk.testkit;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BiPredicate;
import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * What this host's {@code /proc} says about a server process: descriptors, threads, RSS and live
 * descendants. The load and hostile-client tests of the agent and the MCP server check leaks with it.
 */
public final class ProcStats {
  private ProcStats() {}

  /** Entries of {@code /proc/<pid>/<dir>}: {@code "fd"} counts descriptors, {@code "task"} threads. */
  public static long count(long pid, String dir) {
    try (Stream<Path> s = Files.list(Path.of("/proc", Long.toString(pid), dir))) {
      return s.count();
    } catch (IOException e) {
      throw new IllegalStateException("no /proc/" + pid + "/" + dir, e);
    }
  }

  /** Open file descriptors of {@code pid}. */
  public static long fds(long pid) {
    return count(pid, "fd");
  }

  /** Threads of {@code pid}. */
  public static long threads(long pid) {
    return count(pid, "task");
  }

  /**
   * Names of the threads of {@code pid} with how many have each, digits in names folded to
   * {@code #} ({@code agent-io-#}), for leak checks that leave pools aside and for failure messages.
   */
  public static Map<String, Integer> threadNames(long pid) {
    Map<String, Integer> names = new TreeMap<>();
    try (Stream<Path> tasks = Files.list(Path.of("/proc", Long.toString(pid), "task"))) {
      tasks.forEach(t -> {
        try {
          names.merge(Files.readString(t.resolve("comm")).strip().replaceAll("[0-9]+", "#"), 1, Integer::sum);
        } catch (IOException e) {
          // the thread ended meanwhile
        }
      });
    } catch (IOException e) {
      throw new IllegalStateException("no /proc/" + pid + "/task", e);
    }
    return names;
  }

  /** Waits (up to about ten seconds) until the count of {@code pid}'s descriptors stops changing. */
  public static void awaitSteadyFds(long pid) throws InterruptedException {
    long last = -1;
    for (int i = 0; i < 40 && fds(pid) != last; i++) {
      last = fds(pid);
      Thread.sleep(250);
    }
  }

  /** The resident set size, in KiB ({@code VmRSS}). */
  public static long rssKib(long pid) {
    try {
      for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
        if (line.startsWith("VmRSS:")) {
          return Long.parseLong(line.replaceAll("[^0-9]", ""));
        }
      }
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    throw new IllegalStateException("no VmRSS for " + pid);
  }

  /** Live (not zombie) descendants of {@code root}, counted by command name, e.g. {@code {java=1, sh=1}}. */
  public static Map<String, Integer> descendantsByName(long root) {
    Map<Long, List<Long>> children = new HashMap<>();
    Map<Long, String> names = new HashMap<>();
    try (DirectoryStream<Path> dirs = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
      for (Path dir : dirs) {
        try {
          String stat = Files.readString(dir.resolve("stat"), StandardCharsets.ISO_8859_1);
          String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
          if (f[0].equals("Z") || f[0].equals("X")) {
            continue;
          }
          long pid = Long.parseLong(dir.getFileName().toString());
          names.put(pid, stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')')));
          children.computeIfAbsent(Long.parseLong(f[1]), k -> new ArrayList<>()).add(pid);
        } catch (IOException | RuntimeException gone) {
          // exited meanwhile
        }
      }
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    Map<String, Integer> found = new TreeMap<>();
    List<Long> todo = new ArrayList<>(children.getOrDefault(root, List.of()));
    while (!todo.isEmpty()) {
      long pid = todo.remove(todo.size() - 1);
      found.merge(names.getOrDefault(pid, "?"), 1, Integer::sum);
      todo.addAll(children.getOrDefault(pid, List.of()));
    }
    return java.util.Collections.unmodifiableMap(found);
  }

  /**
   * Waits for a server to settle after load, or before it (its idle baseline): polls {@code take}
   * every second, starting from {@code start}, until {@code settled} holds of a snapshot and how
   * many polls in a row found it {@code unchanged} from the one before (quiet polls); or
   * 90 s, longer than the 60 s the JDK's cached pools keep an idle thread. Returns the last snapshot.
   */
  public static <S> S settle(S start, Supplier<S> take, BiPredicate<S, S> unchanged, BiPredicate<S, Integer> settled)
      throws InterruptedException {
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
    S s = start;
    int quiet = 0;
    while (System.nanoTime() < until) {
      if (settled.test(s, quiet)) {
        return s;
      }
      Thread.sleep(1000);
      S previous = s;
      s = take.get();
      quiet = unchanged.test(previous, s) ? quiet + 1 : 0;
    }
    return s;
  }
}
