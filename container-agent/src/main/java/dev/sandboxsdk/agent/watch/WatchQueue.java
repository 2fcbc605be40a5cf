package dev.sandboxsdk.agent.watch;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;

/**
 * The events waiting for the client, at most {@code capacity}: when full, new events are dropped
 * and one {@code overflow} event marks the place. A burst of the same event (a file written in
 * many small pieces) is queued once. A final event ({@code stopped}, {@code error}) is always
 * taken, after what is already queued.
 */
final class WatchQueue {
  private final ArrayDeque<ObjectNode> events = new ArrayDeque<>();
  private final int capacity;
  private final ObjectNode overflow;
  private ObjectNode last;
  private ObjectNode end;

  WatchQueue(int capacity, ObjectNode overflow) {
    this.capacity = capacity;
    this.overflow = overflow;
  }

  synchronized void offer(ObjectNode e) {
    if (end != null || e.equals(last)) {
      return;
    }
    if (events.size() >= capacity) {
      overflow();
      return;
    }
    events.addLast(e);
    last = e;
    notifyAll();
  }

  /** Marks lost events (unless the last thing queued says so already). */
  synchronized void overflow() {
    if (end != null || last == overflow) {
      return;
    }
    events.addLast(overflow);
    last = overflow;
    notifyAll();
  }

  /** The final event: sent after what is queued; later offers are ignored. */
  synchronized void end(ObjectNode e) {
    if (end == null) {
      end = e;
      notifyAll();
    }
  }

  /** The next event, waiting up to {@code ms}; null if none came. */
  synchronized ObjectNode take(long ms) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
    for (;;) {
      ObjectNode e = events.pollFirst();
      if (e != null) {
        if (e == last) {
          last = null; // the queue is empty: the next identical event is news again
        }
        return e;
      }
      if (end != null) {
        return end;
      }
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        return null;
      }
      TimeUnit.NANOSECONDS.timedWait(this, left);
    }
  }
}
