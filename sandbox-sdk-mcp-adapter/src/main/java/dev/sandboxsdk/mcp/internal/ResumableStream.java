package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * One logical SSE stream of an HTTP session (a {@code tools/call}'s answer, or the session's GET
 * stream) that outlives its connections: MCP "Resumability and Redelivery" (2025-11-25). Every
 * message event gets an id, {@code <session tag>-<stream number>-<sequence>}, unique within the
 * session and naming its stream; the stream keeps its recent events, so a client that lost the
 * connection reconnects with GET and {@code Last-Event-ID} and is sent exactly the events after
 * that id, on that stream only, then the live ones. Thread-safe.
 *
 * <p>Memory: a stream keeps at most {@link #MAX_BYTES} of event text (always at least its newest
 * event, which is usually the call's result); older events are dropped, and a client resuming
 * from before them gets 410. An ended stream stays resumable until it is one of more than
 * {@link Registry#MAX_ENDED_PER_SESSION} ended streams of its session, or the buffers of all
 * sessions together pass {@link Budget#MAX_TOTAL_BYTES}: then the longest-ended go first.
 */
final class ResumableStream {
  /** Event text one stream keeps for replay; its newest event is kept even when larger. */
  static final int MAX_BYTES = 256 * 1024;
  /** Milliseconds a client waits before reconnecting to a stream the server closed (the SSE {@code retry} field). */
  static final long RETRY_MILLIS = 1_000;

  /** How a resumption went; the transport turns it into the HTTP answer. */
  enum Resume { RESUMED, NOT_ISSUED, GONE }

  private record Event(long seq, String text) {
  }

  private final Registry registry;
  final int number;
  /** Orders senders: an event's sequence number and its write happen in the same order for all of them. */
  private final ReentrantLock sendLock = new ReentrantLock(true);
  private final ArrayDeque<Event> events = new ArrayDeque<>();
  private long bytes;
  private long nextSeq = 1; // 0 is the priming event's
  private SseStream connection;
  private boolean ended;
  private boolean evicted;

  private ResumableStream(Registry registry, int number) {
    this.registry = registry;
    this.number = number;
  }

  String id(long seq) {
    return registry.tag + "-" + number + "-" + seq;
  }

  /** The first connection; writes the priming event (id, retry) if {@code prime}. */
  void open(SseStream first, boolean prime) {
    synchronized (this) {
      connection = first;
    }
    if (prime) {
      first.sendEvent(SseStream.priming(id(0), RETRY_MILLIS));
    }
  }

  /**
   * Sends one message as an event with the next id, to the current connection if there is one, and
   * keeps it for replay. Blocks while the client does not read. False if the stream has ended or
   * its session has (then nothing is kept).
   */
  boolean send(ObjectNode message) {
    sendLock.lock();
    try {
      SseStream c;
      String text;
      synchronized (this) {
        if (ended || evicted) {
          return false;
        }
        long seq = nextSeq++;
        text = SseStream.event(id(seq), message);
        events.addLast(new Event(seq, text));
        bytes += text.length();
        registry.budget.add(text.length());
        while (bytes > MAX_BYTES && events.size() > 1) {
          Event dropped = events.removeFirst();
          bytes -= dropped.text.length();
          registry.budget.add(-dropped.text.length());
        }
        c = connection;
      }
      if (c != null) {
        c.sendEvent(text); // a failed write leaves the event for replay
      }
      return true;
    } finally {
      sendLock.unlock();
    }
  }

  /** Closes the current connection early (MCP's polling): the stream goes on, and the client resumes it with GET. */
  void closeConnection() {
    SseStream c;
    synchronized (this) {
      c = connection;
      connection = null;
    }
    if (c != null) {
      c.close();
    }
  }

  /** The last event has been sent: the current connection ends; the events stay for replay (see the class comment). */
  void end() {
    SseStream c;
    synchronized (this) {
      if (ended) {
        return;
      }
      ended = true;
      c = connection;
      connection = null;
    }
    if (c != null) {
      c.close();
    }
    registry.ended(this);
  }

  /**
   * Resumes after the event {@code seq}: checks that the events after it are all still here, and
   * only then opens the new connection ({@code open}, which sends the response headers), sends it
   * those events, and makes it the live connection (closing the previous one, which the client has
   * given up). An ended stream's new connection ends after the replay.
   */
  Resume resume(long seq, Supplier<SseStream> open) {
    List<String> backlog = new ArrayList<>();
    SseStream fresh;
    SseStream previous;
    boolean done;
    synchronized (this) {
      if (seq >= nextSeq) {
        return Resume.NOT_ISSUED;
      }
      long oldestKept = events.isEmpty() ? nextSeq : events.peekFirst().seq;
      if (evicted || seq + 1 < oldestKept) {
        return Resume.GONE;
      }
      fresh = open.get(); // throws if the client went away meanwhile
      for (Event e : events) {
        if (e.seq > seq) {
          backlog.add(e.text);
        }
      }
      fresh.holdWrites(); // a fresh stream: never blocks; senders wait for the backlog
      done = ended;
      previous = connection;
      connection = done ? null : fresh;
    }
    if (previous != null) {
      previous.close();
    }
    fresh.releaseWrites(backlog);
    if (done) {
      fresh.close();
    }
    return Resume.RESUMED;
  }

  synchronized boolean hasOpenConnection() {
    return connection != null && !connection.isClosed();
  }

  synchronized SseStream connection() {
    return connection;
  }

  /** Frees the events; a later resumption gets {@link Resume#GONE}. */
  void evict() {
    SseStream c;
    synchronized (this) {
      if (evicted) {
        return;
      }
      evicted = true;
      registry.budget.add(-bytes);
      events.clear();
      bytes = 0;
      c = connection;
      connection = null;
    }
    if (c != null) {
      c.close();
    }
  }

  /** The event text kept for replay, in characters. */
  synchronized long bufferedBytes() {
    return bytes;
  }

  /** The ended streams of every session, which {@link #MAX_TOTAL_BYTES} bounds together. Thread-safe. */
  static final class Budget {
    /** Event text all streams together keep; beyond it, the longest-ended streams are evicted. */
    static final long MAX_TOTAL_BYTES = 32L * 1024 * 1024;

    private final long maxTotal;
    private final AtomicLong total = new AtomicLong();
    private final ConcurrentLinkedQueue<ResumableStream> ended = new ConcurrentLinkedQueue<>();

    Budget() {
      this(MAX_TOTAL_BYTES);
    }

    Budget(long maxTotal) {
      this.maxTotal = maxTotal;
    }

    private void add(long delta) {
      total.addAndGet(delta);
    }

    private void ended(ResumableStream s) {
      ended.add(s);
      trim();
    }

    private void forget(ResumableStream s) {
      ended.remove(s);
    }

    /** Evicts the longest-ended streams until the total fits (running streams are never evicted). */
    void trim() {
      while (total.get() > maxTotal) {
        ResumableStream oldest = ended.poll();
        if (oldest == null) {
          return;
        }
        oldest.registry.remove(oldest);
      }
    }

    /** Event text kept now, in characters. */
    long totalBytes() {
      return total.get();
    }
  }

  /** One HTTP session's streams, numbered from 1. Thread-safe. */
  static final class Registry {
    /** Ended streams a session keeps resumable; beyond them the longest-ended is evicted. */
    static final int MAX_ENDED_PER_SESSION = 8;

    final String tag;
    private final Budget budget;
    private final AtomicInteger next = new AtomicInteger(1);
    private final Map<Integer, ResumableStream> streams = new ConcurrentHashMap<>();
    private final ArrayDeque<ResumableStream> ended = new ArrayDeque<>();

    /** {@code tag}: random, different for every session, so an event id of another session is recognised. */
    Registry(String tag, Budget budget) {
      this.tag = tag;
      this.budget = budget;
    }

    ResumableStream create() {
      ResumableStream s = new ResumableStream(this, next.getAndIncrement());
      streams.put(s.number, s);
      return s;
    }

    /** Whether a stream with this number was ever created here. */
    boolean issued(int number) {
      return number >= 1 && number < next.get();
    }

    /** The stream, if still kept. */
    ResumableStream get(int number) {
      return streams.get(number);
    }

    private void ended(ResumableStream s) {
      ResumableStream evict = null;
      synchronized (ended) {
        ended.addLast(s);
        if (ended.size() > MAX_ENDED_PER_SESSION) {
          evict = ended.removeFirst();
        }
      }
      if (evict != null) {
        remove(evict);
      }
      budget.ended(s);
    }

    /** Forgets a stream: its events are freed and its connection closed. */
    void remove(ResumableStream s) {
      streams.remove(s.number, s);
      synchronized (ended) {
        ended.remove(s);
      }
      budget.forget(s);
      s.evict();
    }

    /** The session ended: every stream's events are freed and its connection closed. */
    void close() {
      for (Iterator<ResumableStream> it = streams.values().iterator(); it.hasNext(); ) {
        ResumableStream s = it.next();
        it.remove();
        budget.forget(s);
        s.evict();
      }
      synchronized (ended) {
        ended.clear();
      }
    }
  }
}
