package dev.sandboxsdk.bench.agent;

import static dev.sandboxsdk.bench.agent.AgentBench.say;

import dev.sandboxsdk.bench.RawHttp;
import dev.sandboxsdk.bench.RawHttp.Resp;
import dev.sandboxsdk.bench.Svg;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Part 4 of {@link AgentBench}: {@code --processes} concurrent background processes held by the
 * agent, started from one client and then from {@code --clients} at once: start latency as the
 * count grows, the agent's memory, threads and descriptors meanwhile, exec latency under that
 * load, and kill-all.
 */
final class ProcessesPhase {
  private final AgentBench b;
  private final AgentOptions o;

  ProcessesPhase(AgentBench b) {
    this.b = b;
    this.o = b.o;
  }

  boolean manyProcesses(RawHttp http, String name, AgentProcess agent) throws Exception {
    int n = o.processes;
    say("  [4b] %d concurrent background processes (POST /api/process/start {\"argv\":[\"sleep\",\"300\"]})", n);
    byte[] body = "{\"argv\":[\"sleep\",\"300\"]}".getBytes(StandardCharsets.UTF_8);
    ProcStatus before = ProcStatus.of(agent.pid);
    long[] samples = new long[n];
    long t0 = System.nanoTime();
    for (int i = 0; i < n; i++) {
      long s = System.nanoTime();
      Resp r = http.call("POST", "/api/process/start", body);
      samples[i] = System.nanoTime() - s;
      if (r.status != 200) {
        say("    start #%d failed: HTTP %d %s", i + 1, r.status, r.text());
        b.sum("[%s] %d processes: start #%d FAILED: HTTP %d %s", name, n, i + 1, r.status, r.text());
        http.call("DELETE", "/api/process/kill-all", null);
        return false;
      }
    }
    double startAll = (System.nanoTime() - t0) / 1e9;
    Stats st = Stats.of(samples);
    StringBuilder deciles = new StringBuilder();
    for (double mean : tenthMeans(samples)[1]) {
      deciles.append(deciles.length() > 0 ? " " : "").append(String.format(Locale.ROOT, "%.1f", mean));
    }
    Svg.Plot plot = new Svg.Plot(n + " background processes: start latency as the count grows, agent " + name, b.runInfo,
        "start # (processes already started + 1; with several clients, the order in which starts were claimed)",
        "POST /api/process/start latency (ms, log scale)").logY();
    b.processPlots.put(name, plot);
    plotStarts(plot, "sequential, one client", samples, Svg.COLORS[0]);
    Resp list = http.call("GET", "/api/process/list?status=running", null);
    int running = countOccurrences(list.text(), "\"status\":\"running\"");
    ProcStatus holding = ProcStatus.of(agent.pid);
    // exec latency while the agent holds all of them
    int loadCalls = Math.max(1, o.calls / 5);
    long[] load = new long[loadCalls];
    byte[] exec = "{\"argv\":[\"true\"]}".getBytes(StandardCharsets.UTF_8);
    for (int i = 0; i < loadCalls; i++) {
      long s = System.nanoTime();
      Resp r = http.call("POST", "/api/execute", exec);
      load[i] = System.nanoTime() - s;
      if (r.status != 200 || !r.text().contains("\"exitCode\":0")) {
        throw new IOException("exec under load failed: " + r.text());
      }
    }
    Stats loaded = Stats.of(load);
    long t1 = System.nanoTime();
    Resp kill = http.call("DELETE", "/api/process/kill-all", null);
    double killMs = (System.nanoTime() - t1) / 1e6;
    Resp clean = http.call("POST", "/api/process/cleanup", null);
    say("    start latency: %s; all %d started in %.2f s", st.line(), n, startAll);
    say("    mean start latency per successive tenth of the %d starts (ms): %s", n, deciles);
    say("    running per /api/process/list: %d", running);
    say("    agent before: %s", before.line());
    say("    agent while holding %d: %s", n, holding.line());
    say("    exec {\"argv\":[\"true\"]} while holding %d: %s", n, loaded.line());
    say("    kill-all: HTTP %d in %.0f ms (%s); cleanup: %s", kill.status, killMs, kill.text().replaceAll(",\"timestamp\".*", ""),
        clean.text().replaceAll(",\"timestamp\".*", ""));
    b.sum("[%s] %d processes: start %s", name, n, st.line());
    b.sum("[%s] %d processes: mean start ms per tenth: %s", name, n, deciles);
    b.sum("[%s] %d processes: all started in %.2f s, %d running; agent %s", name, n, startAll, running, holding.line());
    b.sum("[%s] %d processes: exec argv true meanwhile: %s", name, n, loaded.line());
    b.sum("[%s] %d processes: kill-all %.0f ms", name, n, killMs);
    boolean ok = running == n && kill.status == 200;
    if (o.clients > 1) {
      b.rss.mark(name.replace("-flags", "") + ": " + n + " processes, " + o.clients + " clients");
      ok &= manyProcessesConcurrently(http, name, agent);
    }
    return ok;
  }

