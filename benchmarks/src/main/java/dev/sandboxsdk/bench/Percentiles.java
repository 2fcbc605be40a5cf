package dev.sandboxsdk.bench;

import java.util.Arrays;
import java.util.Locale;

/**
 * Percentiles and medians as every benchmark reports them: samples sorted ascending, the p-th
 * percentile is the sample at index ceil(p*n)-1.
 */
public final class Percentiles {
  private Percentiles() {}

  /** A sorted copy of the samples. */
  public static long[] sorted(long[] samples) {
    long[] s = samples.clone();
    Arrays.sort(s);
    return s;
  }

  /** The p-th percentile of ascending samples: the sample at index ceil(p*n)-1. */
  public static long pick(long[] sorted, double p) {
    int idx = (int) Math.ceil(p * sorted.length) - 1;
    return sorted[Math.max(0, Math.min(sorted.length - 1, idx))];
  }

  /** {@link #pick} of nanosecond samples, in milliseconds. */
  public static double pickMs(long[] sorted, double p) {
    return pick(sorted, p) / 1e6;
  }

  /** The mean of nanosecond samples, in milliseconds. */
  public static double meanMs(long[] nanos) {
    return Arrays.stream(nanos).average().orElse(0) / 1e6;
  }

  /** How many samples are at least {@code threshold}. */
  public static int countAtLeast(long[] samples, long threshold) {
    return (int) Arrays.stream(samples).filter(v -> v >= threshold).count();
  }

  /**
   * The head every benchmark's latency line shares, of nanosecond samples: {@code p50 ... p90 ...
   * p99 ... max ... mean ... ms}; each benchmark adds its own counts after it.
   */
  public static String latency(long[] nanos) {
    long[] s = sorted(nanos);
    return String.format(Locale.ROOT, "p50 %7.3f  p90 %7.3f  p99 %7.3f  max %8.3f  mean %7.3f ms",
        pickMs(s, 0.50), pickMs(s, 0.90), pickMs(s, 0.99), s[s.length - 1] / 1e6, meanMs(s));
  }

  /** The median; of an even count, the mean of the middle two. */
  public static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  }

  /** The lower median: of an even count, the smaller of the middle two. */
  public static double lowerMedian(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    return s[(s.length - 1) / 2];
  }
}
