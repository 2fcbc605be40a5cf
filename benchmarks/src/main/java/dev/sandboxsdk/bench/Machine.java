package dev.sandboxsdk.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/** What the benchmarks report about the machine they ran on, from /proc. */
public final class Machine {
  private Machine() {}

  /** The content of /proc/loadavg, stripped; "?" if it cannot be read. */
  public static String loadAverage() {
    try {
      return Files.readString(Path.of("/proc/loadavg")).strip();
    } catch (IOException e) {
      return "?";
    }
  }

  /** The 1, 5 and 15 minute load averages ({@code "0.52 0.61 0.70"}); "unknown" if they cannot be read. */
  public static String loadAverages() {
    String[] f = loadAverage().split(" ");
    return f.length < 3 ? "unknown" : f[0] + " " + f[1] + " " + f[2];
  }

  /** The CPU's model name from /proc/cpuinfo; "?" if unknown. */
  public static String cpuModel() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
        if (line.startsWith("model name")) {
          return line.substring(line.indexOf(':') + 1).trim();
        }
      }
    } catch (IOException ignored) {
      // unknown
    }
    return "?";
  }

  /** MemTotal from /proc/meminfo, as {@code "15.6 GiB"}; "?" if unknown. */
  public static String memTotal() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
        if (line.startsWith("MemTotal:")) {
          return String.format(Locale.ROOT, "%.1f GiB", Procs.kib(line.substring(9).strip()) / 1024.0 / 1024.0);
        }
      }
    } catch (IOException ignored) {
      // unknown
    }
    return "?";
  }
}
