package dev.sandboxsdk.bench.agent;

import dev.sandboxsdk.bench.Procs;
import dev.sandboxsdk.bench.Svg;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Samples the VmRSS of the agent being benchmarked every 100 ms on its own thread, for the
 * "RSS over the run" plot; the benchmark marks where each phase starts.
 */
final class RssTimeline extends Thread {
  /** Where a phase of the run starts. */
  record Mark(double seconds, String label) {}

  final long t0 = System.nanoTime();
  final Map<String, List<double[]>> series = new LinkedHashMap<>(); // agent -> {seconds, MiB}
  final List<Mark> marks = new ArrayList<>();
  volatile long pid;
  volatile String agent;

  RssTimeline() {
    super("rss-sampler");
    setDaemon(true);
  }

  double now() {
    return (System.nanoTime() - t0) / 1e9;
  }

  synchronized void follow(String name, long agentPid) {
    agent = name;
    pid = agentPid;
    if (name != null) {
      series.computeIfAbsent(name, k -> new ArrayList<>());
    }
  }

  synchronized void mark(String label) {
    marks.add(new Mark(now(), label));
  }

  @Override
  public void run() {
    while (!isInterrupted()) {
      long p = pid;
      String name = agent;
      String vmRss = p != 0 ? Procs.status(p).get("VmRSS") : null; // null: the agent is gone or going
      if (vmRss != null) {
        double mib = Procs.kib(vmRss) / 1024.0;
        synchronized (this) {
          series.get(name).add(new double[] {now(), mib});
        }
      }
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  synchronized Svg.Plot plot(String run) {
    Svg.Plot plot = new Svg.Plot("Agent memory (VmRSS) over the benchmark run, sampled every 100 ms", run,
        "time since the benchmark started (s)", "agent VmRSS (MiB)").yFrom(0);
    for (Map.Entry<String, List<double[]>> e : series.entrySet()) {
      double[] xs = new double[e.getValue().size()];
      double[] ys = new double[xs.length];
      for (int i = 0; i < xs.length; i++) {
        xs[i] = e.getValue().get(i)[0];
        ys[i] = e.getValue().get(i)[1];
      }
      plot.series("agent, " + e.getKey(), xs, ys, "line");
    }
    for (Mark m : marks) {
      plot.marker(m.seconds(), m.label());
    }
    return plot;
  }
}
