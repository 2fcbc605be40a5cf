package dev.sandboxsdk.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/** Process helpers the benchmarks share: the java binary, JVM options, /proc/PID/status, temporary trees. */
public final class Procs {
  private Procs() {}

  /** The java binary of the running JVM. */
  public static String javaBin() {
    return Path.of(System.getProperty("java.home"), "bin", "java").toString();
  }

  /** Options given as one string ({@code "-Xmx64m -XX:+UseSerialGC"}), split at white space. */
  public static List<String> splitOpts(String s) {
    List<String> out = new ArrayList<>();
    for (String part : s.trim().split("\\s+")) {
      if (!part.isEmpty()) {
        out.add(part);
      }
    }
    return out;
  }

  /** The fields of /proc/PID/status ({@code "VmRSS" -> "1234 kB"}); empty if the process is gone. */
  public static Map<String, String> status(long pid) {
    Map<String, String> m = new LinkedHashMap<>();
    try {
      for (String l : Files.readAllLines(Path.of("/proc/" + pid + "/status"), StandardCharsets.ISO_8859_1)) {
        int c = l.indexOf(':');
        if (c > 0) {
          m.put(l.substring(0, c), l.substring(c + 1).strip());
        }
      }
    } catch (IOException e) {
      // gone
    }
    return m;
  }

  /** The number at the start of a status value ({@code "1234 kB"} gives 1234); -1 for null. */
  public static long kib(String value) {
    return value == null ? -1 : Long.parseLong(value.split("\\s+")[0]);
  }

  /** Deletes a directory tree, best effort. */
  public static void deleteTree(Path root) {
    try (Stream<Path> s = Files.walk(root)) {
      s.sorted(Comparator.reverseOrder()).forEach(p -> {
        try {
          Files.deleteIfExists(p);
        } catch (IOException ignored) {
          // best effort
        }
      });
    } catch (IOException ignored) {
      // best effort
    }
  }
}
