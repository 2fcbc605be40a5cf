package dev.sandboxsdk.agent;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Tells an operator who started the agent with {@code java -jar} and no heap limit what that
 * costs. A JVM cannot choose its own heap once it runs, and re-executing itself with other flags
 * would double the start-up time, so the agent only warns; the recommended flags are the ones
 * {@code LocalSandbox} and the container image use (README, "Run the agent on its own").
 */
final class HeapAdvice {
  /** The flags the README recommends, as {@code LocalSandbox} passes them. */
  static final String RECOMMENDED = "-XX:+UseSerialGC -Xss512k -Xms8m -Xmx512m -XX:-UsePerfData";
  /** Options that set the heap's maximum one way or another. */
  private static final List<String> LIMITS = List.of("-Xmx", "-XX:MaxHeapSize=", "-XX:MaxRAMPercentage=",
      "-XX:MaxRAM=", "-XX:MaxRAMFraction=");
  /** The environment variables the java launcher or the JVM take options from. */
  private static final List<String> OPTION_VARIABLES = List.of("JDK_JAVA_OPTIONS", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS");
  /** Up to this the JVM's default heap is no worse than the recommended one. */
  private static final long SMALL_DEFAULT = 512L << 20;

  private HeapAdvice() {}

  /**
   * The warning to log, or null: when none of {@code options} limits the heap and the JVM's
   * default maximum ({@code maxHeap}, a quarter of the machine's memory) is above 512 MiB.
   */
  static String check(List<String> options, long maxHeap) {
    for (String o : options) {
      for (String limit : LIMITS) {
        if (o.startsWith(limit)) {
          return null;
        }
      }
    }
    if (maxHeap <= SMALL_DEFAULT) {
      return null;
    }
    long budget = dev.sandboxsdk.agent.process.OutputBudget.resolve(0);
    return "the JVM runs without a heap limit, so it takes its defaults: a maximum heap of " + (maxHeap >> 20)
        + " MiB (a quarter of this machine's memory) and a large initial heap, which the agent's memory then"
        + " grows into (hundreds of MiB after a few thousand requests), and an output budget of " + (budget >> 20)
        + " MiB. Start it with java " + RECOMMENDED + " -jar container-agent.jar ... to keep it small"
        + " (README, \"Run the agent on its own\"; docs/performance.md, \"Memory and start-up\")";
  }

  /**
   * The JVM options this process was started with, as far as the launcher saw them: the command
   * line ({@code /proc/self/cmdline}; the agent's own options start with {@code --} and never
   * match) and the variables the launcher and the JVM read options from.
   */
  static List<String> jvmOptions() {
    List<String> out = new ArrayList<>();
    try {
      String cmdline = new String(Files.readAllBytes(Path.of("/proc/self/cmdline")), StandardCharsets.UTF_8);
      out.addAll(List.of(cmdline.split("\0")));
    } catch (IOException | RuntimeException e) {
      // not Linux: the variables below still count
    }
    Map<String, String> env = System.getenv();
    for (String name : OPTION_VARIABLES) {
      String value = env.get(name);
      if (value != null) {
        out.addAll(List.of(value.trim().split("\\s+")));
      }
    }
    return out;
  }
}
