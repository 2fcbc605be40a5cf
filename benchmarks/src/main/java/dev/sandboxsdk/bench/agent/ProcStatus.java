package dev.sandboxsdk.bench.agent;

import dev.sandboxsdk.bench.Procs;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Stream;

/**
 * The agent's memory, threads and descriptors from /proc/PID/status and /proc/PID/fd, and the
 * CPU time and ignored signals of a process.
 */
record ProcStatus(long rssKb, long hwmKb, long anonKb, long fileKb, int threads, int fds) {
  static ProcStatus of(long pid) throws IOException {
    Map<String, String> f = Procs.status(pid);
    long rss = Procs.kib(f.get("VmRSS"));
    long hwm = Procs.kib(f.get("VmHWM"));
    long anon = Procs.kib(f.get("RssAnon"));
    long file = Procs.kib(f.get("RssFile"));
    int threads = (int) Procs.kib(f.get("Threads"));
    int fds;
    try (Stream<Path> s = Files.list(Path.of("/proc/" + pid + "/fd"))) {
      fds = (int) s.count();
    }
    return new ProcStatus(rss, hwm, anon, file, threads, fds);
  }

  String line() {
    return String.format(Locale.ROOT, "VmRSS %.1f MiB (anon %.1f, file %.1f), VmHWM %.1f MiB, threads %d, fds %d",
        rssKb / 1024.0, anonKb / 1024.0, fileKb / 1024.0, hwmKb / 1024.0, threads, fds);
  }

  static final double CLK_TCK = 100.0; // USER_HZ; 100 on every mainstream Linux build

  /** CPU seconds of a process (user+sys), or of its waited-for children (cutime+cstime). */
  static double cpuSeconds(long pid, boolean children) {
    try {
      String stat = Files.readString(Path.of("/proc/" + pid + "/stat"), StandardCharsets.ISO_8859_1);
      String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
      // f[0] is field 3 (state); utime=14, stime=15, cutime=16, cstime=17
      int base = children ? 16 : 14;
      return (Long.parseLong(f[base - 3]) + Long.parseLong(f[base - 2])) / CLK_TCK;
    } catch (IOException | RuntimeException e) {
      return Double.NaN;
    }
  }

  static double selfCpuSeconds() {
    return ProcessHandle.current().info().totalCpuDuration().map(d -> d.toNanos() / 1e9).orElse(Double.NaN);
  }

  /** The SigIgn mask of a process, "?" if unknown. */
  static String sigIgn(long pid) {
    return Procs.status(pid).getOrDefault("SigIgn", "?");
  }
}
