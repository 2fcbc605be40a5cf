package dev.sandboxsdk.bench.sdk;

import static dev.sandboxsdk.bench.sdk.SdkBench.plots;
import static dev.sandboxsdk.bench.sdk.SdkBench.runInfo;
import static dev.sandboxsdk.bench.sdk.SdkBench.streamMib;
import static dev.sandboxsdk.bench.sdk.SdkBench.streamReps;

import dev.sandboxsdk.ExecEvent;
import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.bench.Machine;
import dev.sandboxsdk.bench.Percentiles;
import dev.sandboxsdk.bench.Svg;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;

/**
 * Part 3 of {@link SdkBench}: execStream throughput through the SDK against the agent's own rate,
 * read by {@link RawStream} from the same agent, alternating in the same run.
 */
final class SdkStreams {
  private SdkStreams() {}

  /** One line of the stream generator; the command prints it again and again. */
  static final String LINE = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.,;:+\n";

  static String generator(long total) {
    return "yes '" + LINE.substring(0, LINE.length() - 1) + "' | head -c " + total;
  }

  /**
   * The stream of {@code streamMib} MiB of text, alternating the raw client (the agent's own
   * rate: what it sends, counted without decoding) and the SDK in the same run, against the same
   * agent. Every run checks that the byte count is exact and the offsets contiguous; one untimed
   * run per reader first checks the content itself against the generator, char by char.
   */
  static void streamSection(Sandbox sdk, int port) throws Exception {
    long total = (long) streamMib << 20;
    String command = generator(total);
    System.out.printf(Locale.ROOT, "execStream of %d MiB (%s), load average before: %s%n",
        streamMib, command, Machine.loadAverages());
    // untimed content checks (they also warm both paths up)
    RawStream.run(port, command, total, true);
    sdkStream(sdk, command, total, true);
    double[] rawRates = new double[streamReps];
    double[] sdkRates = new double[streamReps];
    double[] rawCpu = new double[streamReps];
    double[] sdkCpu = new double[streamReps];
    double[] rawUser = new double[streamReps];
    double[] sdkUser = new double[streamReps];
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    for (int rep = 0; rep < streamReps; rep++) {
      long t0 = System.nanoTime();
      long c0 = threads.getCurrentThreadCpuTime();
      long u0 = threads.getCurrentThreadUserTime();
      long[] wire = RawStream.run(port, command, total, false);
      rawCpu[rep] = (threads.getCurrentThreadCpuTime() - c0) / (double) total;
      rawUser[rep] = (threads.getCurrentThreadUserTime() - u0) / (double) total;
      double rawS = (System.nanoTime() - t0) / 1e9;
      t0 = System.nanoTime();
      long[] cpu = sdkStream(sdk, command, total, false);
      sdkCpu[rep] = cpu[0] / (double) total;
      sdkUser[rep] = cpu[1] / (double) total;
      double sdkS = (System.nanoTime() - t0) / 1e9;
      rawRates[rep] = total / rawS / 1e6;
      sdkRates[rep] = total / sdkS / 1e6;
      System.out.printf(Locale.ROOT,
          "  run %d: agent (raw client) %4.0f MB/s (%.2f s, %d bytes in %d events on the wire, reader %.2f ns CPU/byte,"
              + " %.2f user), SDK execStream %4.0f MB/s (%.2f s, reader %.2f ns CPU/byte, %.2f user): ratio %3.0f%%,"
              + " load %s%n",
          rep + 1, rawRates[rep], rawS, wire[0], wire[1], rawCpu[rep], rawUser[rep], sdkRates[rep], sdkS, sdkCpu[rep], sdkUser[rep],
          100 * sdkRates[rep] / rawRates[rep], Machine.loadAverages());
    }
    Svg.Bars bars = new Svg.Bars("execStream of " + streamMib + " MiB of text: the SDK vs the agent's own rate, pair by pair",
        runInfo, String.format(Locale.ROOT, "alternating pairs, in run order (median of the ratios SDK / agent: %.0f%%)",
            100 * medianRatio(sdkRates, rawRates)), "MB/s of process output (10^6 B/s)");
    for (int rep = 0; rep < streamReps; rep++) {
      String pair = String.format(Locale.ROOT, "pair %d: %.0f%%", rep + 1, 100 * sdkRates[rep] / rawRates[rep]);
      bars.bar(pair, "agent's own rate (raw client that decodes nothing: the floor)", rawRates[rep]);
      bars.bar(pair, "SDK execStream, subscriber counting", sdkRates[rep]);
    }
    System.out.printf(Locale.ROOT, "plot: %s%n", bars.write(Path.of(plots), "sdk-stream-pairs.svg"));
    System.out.printf(Locale.ROOT,
        "execStream %d MiB: agent median %.0f MB/s, SDK median %.0f MB/s, median of per-run ratios %.0f%%;"
            + " reading thread's CPU time per byte, median: raw client %.2f ns (user %.2f), SDK %.2f ns (user %.2f)%n",
        streamMib, Percentiles.median(rawRates), Percentiles.median(sdkRates), 100 * medianRatio(sdkRates, rawRates), Percentiles.median(rawCpu),
        Percentiles.median(rawUser), Percentiles.median(sdkCpu), Percentiles.median(sdkUser));
  }

