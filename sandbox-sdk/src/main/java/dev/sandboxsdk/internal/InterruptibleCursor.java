package dev.sandboxsdk.internal;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;

/**
 * Reads another cursor on an SDK thread and hands its events over through a small queue, so that
 * the consuming thread waits interruptibly (a blocking socket read does not notice an interrupt
 * until the next byte arrives, which for a quiet command is the next keep-alive) while the events
 * are still consumed on that thread. The queue bounds how far the reader runs ahead, so a slow
 * consumer still paces the agent.
 */
final class InterruptibleCursor<T> implements EventCursor<T> {
  private static final int READ_AHEAD = 16;
  private static final Object END = new Object();

  private final EventCursor<T> delegate;
  private final BlockingQueue<Object> queue = new ArrayBlockingQueue<>(READ_AHEAD);
  private volatile boolean closed;
  private boolean ended;

  /** A failure of the delegate, handed over in order after the events before it. */
  private record Failure(Exception cause) { }

  InterruptibleCursor(EventCursor<T> delegate, Executor executor) {
    this.delegate = delegate;
    executor.execute(this::read);
  }

  private void read() {
    try {
      for (;;) {
        T event = delegate.next();
        if (!hand(event == null ? END : event) || event == null) {
          return;
        }
      }
    } catch (Exception e) {
      hand(new Failure(e));
    }
  }

  /** Queues {@code o}, waiting for room; false once the consumer has closed the cursor. */
  private boolean hand(Object o) {
    try {
      while (!closed) {
        if (queue.offer(o, 100, TimeUnit.MILLISECONDS)) {
          return true;
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return false;
  }

  /**
   * The next event, as the delegate's {@code next()} would return it.
   *
   * @throws InterruptedException if the calling thread is interrupted while waiting
   */
  @Override
  @SuppressWarnings("unchecked")
  public T next() throws Exception {
    if (ended) {
      return null;
    }
    Object o = queue.take();
    if (o == END) {
      ended = true;
      return null;
    }
    if (o instanceof Failure) {
      ended = true;
      throw ((Failure) o).cause();
    }
    return (T) o;
  }

  @Override
  public boolean isFinished() {
    return delegate.isFinished();
  }

  @Override
  public void close() {
    closed = true;
    delegate.close(); // also ends a read blocked in the delegate
    queue.clear();
  }
}
