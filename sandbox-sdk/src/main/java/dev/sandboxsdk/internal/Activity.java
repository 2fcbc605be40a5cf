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
}