  static double medianRatio(double[] a, double[] b) {
    double[] r = new double[a.length];
    for (int i = 0; i < a.length; i++) {
      r[i] = a[i] / b[i];
    }
    return Percentiles.median(r);
  }

  /** Whether {@code text} is what the generator printed at {@code offset}. */
  static boolean matchesGenerator(CharSequence text, long offset) {
    int phase = (int) (offset % LINE.length());
    for (int i = 0; i < text.length(); i++) {
      if (text.charAt(i) != LINE.charAt(phase)) {
        return false;
      }
      phase = phase + 1 == LINE.length() ? 0 : phase + 1;
    }
    return true;
  }

  /**
   * Runs {@code command} through the SDK's execStream with unbounded demand; checks that stdout's
   * chunks are contiguous and add up to {@code total} bytes and chars (the text is ASCII), and with
   * {@code verify} that every char is the generator's. Returns the CPU time and the user time of
   * the thread that read the stream and delivered the events, from the start event to the end.
   */
  static long[] sdkStream(Sandbox sdk, String command, long total, boolean verify) throws Exception {
    // next offset, chars, CPU and user time at the start and at the end; only the delivering thread writes
    long[] state = new long[6];
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    CompletableFuture<Void> done = new CompletableFuture<>();
    sdk.execStream(command).subscribe(new Flow.Subscriber<>() {
      public void onSubscribe(Flow.Subscription s) { s.request(Long.MAX_VALUE); }
      public void onNext(ExecEvent e) {
        if (e instanceof ExecEvent.Stdout o) {
          if (o.offset() != state[0] || (verify && !matchesGenerator(o.text(), o.offset()))) {
            done.completeExceptionally(new IllegalStateException("wrong chunk at offset " + o.offset()));
          }
          state[0] += o.bytes();
          state[1] += o.text().length();
        } else if (e instanceof ExecEvent.Start) {
          state[2] = threads.getCurrentThreadCpuTime(); // the thread that reads the stream and delivers
          state[3] = threads.getCurrentThreadUserTime();
        } else if (e instanceof ExecEvent.Complete c && c.exitCode() != 0) {
          done.completeExceptionally(new IllegalStateException("generator failed: " + c));
        }
      }
      public void onError(Throwable t) { done.completeExceptionally(t); }
      public void onComplete() {
        state[4] = threads.getCurrentThreadCpuTime();
        state[5] = threads.getCurrentThreadUserTime();
        done.complete(null);
      }
    });
    done.get(300, TimeUnit.SECONDS);
    if (state[0] != total || state[1] != total) { // get() ordered the subscriber's writes before this
      throw new IllegalStateException("the SDK's stream lost bytes: " + Arrays.toString(state));
    }
    return new long[] {state[4] - state[2], state[5] - state[3]};
  }
}
