package dev.sandboxsdk.agent.process;

import java.util.Iterator;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The agent's total budget for buffered output: the buffers of running {@code execute} calls and
 * the retained windows of background processes, counted by the bytes actually allocated for them.
 *
 * <p>Whoever needs more buffer asks {@link #tryReserve}. When that would exceed the limit, the
 * windows of finished background processes are evicted, oldest finished first, until the request
 * fits; their readers then see those bytes as dropped (the window's usual {@code truncated}
 * semantics). If evicting every finished window is not enough, the request is refused and the
 * caller decides what that means (an exec stops buffering and says so; a running window keeps
 * its current size, i.e. becomes a smaller ring).
 *
 * <p>Thread-safe and lock-free: a reservation never waits for a lock, and eviction only ever
 * <em>tries</em> a process's lock, so a caller that holds one process's lock while it reserves
 * cannot deadlock with another doing the same.
 */
public final class OutputBudget {
  /** Share of the JVM's maximum heap given to buffered output when no budget is configured. */
  public static final int DEFAULT_HEAP_PERCENT = 25;

  /** Something holding evictable buffers: the finished background processes. */
  interface Evictable {
    /**
     * Drops the buffers and releases them from the budget.
     *
     * @return the bytes freed, or -1 if the holder is busy right now (try later)
     */
    long evict();
  }

  private final long limit;
  private final AtomicLong used = new AtomicLong();
  private final AtomicLong evictedBytes = new AtomicLong();
  /** Finished background processes with windows, oldest finished first. */
  private final ConcurrentLinkedDeque<Evictable> evictable = new ConcurrentLinkedDeque<>();

  public OutputBudget(long limit) {
    if (limit <= 0) {
      throw new IllegalArgumentException("output budget must be positive: " + limit);
    }
    this.limit = limit;
  }

  /**
   * The budget for a configured value, or when 0 {@value #DEFAULT_HEAP_PERCENT}% of the JVM's max
   * heap, rounded down to whole MiB (at least 1 MiB).
   */
  public static long resolve(long configured) {
    if (configured > 0) {
      return configured;
    }
    long share = Runtime.getRuntime().maxMemory() / 100 * DEFAULT_HEAP_PERCENT;
    return Math.max(1 << 20, share >> 20 << 20);
  }

  public long limit() {
    return limit;
  }

  /** Bytes of buffer currently charged to the budget. */
  public long used() {
    return used.get();
  }

  /** Bytes of retained windows evicted so far, over the agent's life. */
  public long evictedBytes() {
    return evictedBytes.get();
  }

  /**
   * Charges {@code bytes}, evicting finished windows (oldest first) if that is what it takes.
   *
   * @return false if the bytes do not fit even with every evictable window gone
   */
  public boolean tryReserve(long bytes) {
    if (bytes <= 0) {
      return true;
    }
    while (true) {
      if (tryCharge(bytes)) {
        return true;
      }
      if (!evictOne()) {
        return tryCharge(bytes);
      }
    }
  }

  /** Charges {@code bytes} whether or not they fit (the small first buffer every window gets). */
  void forceReserve(long bytes) {
    used.addAndGet(bytes);
  }

  public void release(long bytes) {
    if (bytes > 0) {
      used.addAndGet(-bytes);
    }
  }

  private boolean tryCharge(long bytes) {
    while (true) {
      long now = used.get();
      if (now + bytes > limit) {
        return false;
      }
      if (used.compareAndSet(now, now + bytes)) {
        return true;
      }
    }
  }

  /** Evicts the oldest evictable holder that is not busy; false if none could be evicted. */
  private boolean evictOne() {
    Iterator<Evictable> it = evictable.iterator();
    while (it.hasNext()) {
      Evictable e = it.next();
      long freed = e.evict();
      if (freed >= 0) {
        evictable.remove(e);
        evictedBytes.addAndGet(freed);
        return true;
      }
      // busy (a reader or a lingering child's writer holds it): try the next one
    }
    return false;
  }

  /** A background process finished: its windows may now be evicted under pressure. */
  void addEvictable(Evictable e) {
    evictable.addLast(e);
  }

  /** The holder went away by itself (its record was dropped); it released its own bytes. */
  void removeEvictable(Evictable e) {
    evictable.remove(e);
  }

  /** How many finished holders currently keep evictable buffers. */
  int evictableCount() {
    return evictable.size();
  }
}
