package dev.sandboxsdk.testkit;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntFunction;

/**
 * Clients that make numbered attempts side by side until the time is up, collecting what each
 * attempt reports as having gone wrong: the driver of the path-race attacks.
 */
public final class Race {
  private Race() {}

  /**
   * What a race found: how many attempts were made and what the failed ones reported.
   *
   * @param attempts the attempts made, by all clients
   * @param escapes what the attempts that went wrong reported, in no particular order
   */
  public record Result(int attempts, List<String> escapes) {
    /** The escapes counted by kind: each one with the first match of {@code tail} and all after it removed. */
    public Map<String, Integer> kinds(String tail) {
      Map<String, Integer> kinds = new TreeMap<>();
      for (String e : escapes) {
        kinds.merge(e.replaceAll(tail + ".*", ""), 1, Integer::sum);
      }
      return kinds;
    }
  }

  /**
   * Runs {@code clients} threads for {@code millis} ms, each calling {@code attempt} with the next
   * number (0, 1, 2, ... across all clients) until the time is up; an attempt returns null when
   * all went well, else what went wrong. Returns when every client has finished its last attempt.
   */
  public static Result run(int clients, long millis, IntFunction<String> attempt) throws InterruptedException {
    ConcurrentLinkedQueue<String> escapes = new ConcurrentLinkedQueue<>();
    AtomicInteger counter = new AtomicInteger();
    long end = System.currentTimeMillis() + millis;
    List<Thread> threads = new ArrayList<>();
    for (int c = 0; c < clients; c++) {
      Thread t = new Thread(() -> {
        while (System.currentTimeMillis() < end) {
          String bad = attempt.apply(counter.getAndIncrement());
          if (bad != null) {
            escapes.add(bad);
          }
        }
      }, "race-client-" + c);
      t.start();
      threads.add(t);
    }
    for (Thread t : threads) {
      t.join();
    }
    return new Result(counter.get(), new ArrayList<>(escapes));
  }
}
