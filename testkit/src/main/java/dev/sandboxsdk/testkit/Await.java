package dev.sandboxsdk.testkit;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/** Polling with a deadline, for conditions nobody signals. */
public final class Await {
  private static final Duration POLL = Duration.ofMillis(20);

  private Await() {}

  /** Waits up to {@code timeout} for the condition, polling every 20 ms; returns whether it became true. */
  public static boolean until(Duration timeout, BooleanSupplier condition) throws InterruptedException {
    return until(timeout, POLL, condition);
  }

  /** Waits up to {@code millis} ms for the condition, polling every 20 ms; returns whether it became true. */
  public static boolean until(long millis, BooleanSupplier condition) throws InterruptedException {
    return until(Duration.ofMillis(millis), POLL, condition);
  }

  /**
   * Waits up to {@code timeout} for the condition, polling every {@code poll} (a coarser poll for
   * conditions that cost the process under test a request); returns whether it became true.
   */
  public static boolean until(Duration timeout, Duration poll, BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (System.nanoTime() < deadline) {
      if (condition.getAsBoolean()) {
        return true;
      }
      Thread.sleep(poll.toMillis());
    }
    return condition.getAsBoolean();
  }
}
