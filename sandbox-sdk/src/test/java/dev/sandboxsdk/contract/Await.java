package dev.sandboxsdk.contract;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/** Polling with a deadline, for conditions nobody signals. */
public final class Await {
  private Await() {}

  /** Waits up to {@code timeout} for the condition; returns whether it became true. */
  public static boolean await(Duration timeout, BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (System.nanoTime() < deadline) {
      if (condition.getAsBoolean()) {
        return true;
      }
      Thread.sleep(20);
    }
    return condition.getAsBoolean();
  }
}
