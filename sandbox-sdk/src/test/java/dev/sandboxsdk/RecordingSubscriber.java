package dev.sandboxsdk;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingDeque;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Flow;
import java.util.concurrent.LinkedBlockingDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Records the signals of one subscription (OkHttp's {@code EventSourceRecorder} pattern): tests
 * take them one by one with a timeout, in order, and {@link #assertExhausted()} checks that
 * nothing unexpected arrived. Also records protocol violations it can see (signals before
 * {@code onSubscribe}, after a terminal signal, or overlapping each other).
 */
final class RecordingSubscriber<T> implements Flow.Subscriber<T> {
  static final Duration TIMEOUT = Duration.ofSeconds(5);

  private record OnNext(Object item) {}

  private record OnError(Throwable error) {}

  private record OnComplete() {}

  private final BlockingDeque<Object> signals = new LinkedBlockingDeque<>();
  private final List<String> violations = new CopyOnWriteArrayList<>();
  private final AtomicBoolean inSignal = new AtomicBoolean();
  private final CountDownLatch subscribed = new CountDownLatch(1);
  private volatile Flow.Subscription subscription;
  private volatile boolean terminated;

  @Override
  public void onSubscribe(Flow.Subscription s) {
    enter("onSubscribe");
    try {
      if (subscription != null) {
        violations.add("onSubscribe called twice");
      }
      subscription = s;
      subscribed.countDown();
    } finally {
      exit();
    }
  }

  @Override
  public void onNext(T item) {
    enter("onNext(" + item + ")");
    try {
      check("onNext(" + item + ")");
      signals.add(new OnNext(item));
    } finally {
      exit();
    }
  }

  @Override
  public void onError(Throwable error) {
    enter("onError(" + error + ")");
    try {
      check("onError(" + error + ")");
      terminated = true;
      signals.add(new OnError(error));
    } finally {
      exit();
    }
  }

  @Override
  public void onComplete() {
    enter("onComplete");
    try {
      check("onComplete");
      terminated = true;
      signals.add(new OnComplete());
    } finally {
      exit();
    }
  }

  private void check(String signal) {
    if (subscription == null) {
      violations.add(signal + " before onSubscribe");
    }
    if (terminated) {
      violations.add(signal + " after a terminal signal");
    }
  }

  private void enter(String signal) {
    if (!inSignal.compareAndSet(false, true)) {
      violations.add(signal + " overlapped another signal");
    }
  }

  private void exit() {
    inSignal.set(false);
  }

  /** The subscription, waiting for {@code onSubscribe} if needed. */
  Flow.Subscription subscription() {
    try {
      assertThat(subscribed.await(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS))
          .as("onSubscribe was called").isTrue();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
    return subscription;
  }

  void request(long n) {
    subscription().request(n);
  }

  void cancel() {
    subscription().cancel();
  }

  /** The next signal, which must be {@code onNext}. */
  @SuppressWarnings("unchecked")
  T takeNext() {
    Object signal = poll(TIMEOUT);
    if (!(signal instanceof OnNext)) {
      fail("expected onNext but got " + describe(signal));
    }
    return (T) ((OnNext) signal).item();
  }

  /** The next {@code n} signals, which must all be {@code onNext}. */
  List<T> takeNext(int n) {
    List<T> items = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      items.add(takeNext());
    }
    return items;
  }

  /** Every {@code onNext} item up to {@code onComplete}, which must follow. */
  List<T> takeAllUntilComplete() {
    List<T> items = new ArrayList<>();
    for (;;) {
      Object signal = poll(TIMEOUT);
      if (signal instanceof OnComplete) {
        return items;
      }
      if (!(signal instanceof OnNext)) {
        fail("expected onNext or onComplete after " + items + " but got " + describe(signal));
      }
      @SuppressWarnings("unchecked")
      T item = (T) ((OnNext) signal).item();
      items.add(item);
    }
  }

  /** The next signal, which must be {@code onError} with an exception of {@code type}. */
  <E extends Throwable> E takeError(Class<E> type) {
    return takeError(type, TIMEOUT);
  }

  <E extends Throwable> E takeError(Class<E> type, Duration timeout) {
    Object signal = poll(timeout);
    if (!(signal instanceof OnError)) {
      fail("expected onError(" + type.getSimpleName() + ") but got " + describe(signal));
    }
    Throwable error = ((OnError) signal).error();
    assertThat(error).isInstanceOf(type);
    return type.cast(error);
  }

  /** The next signal, which must be {@code onComplete}. */
  void takeComplete() {
    Object signal = poll(TIMEOUT);
    if (!(signal instanceof OnComplete)) {
      fail("expected onComplete but got " + describe(signal));
    }
  }

  /** Asserts that no signal arrives within {@code wait}. */
  void expectNoSignal(Duration wait) {
    Object signal = poll(wait);
    if (signal != null) {
      fail("expected no signal but got " + describe(signal));
    }
  }

  /** Asserts that every signal was taken and the publisher kept the protocol. */
  void assertExhausted() {
    assertThat(violations).as("Reactive Streams protocol violations").isEmpty();
    Object left = signals.poll();
    if (left != null) {
      fail("unexpected signal left over: " + describe(left));
    }
  }

  private Object poll(Duration timeout) {
    try {
      return signals.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  private static String describe(Object signal) {
    if (signal == null) {
      return "nothing within the timeout";
    }
    if (signal instanceof OnError) {
      Throwable t = ((OnError) signal).error();
      return "onError(" + t + ")";
    }
    return signal.toString();
  }
}
