package dev.sandboxsdk.bench.agent;

import dev.sandboxsdk.bench.Percentiles;
import java.util.Locale;

/**
 * A latency series of {@link AgentBench} in milliseconds, with how many samples took 10 ms and
 * 35 ms or more. Percentiles as {@link Percentiles} takes them.
 */
record Stats(int n, double p50, double p90, double p99, double max, double mean, int over10, int over35) {
  static Stats of(long[] nanos) {
    long[] s = Percentiles.sorted(nanos);
    return new Stats(s.length, Percentiles.pickMs(s, 0.50), Percentiles.pickMs(s, 0.90), Percentiles.pickMs(s, 0.99),
        s[s.length - 1] / 1e6, Percentiles.meanMs(s), Percentiles.countAtLeast(s, 10_000_000L),
        Percentiles.countAtLeast(s, 35_000_000L));
  }

  String line() {
    return String.format(Locale.ROOT, "p50 %7.3f  p90 %7.3f  p99 %7.3f  max %8.3f  mean %7.3f ms  (n=%d, >=10ms: %d, >=35ms: %d)",
        p50, p90, p99, max, mean, n, over10, over35);
  }
}
