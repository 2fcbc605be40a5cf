package dev.sandboxsdk.bench.agent;

import java.util.List;

/** The command-line options of {@link AgentBench}. */
final class AgentOptions {
  static final String DEFAULT_TUNED_OPTS = "-XX:+UseSerialGC -Xss512k -Xms8m -Xmx512m -XX:-UsePerfData";

  String jar = "container-agent/target/container-agent.jar";
  int calls = 1000;
  int warmup = 200;
  long streamBytes = 268_435_456L;
  long randBytes = 100_000_000L;
  int processes = 1000;
  String tunedOpts = DEFAULT_TUNED_OPTS;
  String baseOpts = "";
  String agentArgs = "";
  int clients = 16;
  long idleMs = 2000;
  int startupRepeats = 4;
  int streamReps = 3;
  String tunedBench = "all"; // startup | exec | all
  boolean rawSpawnOnly;
  boolean skipStream;
  boolean skipRawChildren;
  boolean keep;
  boolean smoke;
  String plots = "target/bench-plots";
  String self;

  static AgentOptions parse(String[] args) {
    AgentOptions o = new AgentOptions();
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      switch (a) {
        case "--raw-spawn-only": o.rawSpawnOnly = true; break;
        case "--skip-stream": o.skipStream = true; break;
        case "--skip-raw-children": o.skipRawChildren = true; break;
        case "--keep-workspace": o.keep = true; break;
        case "--smoke": o.smokeSizes(); break;
        case "--help": case "-h": usage(); System.exit(0); break;
        default: {
          if (i + 1 >= args.length) {
            AgentBench.die("option " + a + " needs a value (see --help)");
          }
          String v = args[++i];
          switch (a) {
            case "--jar": o.jar = v; break;
            case "--calls": o.calls = Integer.parseInt(v); break;
            case "--warmup": o.warmup = Integer.parseInt(v); break;
            case "--stream-bytes": o.streamBytes = Long.parseLong(v); break;
            case "--rand-bytes": o.randBytes = Long.parseLong(v); break;
            case "--processes": o.processes = Integer.parseInt(v); break;
            case "--agent-jvm-opts": o.tunedOpts = v; break;
            case "--base-jvm-opts": o.baseOpts = v; break;
            case "--agent-args": o.agentArgs = v; break;
            case "--clients": o.clients = Integer.parseInt(v); break;
            case "--idle-ms": o.idleMs = Long.parseLong(v); break;
            case "--startup-repeats": o.startupRepeats = Integer.parseInt(v); break;
            case "--stream-reps": o.streamReps = Integer.parseInt(v); break;
            case "--tuned-bench": o.tunedBench = v; break;
            case "--self": o.self = v; break;
            case "--plots": o.plots = v; break;
            default: AgentBench.die("unknown option " + a + " (see --help)");
          }
        }
      }
    }
    if (!List.of("startup", "exec", "all").contains(o.tunedBench)) {
      AgentBench.die("--tuned-bench must be startup, exec or all");
    }
    return o;
  }

  /**
   * Seconds-long sizes so CI can run every part (CI runs it, so it cannot rot): results are still
   * verified (exit codes, byte counts, CRC-32), plots still written; the figures mean nothing.
   * Options after --smoke override these sizes.
   */
  void smokeSizes() {
    smoke = true;
    calls = 20;
    warmup = 5;
    streamBytes = 1 << 20;
    randBytes = 1_000_000;
    processes = 20;
    clients = 4;
    idleMs = 200;
    startupRepeats = 1;
    streamReps = 1;
    skipRawChildren = true;
  }

  static void usage() {
    System.out.println(String.join("\n",
        "Usage: bash benchmarks/scripts/agent.sh [options]",
        "  --jar PATH              agent jar (default container-agent/target/container-agent.jar)",
        "  --calls N               measured samples per latency series (default 1000)",
        "  --warmup N              warm-up iterations per latency series (default 200)",
        "  --stream-bytes N        bytes streamed from /dev/zero and from `yes` (default 268435456)",
        "  --rand-bytes N          size of the random file streamed with cat (default 100000000)",
        "  --processes N           concurrent background processes to hold (default 1000; 0 skips)",
        "  --agent-jvm-opts \"...\"  JVM options of the second agent (default \"" + DEFAULT_TUNED_OPTS + "\")",
        "  --base-jvm-opts \"...\"   JVM options of the first agent (default: none, i.e. JVM defaults)",
        "  --agent-args \"...\"      extra agent arguments for every agent, e.g. \"--spawn jdk\" (default none)",
        "  --clients N             concurrent clients for the second round of --processes starts (default 16)",
        "  --tuned-bench MODE      what runs against the second agent: startup | exec | all (default all)",
        "  --idle-ms N             idle time before the idle RSS reading (default 2000)",
        "  --startup-repeats N     extra agent launches per flag set for the start-up median (default 4)",
        "  --stream-reps N         repetitions of each streaming run; the median is reported (default 3)",
        "  --skip-stream           skip the streaming runs",
        "  --skip-raw-children     skip the child-JVM raw spawn runs",
        "  --keep-workspace        keep the temporary workspace and agent logs",
        "  --plots DIR             where the SVG plots go (default target/bench-plots)",
        "  --smoke                 seconds-long sizes (CI): 20 calls, 1 MiB streams, 20 processes, checks kept",
        "  --raw-spawn-only        (internal) only measure raw spawns in this JVM and print the samples"));
  }
}
