package dev.sandboxsdk.contract;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Flow;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.Predicate;

/**
 * A recording {@link Flow.Subscriber} for the integration tests: keeps every signal, requests
 * in batches (or not at all), and notes violations of the Reactive Streams rules the SDK
 * promises (a signal after a terminal one, more items than requested, a second onSubscribe).
 * Thread-safe; the wait methods poll with a timeout and never block forever.
 */
public final class ItSubscriber<T> implements Flow.Subscriber<T> {
  private final long batch;
  private final boolean retain;
  private final Object lock = new Object();
  private final List<T> items = new ArrayList<>();
  private final List<String> violations = new ArrayList<>();
  private volatile Consumer<? super T> onEach = t -> { };
  private volatile Flow.Subscription subscription;
  private long requested;
  private long received;
  private long sinceRequest;
  private int subscribes;
  private int completions;
  private int errors;
  private Throwable error;

  private ItSubscriber(long batch, boolean retain) {
    this.batch = batch;
    this.retain = retain;
  }

  /** Requests everything at once (Long.MAX_VALUE). */
  public static <T> ItSubscriber<T> unbounded() {
    return new ItSubscriber<>(Long.MAX_VALUE, true);
  }

  /** Requests one item, then one more after each item. */
  public static <T> ItSubscriber<T> oneByOne() {
    return new ItSubscriber<>(1, true);
  }

  /** Requests {@code n} items at a time. */
  public static <T> ItSubscriber<T> inBatchesOf(long n) {
    return new ItSubscriber<>(n, true);
  }

  /** Requests nothing by itself; the test calls {@link #request(long)}. */
  public static <T> ItSubscriber<T> manual() {
    return new ItSubscriber<>(0, true);
  }

  /**
   * Requests {@code batch} items at a time and hands each to {@code each} without keeping it (for
   * big streams).
   */
  public static <T> ItSubscriber<T> streaming(long batch, Consumer<? super T> each) {
    ItSubscriber<T> s = new ItSubscriber<>(batch, false);
    s.onEach = each;
    return s;
  }

  /** Also hands each item to {@code each}, on the delivering thread. */
  public ItSubscriber<T> onEach(Consumer<? super T> each) {
    this.onEach = each;
    return this;
  }

  @Override
  public void onSubscribe(Flow.Subscription s) {
    synchronized (lock) {
      subscribes++;
      if (subscribes > 1) {
        violations.add("onSubscribe called " + subscribes + " times");
      }
      subscription = s;
    }
    if (batch > 0) {
      request(batch);
    }
  }

  @Override
  public void onNext(T item) {
    synchronized (lock) {
      if (completions + errors > 0) {
        violations.add("onNext after a terminal signal: " + item);
      }
      received++;
      if (received > requested) {
        violations.add("onNext #" + received + " but only " + requested + " requested");
      }
      if (retain) {
        items.add(item);
      }
      lock.notifyAll();
    }
    onEach.accept(item);
    if (batch > 0 && batch != Long.MAX_VALUE) {
      boolean again;
      synchronized (lock) {
        sinceRequest++;
        again = sinceRequest == batch;
        if (again) {
          sinceRequest = 0;
        }
      }
      if (again) {
        request(batch);
      }
    }
  }

  @Override
  public void onError(Throwable t) {
    synchronized (lock) {
      if (completions + errors > 0) {
        violations.add("onError after a terminal signal: " + t);
      }
      errors++;
      error = t;
      lock.notifyAll();
    }
  }

  @Override
  public void onComplete() {
    synchronized (lock) {
      if (completions + errors > 0) {
        violations.add("onComplete after a terminal signal");
      }
      completions++;
      lock.notifyAll();
    }
  }

  /** Asks for {@code n} more items. */
  public void request(long n) {
    synchronized (lock) {
      long sum = requested + n;
      requested = sum < 0 ? Long.MAX_VALUE : sum;
    }
    Flow.Subscription s = subscription;
    if (s == null) {
      throw new AssertionError("request before onSubscribe");
    }
    s.request(n);
  }

  /** Cancels the subscription. */
  public void cancel() {
    Flow.Subscription s = subscription;
    if (s == null) {
      throw new AssertionError("cancel before onSubscribe");
    }
    s.cancel();
  }

  /** A copy of the items received so far. */
  public List<T> items() {
    synchronized (lock) {
      return new ArrayList<>(items);
    }
  }

  /** How many items arrived so far (also when they are not kept). */
  public long received() {
    synchronized (lock) {
      return received;
    }
  }

  public int completions() {
    synchronized (lock) {
      return completions;
    }
  }

  public int errors() {
    synchronized (lock) {
      return errors;
    }
  }

  public List<String> violations() {
    synchronized (lock) {
      return new ArrayList<>(violations);
    }
  }

  public boolean isTerminated() {
    synchronized (lock) {
      return completions + errors > 0;
    }
  }

  /** Waits for onComplete and returns every item; fails on onError, a timeout or a rule violation. */
  public List<T> awaitComplete(Duration timeout) throws InterruptedException {
    awaitTerminal(timeout);
    synchronized (lock) {
      if (error != null) {
        throw new AssertionError("expected onComplete but got onError: " + error, error);
      }
      if (completions != 1) {
        throw new AssertionError("onComplete called " + completions + " times");
      }
      if (!violations.isEmpty()) {
        throw new AssertionError("subscriber rule violations: " + violations);
      }
      return new ArrayList<>(items);
    }
  }

  /** Waits for onError and returns its throwable; fails on onComplete or a timeout. */
  public Throwable awaitError(Duration timeout) throws InterruptedException {
    awaitTerminal(timeout);
    synchronized (lock) {
      if (error == null) {
        throw new AssertionError("expected onError but got onComplete after " + items.size() + " items");
      }
      if (errors != 1 || completions != 0) {
        throw new AssertionError("terminal signals: " + errors + " onError, " + completions + " onComplete");
      }
      if (!violations.isEmpty()) {
        throw new AssertionError("subscriber rule violations: " + violations);
      }
      return error;
    }
  }

  /** Waits for a terminal signal. */
  public void awaitTerminal(Duration timeout) throws InterruptedException {
    await(timeout, () -> completions + errors > 0, "a terminal signal");
  }

  /** Waits until at least {@code count} items arrived; returns them. */
  public List<T> awaitCount(long count, Duration timeout) throws InterruptedException {
    await(timeout, () -> received >= count, count + " items");
    return items();
  }

  /** Waits for an item matching {@code condition} and returns it. */
  public T awaitItem(Predicate<? super T> condition, Duration timeout) throws InterruptedException {
    Object[] found = new Object[1];
    await(timeout, () -> {
      for (T t : items) {
        if (condition.test(t)) {
          found[0] = t;
          return true;
        }
      }
      return false;
    }, "a matching item");
    @SuppressWarnings("unchecked")
    T t = (T) found[0];
    return t;
  }

  private void await(Duration timeout, BooleanSupplier condition, String what) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    synchronized (lock) {
      while (!condition.getAsBoolean()) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          throw new AssertionError("no " + what + " within " + timeout + "; got " + received + " items, "
              + completions + " onComplete, " + errors + " onError" + (error != null ? " (" + error + ")" : ""));
        }
        lock.wait(Math.max(1, left / 1_000_000));
      }
    }
  }
}
