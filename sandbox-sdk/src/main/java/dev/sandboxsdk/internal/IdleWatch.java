package dev.sandboxsdk.internal;

import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The liveness window of one event stream: if a read waits longer than the window, the stream is
 * taken for dead and {@code onSilence} runs (it cancels the call, which ends the read).
 *
 * <p>Streams used to get this from okio's read timeout, but okio arms a timeout per read of at
 * most 8 KiB, and arming one signals okio's watchdog thread each time: at a few hundred MB/s
 * that is tens of thousands of thread wake-ups per second, which a profile of {@code execStream}
 * showed as system time of the reading thread, taken from the agent on a small machine. Here a
 * read costs two volatile writes, and the SDK's timer looks once per window: when it finds a read
 * that began later than a window ago, it looks again when that one's window would end, so a
 * stream times out exactly one window after the start of a read that never returned, as before.
 */
final class IdleWatch {
  private final long windowNanos;
  /** The window in force: the first wait's (for the response to begin) until bytes arrive. */
  private volatile long window;
  private final Runnable onSilence;
  private final AtomicBoolean scheduled = new AtomicBoolean();
  private volatile long readingSince; // System.nanoTime() when the current wait began; 0 between waits
  private volatile boolean expired;
  private volatile boolean closed;
  private volatile ScheduledFuture<?> pending;

  IdleWatch(long windowNanos, Runnable onSilence) {
    this(windowNanos, windowNanos, onSilence);
  }

  /**
   * @param firstWaitNanos how long the wait for the response may take: the agent sends its first
   *     byte only once it has started the command, which a loaded agent may queue for longer than
   *     the window, while alive; from the first bytes on, {@code windowNanos} holds
   */
  IdleWatch(long windowNanos, long firstWaitNanos, Runnable onSilence) {
    this.windowNanos = windowNanos;
    this.window = Math.max(windowNanos, firstWaitNanos);
    this.onSilence = onSilence;
  }

  /** A wait for the agent begins (a read, or the wait for the response). */
  void beforeRead() {
    long now = System.nanoTime();
    readingSince = now == 0 ? 1 : now;
    if (!scheduled.get() && scheduled.compareAndSet(false, true)) {
      schedule(window);
    }
  }

  /** The wait ended: bytes arrived, or the read failed. */
  void afterRead() {
    readingSince = 0;
    if (window != windowNanos) {
      // The first bytes: the check scheduled for the first wait's longer window goes, so that
      // the next read schedules one for the stream's window.
      window = windowNanos;
      ScheduledFuture<?> p = pending;
      if (p != null && p.cancel(false)) {
        scheduled.set(false);
      }
    }
  }

  /** Whether the window passed during a wait, so the failure that followed is a timeout. */
  boolean expired() {
    return expired;
  }

  /** Stops watching; idempotent. */
  void close() {
    closed = true;
    ScheduledFuture<?> p = pending;
    if (p != null) {
      p.cancel(false);
    }
  }

  private void schedule(long delayNanos) {
    if (closed) {
      return;
    }
    try {
      pending = SdkTimer.get().schedule(this::check, delayNanos, TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      // The SDK's timer never shuts down; nothing to watch with otherwise.
    }
    if (closed) {
      close(); // closed while scheduling: cancel what was just scheduled
    }
  }

  private void check() {
    if (closed) {
      return;
    }
    long since = readingSince;
    if (since == 0) {
      scheduled.set(false);
      since = readingSince; // a read that began just now may have seen the flag still set
      if (since == 0 || !scheduled.compareAndSet(false, true)) {
        return;
      }
    }
    long silent = System.nanoTime() - since;
    long w = window;
    if (silent >= w) {
      expired = true;
      onSilence.run();
      return;
    }
    schedule(w - silent);
  }
}
