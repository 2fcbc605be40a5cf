package dev.sandboxsdk.bench.mcp;

import static dev.sandboxsdk.bench.mcp.McpBench.streamBytes;

import dev.sandboxsdk.bench.Percentiles;
import dev.sandboxsdk.bench.Procs;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * How {@link McpBench} measures and words its figures: latency percentiles ({@link Percentiles})
 * and differences, stream rates, calls on n threads at once, and a process's memory.
 */
final class McpFigures {
  private McpFigures() {}

  static String ms(long nanos) {
    return String.format(Locale.ROOT, "%.1f", nanos / 1e6);
  }

  static String medianAll(long[] nanos) {
    long[] s = Percentiles.sorted(nanos);
    return String.format(Locale.ROOT, "median %s ms, all %s ms", ms(s[(s.length - 1) / 2]),
        Arrays.stream(nanos).mapToObj(McpFigures::ms).collect(Collectors.joining(", ", "[", "]")));
  }

  static String stats(long[] nanos) {
    return Percentiles.latency(nanos)
        + String.format(Locale.ROOT, " (n=%d, >=35ms: %d)", nanos.length, Percentiles.countAtLeast(nanos, 35_000_000L));
  }

  static String delta(long[] a, long[] b) {
    long[] x = Percentiles.sorted(a);
    long[] y = Percentiles.sorted(b);
    return String.format(Locale.ROOT, "p50 %+.3f ms, p90 %+.3f ms, p99 %+.3f ms, mean %+.3f ms",
        Percentiles.pickMs(x, 0.5) - Percentiles.pickMs(y, 0.5), Percentiles.pickMs(x, 0.9) - Percentiles.pickMs(y, 0.9),
        Percentiles.pickMs(x, 0.99) - Percentiles.pickMs(y, 0.99), Percentiles.meanMs(x) - Percentiles.meanMs(y));
  }

  static String streamLine(double[] seconds) {
    double med = Percentiles.lowerMedian(seconds);
    return String.format(Locale.ROOT, "median %.3f s = %.0f MB/s of output (runs %s)", med, streamBytes / med / 1e6,
        Arrays.stream(seconds).mapToObj(x -> String.format(Locale.ROOT, "%.3f s/%.0f MB/s", x, streamBytes / x / 1e6))
            .collect(Collectors.joining(", ", "[", "]")));
  }

  static void time(Runnable call, long[] into, int from, int to) {
    for (int i = from; i < to; i++) {
      long t0 = System.nanoTime();
      call.run();
      into[i] = System.nanoTime() - t0;
    }
  }

  /** Runs {@code task} on n threads released together; total wall time and per-call times. */
  static String concurrently(int n, Callable<Object> task) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(n);
    try {
      CountDownLatch ready = new CountDownLatch(n);
      CountDownLatch go = new CountDownLatch(1);
      List<Future<Long>> fs = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        fs.add(pool.submit(() -> {
          ready.countDown();
          go.await();
          long t0 = System.nanoTime();
          task.call();
          return System.nanoTime() - t0;
        }));
      }
      ready.await();
      long t0 = System.nanoTime();
      go.countDown();
      long[] each = new long[n];
      for (int i = 0; i < n; i++) {
        each[i] = fs.get(i).get(120, TimeUnit.SECONDS);
      }
      long total = System.nanoTime() - t0;
      Arrays.sort(each);
      return String.format(Locale.ROOT, "total %.3f s; per call min %.3f / median %.3f / max %.3f s",
          total / 1e9, each[0] / 1e9, each[(n - 1) / 2] / 1e9, each[n - 1] / 1e9);
    } finally {
      pool.shutdownNow();
    }
  }

  static String mem(long pid) {
    Map<String, String> f = Procs.status(pid);
    if (f.isEmpty()) {
      return "(pid " + pid + " is gone)";
    }
    return String.format(Locale.ROOT, "VmRSS %.1f MiB (VmHWM %.1f MiB, %s threads; pid %d)", Procs.kib(f.get("VmRSS")) / 1024.0,
        Procs.kib(f.get("VmHWM")) / 1024.0, f.getOrDefault("Threads", "?"), pid);
  }

  static String agentMem(long serverPid) {
    List<ProcessHandle> agents = ProcessHandle.of(serverPid).map(h -> h.children().collect(Collectors.toList()))
        .orElse(List.of());
    if (agents.isEmpty()) {
      return "(no child process)";
    }
    return agents.stream().map(h -> mem(h.pid())).collect(Collectors.joining("; "));
  }
}
