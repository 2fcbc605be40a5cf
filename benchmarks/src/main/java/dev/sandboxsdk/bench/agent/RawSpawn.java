package dev.sandboxsdk.bench.agent;

import dev.sandboxsdk.bench.Procs;
import dev.sandboxsdk.bench.Svg;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Part 1 of {@link AgentBench}: raw {@code ProcessBuilder(cmd).start().waitFor()} in this JVM
 * and, with {@code --raw-spawn-only}, in child JVMs of this program with other launch mechanisms.
 */
final class RawSpawn {
  private RawSpawn() {}

  /** Measures the raw spawns in this JVM (and in child JVMs unless skipped); returns {@code true}'s figures. */
  static Stats measure(AgentBench b) throws Exception {
    AgentOptions o = b.o;
    AgentBench.say("");
    AgentBench.say("[1] raw ProcessBuilder(cmd).start().waitFor(), warm-up %d, %d samples", o.warmup, o.calls);
    long[] rawTrueSamples = rawSpawn(List.of("true"), o.warmup, o.calls);
    Stats rawTrue = Stats.of(rawTrueSamples);
    Svg.percentileSeries(b.latencyPlot, "raw ProcessBuilder(\"true\") in the bench JVM (the floor)", rawTrueSamples, true);
    AgentBench.say("  true           in bench JVM, %s: %s", launchMechanism(), rawTrue.line());
    b.sum("raw spawn `true`, bench JVM, default (POSIX_SPAWN)   : %s", rawTrue.line());
    b.rawSetsid = Stats.of(rawSpawn(List.of("setsid", "true"), o.warmup, o.calls));
    AgentBench.say("  setsid true    in bench JVM (the agent's launcher): %s", b.rawSetsid.line());
    b.sum("raw spawn `setsid true`, bench JVM                  : %s", b.rawSetsid.line());
    b.rawSh = Stats.of(rawSpawn(List.of("setsid", "/bin/sh", "-c", "true"), o.warmup, o.calls));
    AgentBench.say("  setsid sh -c true in bench JVM (agent's shell path): %s", b.rawSh.line());
    b.sum("raw spawn `setsid /bin/sh -c true`, bench JVM       : %s", b.rawSh.line());
    if (!o.skipRawChildren) {
      Stats rawVfork = Stats.of(rawSpawnInChildJvm(o, List.of("-Djdk.lang.Process.launchMechanism=VFORK")));
      AgentBench.say("  true           in child JVM, VFORK: %s", rawVfork.line());
      b.sum("raw spawn `true`, child JVM, launchMechanism=VFORK  : %s", rawVfork.line());
      Stats rawChildDefault = Stats.of(rawSpawnInChildJvm(o, List.of()));
      AgentBench.say("  true           in child JVM, default: %s", rawChildDefault.line());
      b.sum("raw spawn `true`, child JVM, default (POSIX_SPAWN)  : %s", rawChildDefault.line());
    }
    return rawTrue;
  }

  static long[] rawSpawn(List<String> command, int warmup, int n) throws Exception {
    for (int i = 0; i < warmup; i++) {
      spawnOnce(command);
    }
    long[] samples = new long[n];
    for (int i = 0; i < n; i++) {
      long t0 = System.nanoTime();
      spawnOnce(command);
      samples[i] = System.nanoTime() - t0;
    }
    return samples;
  }

  static void spawnOnce(List<String> command) throws Exception {
    int rc = new ProcessBuilder(command).start().waitFor();
    if (rc != 0) {
      throw new IllegalStateException(command + " exited with " + rc);
    }
  }

  static String launchMechanism() {
    String m = System.getProperty("jdk.lang.Process.launchMechanism");
    return m != null ? m : "default (POSIX_SPAWN via jspawnhelper on Linux, JDK 17)";
  }

  /** Child-JVM mode: measure raw spawns of `true` and print the samples on one line. */
  static void rawSpawnChild(AgentOptions o) throws Exception {
    long[] s = rawSpawn(List.of("true"), o.warmup, o.calls);
    StringBuilder sb = new StringBuilder("RAW_SPAWN_SAMPLES_NS ");
    sb.append(launchMechanism().replace(' ', '_')).append(' ');
    for (int i = 0; i < s.length; i++) {
      if (i > 0) {
        sb.append(',');
      }
      sb.append(s[i]);
    }
    System.out.println(sb);
  }

  /** The command that re-runs this program. */
  static List<String> selfCommand(AgentOptions o) {
    if (o.self != null) {
      return List.of(o.self);
    }
    return List.of("-cp", System.getProperty("java.class.path"), AgentBench.class.getName());
  }

  static long[] rawSpawnInChildJvm(AgentOptions o, List<String> jvmOpts) throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add(Procs.javaBin());
    cmd.addAll(jvmOpts);
    cmd.addAll(selfCommand(o));
    cmd.addAll(List.of("--raw-spawn-only", "--warmup", String.valueOf(o.warmup), "--calls", String.valueOf(o.calls)));
    Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    String samples = null;
    try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
      String line;
      while ((line = r.readLine()) != null) {
        if (line.startsWith("RAW_SPAWN_SAMPLES_NS ")) {
          samples = line;
        }
      }
    }
    if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0 || samples == null) {
      throw new IllegalStateException("child JVM " + cmd + " failed");
    }
    String[] parts = samples.split(" ");
    String[] nums = parts[2].split(",");
    long[] out = new long[nums.length];
    for (int i = 0; i < nums.length; i++) {
      out[i] = Long.parseLong(nums[i]);
    }
    return out;
  }

}