  /** Mean start latency (ms) per successive tenth of the starts: {x at each tenth's middle (start #), mean}. */
  static double[][] tenthMeans(long[] samples) {
    int n = samples.length;
    int tenth = Math.max(1, n / 10);
    int parts = (n + tenth - 1) / tenth;
    double[][] out = new double[2][parts];
    for (int d = 0; d < parts; d++) {
      int from = d * tenth;
      int to = Math.min(n, from + tenth);
      long sumNs = 0;
      for (int i = from; i < to; i++) {
        sumNs += samples[i];
      }
      out[0][d] = (from + 1 + to) / 2.0;
      out[1][d] = sumNs / (double) (to - from) / 1e6;
    }
    return out;
  }

  /** Each start (faint) and the mean per tenth of the starts, in one colour. */
  static void plotStarts(Svg.Plot plot, String label, long[] samples, String color) {
    double[] index = new double[samples.length];
    double[] ms = new double[samples.length];
    for (int i = 0; i < samples.length; i++) {
      index[i] = i + 1;
      ms[i] = samples[i] / 1e6;
    }
    double[][] tenths = tenthMeans(samples);
    plot.series(label + ", each start", index, ms, "faint", color);
    plot.series(label + ", mean per tenth of the starts", tenths[0], tenths[1], "line", color);
  }

  /** The same starts from {@code --clients} connections at once: total time, latency, agent state. */
  boolean manyProcessesConcurrently(RawHttp http, String name, AgentProcess agent) throws Exception {
    int n = o.processes;
    int k = o.clients;
    say("  [4c] %d background processes started by %d concurrent clients", n, k);
    byte[] body = "{\"argv\":[\"sleep\",\"300\"]}".getBytes(StandardCharsets.UTF_8);
    long[] samples = new long[n];
    java.util.concurrent.atomic.AtomicInteger next = new java.util.concurrent.atomic.AtomicInteger();
    java.util.concurrent.atomic.AtomicReference<String> failure = new java.util.concurrent.atomic.AtomicReference<>();
    List<Thread> threads = new ArrayList<>();
    java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
    for (int c = 0; c < k; c++) {
      Thread t = new Thread(() -> {
        try (RawHttp client = new RawHttp("127.0.0.1", agent.port, b.token)) {
          client.call("GET", "/api/ping", null); // connect before the clock starts
          go.await();
          for (int i = next.getAndIncrement(); i < n && failure.get() == null; i = next.getAndIncrement()) {
            long s = System.nanoTime();
            Resp r = client.call("POST", "/api/process/start", body);
            samples[i] = System.nanoTime() - s;
            if (r.status != 200) {
              failure.compareAndSet(null, "start #" + (i + 1) + ": HTTP " + r.status + " " + r.text());
            }
          }
        } catch (Exception e) {
          failure.compareAndSet(null, e.toString());
        }
      });
      t.start();
      threads.add(t);
    }
    Thread.sleep(200);
    long t0 = System.nanoTime();
    go.countDown();
    for (Thread t : threads) {
      t.join();
    }
    double startAll = (System.nanoTime() - t0) / 1e9;
    if (failure.get() != null) {
      say("    FAILED: %s", failure.get());
      b.sum("[%s] %d processes, %d clients: FAILED: %s", name, n, k, failure.get());
      http.call("DELETE", "/api/process/kill-all", null);
      http.call("POST", "/api/process/cleanup", null);
      return false;
    }
    Stats st = Stats.of(samples);
    plotStarts(b.processPlots.get(name), k + " concurrent clients", samples, Svg.COLORS[1]);
    Resp list = http.call("GET", "/api/process/list?status=running", null);
    int running = countOccurrences(list.text(), "\"status\":\"running\"");
    ProcStatus holding = ProcStatus.of(agent.pid);
    long t1 = System.nanoTime();
    Resp kill = http.call("DELETE", "/api/process/kill-all", null);
    double killMs = (System.nanoTime() - t1) / 1e6;
    http.call("POST", "/api/process/cleanup", null);
    say("    start latency: %s; all %d started in %.2f s by %d clients; running %d", st.line(), n, startAll, k, running);
    say("    agent while holding %d: %s; kill-all %.0f ms", n, holding.line(), killMs);
    b.sum("[%s] %d processes, %d clients: start %s", name, n, k, st.line());
    b.sum("[%s] %d processes, %d clients: all started in %.2f s, %d running; agent %s", name, n, k, startAll, running,
        holding.line());
    return running == n && kill.status == 200;
  }

  static int countOccurrences(String s, String needle) {
    int count = 0;
    for (int i = s.indexOf(needle); i >= 0; i = s.indexOf(needle, i + needle.length())) {
      count++;
    }
    return count;
  }
}
