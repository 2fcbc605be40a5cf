package dev.sandboxsdk.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

/**
 * Samples a process's resident memory (VmRSS), and the largest of its children's, every 20 ms
 * on a thread of its own until {@link #stop()}. Shared by the SDK benchmarks.
 */
public final class RssSampler {
  private final AtomicBoolean running = new AtomicBoolean(true);
  private final AtomicLong peak = new AtomicLong();
  private final AtomicLong childPeak = new AtomicLong();
  private final Thread thread;

  public RssSampler(long pid) {
    thread = new Thread(() -> {
      while (running.get()) {
        peak.accumulateAndGet(rss(pid), Math::max);
        for (long child : children(pid)) {
          childPeak.accumulateAndGet(rss(child), Math::max);
        }
        try {
          Thread.sleep(20);
        } catch (InterruptedException e) {
          return;
        }
      }
    }, "rss-sampler");
    thread.setDaemon(true);
    thread.start();
  }

  /** Stops sampling; returns the peak of the process and the largest peak of a child, in bytes. */
  public long[] stop() throws InterruptedException {
    running.set(false);
    thread.join();
    return new long[] {peak.get(), childPeak.get()};
  }

  /** Resident set size of a process, from /proc/PID/status (VmRSS), in bytes; 0 if it is gone. */
  public static long rss(long pid) {
    String vmRss = Procs.status(pid).get("VmRSS");
    return vmRss == null ? 0 : Procs.kib(vmRss) * 1024;
  }

  /** The process's children, from /proc/PID/task/TID/children; empty if it is gone. */
  public static List<Long> children(long pid) {
    List<Long> pids = new ArrayList<>();
    try (Stream<Path> tasks = Files.list(Path.of("/proc", Long.toString(pid), "task"))) {
      for (Path t : (Iterable<Path>) tasks::iterator) {
        String text = Files.readString(t.resolve("children")).trim();
        if (!text.isEmpty()) {
          for (String s : text.split("\\s+")) {
            pids.add(Long.parseLong(s));
          }
        }
      }
    } catch (IOException | RuntimeException e) {
      // the process or a task went away
    }
    return pids;
  }
}
