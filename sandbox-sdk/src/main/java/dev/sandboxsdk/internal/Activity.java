package dev.sandboxsdk.internal;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * Counts the calls and streams in flight on a sandbox and when the last one ended, so a local
 * sandbox can tell when it has been idle. Thread-safe.
 */
public final class Activity {
  private final AtomicInteger inFlight = new AtomicInteger();
  private volatile long lastEndNanos = System.nanoTime();

  void begin() {
    inFlight.incrementAndGet();
  }

  void end() {
    lastEndNanos = System.nanoTime();
    inFlight.decrementAndGet();
  }

  /** When (System.nanoTime) the sandbox was last in use: now while a call or stream is in flight. */
  public long lastActiveNanos() {
    return inFlight.get() > 0 ? System.nanoTime() : lastEndNanos;
  }

  /** Nanoseconds since the sandbox was last in use; 0 while a call or stream is in flight. */
  public long idleNanos() {
    return inFlight.get() > 0 ? 0 : Math.max(0, System.nanoTime() - lastEndNanos);
  }

  /**
   * Runs {@code onIdle} on the SDK's timer once the sandbox has been idle for {@code limit},
   * looking at most every 5 s; cancel the future to stop looking.
   */
  public java.util.concurrent.ScheduledFuture<?> whenIdleFor(java.time.Duration limit, Runnable onIdle) {
    long period = Math.max(100, Math.min(limit.toMillis() / 4, 5_000));
    long nanos = limit.toNanos();
    return SdkTimer.get().scheduleWithFixedDelay(() -> {
      if (idleNanos() >= nanos) {
        onIdle.run();
      }
    }, period, period, java.util.concurrent.TimeUnit.MILLISECONDS);
  }
}
