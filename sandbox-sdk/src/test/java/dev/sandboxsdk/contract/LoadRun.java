package dev.sandboxsdk.contract;

import dev.sandboxsdk.testkit.ProcStats;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One run of the load tests of the agent and the MCP server (LoadSoakIT, McpLoadSoakIT): clients,
 * each a thread of its own, doing work until the time is up, while the server's RSS is sampled.
 *
 * @param seconds how long the run took
 * @param units what the work counted (operations, calls), summed over all clients
 * @param errors what went wrong, one line per failed piece of work
 * @param peakRssKib the server's highest RSS among the samples, in KiB (0 if the run took under a second)
 */
public record LoadRun(double seconds, long units, List<String> errors, long peakRssKib) {

  /** One piece of a client's work; returns how many units it did. */
  @FunctionalInterface
  public interface Work {
    long run(int client, int iteration) throws Exception;
  }

  /**
   * Starts {@code clients} threads named {@code name-N}; client N runs {@code work.run(N, i)} for
   * i = 0, 1, ... until {@code seconds} have passed. Anything a piece of work throws is recorded as
   * the error {@code "client N op K: <throwable>"}, K being {@code (N + i) % operations}, and the
   * client goes on. Samples {@code /proc/<rssPid>} once a second until every client is done.
   */
  public static LoadRun run(String name, int clients, int seconds, int operations, long rssPid, Work work)
      throws InterruptedException {
    AtomicLong units = new AtomicLong();
    AtomicLong peakRss = new AtomicLong();
    ConcurrentLinkedQueue<String> errors = new ConcurrentLinkedQueue<>();
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    CountDownLatch done = new CountDownLatch(clients);
    long t0 = System.nanoTime();
    for (int c = 0; c < clients; c++) {
      int client = c;
      Thread worker = new Thread(() -> {
        try {
          for (int i = 0; System.nanoTime() < until; i++) {
            try {
              units.addAndGet(work.run(client, i));
            } catch (Throwable e) {
              errors.add("client " + client + " op " + (client + i) % operations + ": " + e);
            }
          }
        } finally {
          done.countDown();
        }
      }, name + "-" + c);
      worker.start();
    }
    while (!done.await(1, TimeUnit.SECONDS)) {
      peakRss.accumulateAndGet(ProcStats.rssKib(rssPid), Math::max);
    }
    return new LoadRun((System.nanoTime() - t0) / 1e9, units.get(), List.copyOf(errors), peakRss.get());
  }
}
