package dev.sandboxsdk.internal;

import dev.sandboxsdk.EgressEvent;
import dev.sandboxsdk.EgressEventPage;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import okhttp3.Call;

/**
 * The egress audit followed by polling {@code GET /api/egress/events}: a page of up to 1,000
 * events after the last sequence seen, handed out one by one; at once again while the agent says
 * {@code more}, else after the poll interval. The agent has no stream of its events (it records
 * one when its connection ends), and a poll every half second costs it one small answer.
 *
 * <p>It never ends by itself: {@link #next()} returns null only after {@link #close()} (a
 * cancelled subscription), and throws once the sandbox is closed. It polls only while its reader
 * calls {@code next()}, which {@link EventPublisher} does only while there is demand. For as long
 * as it is open it counts as an open stream of the sandbox, so an idle timeout does not end a
 * sandbox that someone is watching.
 */
final class EgressWatchCursor implements EventCursor<EgressEvent> {
  /** Events per poll: the agent's bound, so a reader that fell behind catches up in few calls. */
  static final int PAGE = 1_000;

  /** Fetches a page after a sequence, handing the HTTP call to the consumer before sending it. */
  interface Pages extends BiFunction<Long, Consumer<Call>, EgressEventPage> { }

  private final AgentHttp http;
  private final Pages pages;
  private final long pollNanos;
  private final Deque<EgressEvent> buffer = new ArrayDeque<>();
  private final Object lock = new Object();
  private long since;
  private boolean closed; // guarded by lock
  private Call inFlight; // guarded by lock

  EgressWatchCursor(AgentHttp http, Pages pages, long since, Duration poll) {
    this.http = http;
    this.pages = pages;
    this.since = since;
    this.pollNanos = poll.toNanos();
    http.activity.begin();
  }

  @Override
  public EgressEvent next() throws Exception {
    for (;;) {
      EgressEvent e = buffer.poll();
      if (e != null) {
        return e;
      }
      if (isClosed()) {
        return null;
      }
      EgressEventPage page;
      try {
        page = pages.apply(since, this::sending);
      } finally {
        synchronized (lock) {
          inFlight = null;
        }
      }
      if (isClosed()) {
        return null;
      }
      buffer.addAll(page.events());
      // Never backwards: a since beyond the latest event stays where the caller put it.
      since = Math.max(since, page.lastSequence());
      if (buffer.isEmpty() && !page.more()) {
        pause();
      }
    }
  }

  /** Keeps the call so that {@link #close()} can cancel it; cancels it at once if closed already. */
  private void sending(Call call) {
    synchronized (lock) {
      inFlight = call;
      if (closed) {
        call.cancel();
      }
    }
  }

  private void pause() throws InterruptedException {
    long deadline = System.nanoTime() + pollNanos;
    synchronized (lock) {
      for (long left = pollNanos; !closed && left > 0; left = deadline - System.nanoTime()) {
        TimeUnit.NANOSECONDS.timedWait(lock, left);
      }
    }
  }

  private boolean isClosed() {
    synchronized (lock) {
      if (!closed) {
        return false;
      }
    }
    // Closed with the sandbox: an error, as for every stream; closed by a cancel: the end.
    if (http.isClosed()) {
      throw http.closedError(null);
    }
    return true;
  }

  /** Never: the audit has no last event. */
  @Override
  public boolean isFinished() {
    return false;
  }

  @Override
  public void close() {
    Call call;
    synchronized (lock) {
      if (closed) {
        return;
      }
      closed = true;
      call = inFlight;
      lock.notifyAll();
    }
    if (call != null) {
      call.cancel();
    }
    http.untrack(this);
    http.activity.end();
  }
}
