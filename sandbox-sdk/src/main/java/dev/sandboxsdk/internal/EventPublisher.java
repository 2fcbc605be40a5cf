package dev.sandboxsdk.internal;

import dev.sandboxsdk.SandboxException;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.Flow;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A lazy, single-subscriber, demand-driven {@link Flow.Publisher} over an {@link EventCursor}.
 *
 * <p>The cursor is opened on the first {@code request}, and events are read (blocking) on an
 * executor thread only while there is outstanding demand, so a slow subscriber leaves unread
 * data in the socket and the agent's writes block: back-pressure reaches the process. Signals
 * are serialised by a work-in-progress counter; rule numbers refer to the Reactive Streams
 * specification.
 */
final class EventPublisher<T> implements Flow.Publisher<T> {
  private static final Logger log = LoggerFactory.getLogger(EventPublisher.class);

  private final Function<Abort, EventCursor<T>> opener;
  private final Executor executor;
  private final Function<Throwable, Throwable> errorMapper;
  private final AtomicBoolean subscribed = new AtomicBoolean();

  EventPublisher(Function<Abort, EventCursor<T>> opener, Executor executor, Function<Throwable, Throwable> errorMapper) {
    this.opener = opener;
    this.executor = executor;
    this.errorMapper = errorMapper;
  }

  @Override
  public void subscribe(Flow.Subscriber<? super T> subscriber) {
    Objects.requireNonNull(subscriber, "subscriber == null"); // §1.9
    if (!subscribed.compareAndSet(false, true)) {
      // Single use: a second run would repeat the command's side effects (JDK Flow.Publisher doc).
      subscriber.onSubscribe(NoopSubscription.INSTANCE);
      subscriber.onError(new IllegalStateException(
          "this publisher was already subscribed to; it runs its command once. Call the method again for a new run"));
      return;
    }
    new EventSubscription<>(subscriber, opener, executor, errorMapper).start();
  }

  private enum NoopSubscription implements Flow.Subscription {
    INSTANCE;

    @Override
    public void request(long n) {}

    @Override
    public void cancel() {}
  }

  private static final class EventSubscription<T> implements Flow.Subscription, Runnable {
    private volatile Flow.Subscriber<? super T> subscriber;
    private final Function<Abort, EventCursor<T>> opener;
    private final Executor executor;
    private final Function<Throwable, Throwable> errorMapper;
    private final AtomicLong requested = new AtomicLong();
    private final AtomicInteger wip = new AtomicInteger();
    private volatile boolean cancelled;
    private volatile Throwable badRequest;
    private volatile EventCursor<T> cursor;
    private final Abort abort = new Abort();
    private boolean done; // only touched by the thread holding wip

    EventSubscription(Flow.Subscriber<? super T> subscriber, Function<Abort, EventCursor<T>> opener, Executor executor,
        Function<Throwable, Throwable> errorMapper) {
      this.subscriber = subscriber;
      this.opener = opener;
      this.executor = executor;
      this.errorMapper = errorMapper;
    }

    void start() {
      wip.set(1); // hold the drain while onSubscribe runs, so no signal overlaps it (§1.3)
      try {
        subscriber.onSubscribe(this);
      } catch (Throwable t) {
        log.warn("Flow.Subscriber.onSubscribe threw; cancelling the subscription (§2.13)", t);
        cancelled = true;
      }
      if (wip.decrementAndGet() != 0) {
        dispatch();
      }
    }

    @Override
    public void request(long n) {
      if (n <= 0) {
        badRequest = new IllegalArgumentException("§3.9: request(" + n + ") must ask for a positive number of events");
      } else {
        // §3.17: demand accumulates up to Long.MAX_VALUE, which means "unbounded".
        requested.getAndAccumulate(n, (a, b) -> a + b < 0 ? Long.MAX_VALUE : a + b);
      }
      if (wip.getAndIncrement() == 0) {
        dispatch(); // §3.4: the blocking read never runs on the caller's thread
      }
    }

    @Override
    public void cancel() {
      if (cancelled) {
        return; // §3.7
      }
      cancelled = true;
      abort.abort(); // cancels a call still waiting for its response headers
      EventCursor<T> c = cursor;
      if (c != null) {
        c.close(); // aborts a read that is blocked right now
      }
      if (wip.getAndIncrement() == 0) {
        dispatch(); // let the drain thread drop references (§3.13)
      }
    }

    private void dispatch() {
      try {
        executor.execute(this);
      } catch (RejectedExecutionException closed) {
        // The sandbox was closed: drain here; opening the cursor will fail with a clear error.
        run();
      }
    }

    @Override
    public void run() {
      int missed = wip.get();
      for (;;) {
        drain();
        missed = wip.addAndGet(-missed);
        if (missed == 0) {
          return;
        }
      }
    }

    private void drain() {
      if (done) {
        return;
      }
      if (cancelled) {
        finish();
        return;
      }
      Throwable bad = badRequest;
      if (bad != null) {
        finish();
        signalError(bad);
        return;
      }
      long r = requested.get();
      long emitted = 0;
      while (emitted != r) {
        T item;
        try {
          EventCursor<T> c = cursor;
          if (c == null) {
            c = opener.apply(abort);
            cursor = c;
            if (cancelled) {
              finish();
              return;
            }
          }
          item = c.next();
        } catch (Throwable t) {
          if (cancelled) {
            finish();
            return;
          }
          finish();
          signalError(errorMapper.apply(t));
          return;
        }
        if (cancelled) {
          finish();
          return;
        }
        if (item == null) {
          finish();
          signalComplete();
          return;
        }
        Flow.Subscriber<? super T> s = subscriber;
        try {
          s.onNext(item);
        } catch (Throwable t) {
          log.warn("Flow.Subscriber.onNext threw; cancelling the subscription (§2.13)", t);
          cancelled = true;
          finish();
          return;
        }
        emitted++;
        if (cursor.isFinished()) {
          finish();
          if (!cancelled) {
            signalComplete(); // onComplete needs no demand (§1.4 and §1.6)
          }
          return;
        }
        if (emitted == r && r != Long.MAX_VALUE) {
          r = requested.addAndGet(-emitted); // pick up demand added meanwhile
          emitted = 0;
          if (cancelled) {
            finish();
            return;
          }
        }
      }
    }

    /** Terminal: release the connection and never signal again. */
    private void finish() {
      done = true;
      EventCursor<T> c = cursor;
      if (c != null) {
        c.close();
      }
      if (cancelled) {
        subscriber = null; // §3.13
      }
    }

    private void signalError(Throwable t) {
      Flow.Subscriber<? super T> s = subscriber;
      subscriber = null;
      if (s != null && !cancelled) {
        try {
          s.onError(t);
        } catch (Throwable e) {
          log.warn("Flow.Subscriber.onError threw (§2.13)", e);
        }
      }
    }

    private void signalComplete() {
      Flow.Subscriber<? super T> s = subscriber;
      subscriber = null;
      if (s != null) {
        try {
          s.onComplete();
        } catch (Throwable e) {
          log.warn("Flow.Subscriber.onComplete threw (§2.13)", e);
        }
      }
    }
  }

  /** Maps anything a cursor throws to what a subscriber should see. */
  static Throwable defaultError(Throwable t, String what) {
    if (t instanceof SandboxException || t instanceof IllegalStateException) {
      return t;
    }
    if (t instanceof java.io.IOException) {
      return ErrorMapper.fromIo((java.io.IOException) t, what);
    }
    return new SandboxException(what + ": " + t, t);
  }
}
