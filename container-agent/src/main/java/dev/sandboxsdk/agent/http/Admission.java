package dev.sandboxsdk.agent.http;

import java.io.IOException;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps the connections of bearer-token clients apart from those of everyone else, within the
 * JDK server's one connection cap.
 *
 * <p>The JDK server reads a request's line and headers on a thread of the executor it is given,
 * before any handler runs; this class is that executor's wrapper, so it knows which connections
 * have not shown a token yet (still sending headers, or being answered without one) and for how
 * long:
 *
 * <ul>
 *   <li>A connection still sending its headers after {@link #headerDeadlineNanos} is closed (by
 *       interrupting its thread, which closes the channel it blocks on): the deadline before
 *       authentication is shorter than the request deadline the JDK applies to a whole request.
 *   <li>At most {@link #maxReading} connections may be sending headers at once; past that the
 *       one that has been at it longest is closed, so clients without a token, however many
 *       connections they open, leave the rest of the cap to clients that send a request and
 *       their token at once.
 *   <li>Proxied exchanges without the bearer token (preview URLs) may use at most {@link
 *       #maxPreview} connections: in progress, and kept open afterwards for the next request.
 *   <li>Connections that send nothing at all are kept to the same deadline and share by {@link
 *       SilentConnections}, once {@link #watchSilentConnections} is called.
 * </ul>
 *
 * <p>Thread-safe. {@link #close()} stops the deadline thread.
 */
public final class Admission implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Admission.class);
  /** The deadline for a request's line and headers, before the token has been seen. */
  public static final long HEADER_DEADLINE_MS = 10_000;
  /** How long the JDK server keeps an idle connection open (its default idle interval). */
  static final long IDLE_CONNECTION_MS = 30_000;
  private static final ThreadLocal<Slot> CURRENT = new ThreadLocal<>();

  private final long headerDeadlineNanos;
  private final int maxReading;
  private final int maxPreview;
  private final Set<Slot> reading = ConcurrentHashMap.newKeySet();
  private final AtomicInteger previewInFlight = new AtomicInteger();
  /** Remote addresses of connections that served a preview exchange, and when last. */
  private final Map<String, Long> previewConnections = new ConcurrentHashMap<>();
  private final AtomicInteger shed = new AtomicInteger();
  private final Thread deadlines;
  private volatile boolean closed;
  private volatile SilentConnections silent;

  /**
   * @param maxConnections the JDK server's connection cap
   * @param requestTimeoutSeconds the whole request's deadline; the header deadline is not longer
   */
  public Admission(int maxConnections, int requestTimeoutSeconds) {
    this.headerDeadlineNanos = TimeUnit.MILLISECONDS.toNanos(Math.min(HEADER_DEADLINE_MS, requestTimeoutSeconds * 1000L));
    this.maxReading = Math.max(4, maxConnections / 2);
    this.maxPreview = Math.max(2, maxConnections / 4);
    long periodMs = Math.max(50, Math.min(500, TimeUnit.NANOSECONDS.toMillis(headerDeadlineNanos) / 8));
    this.deadlines = new Thread(null, () -> enforceDeadlines(periodMs), "agent-header-deadlines", 256 * 1024);
    deadlines.setDaemon(true);
    deadlines.start();
  }

  /** Connections that may send headers at once. */
  public int maxReading() {
    return maxReading;
  }

  /** Connections preview (non-bearer) proxy clients may hold. */
  public int maxPreview() {
    return maxPreview;
  }

  /** Connections closed so far for sending headers too slowly or being the oldest at the cap. */
  public int shedCount() {
    return shed.get();
  }

  /** The executor to hand the JDK server: runs its tasks on {@code pool}, each under watch. */
  public Executor executor(Executor pool) {
    return task -> pool.execute(() -> run(task));
  }

  private void run(Runnable task) {
    Slot slot = new Slot(Thread.currentThread(), this);
    CURRENT.set(slot);
    reading.add(slot);
    if (reading.size() > maxReading) {
      shedOldest();
    }
    try {
      task.run();
    } finally {
      slot.finish();
      reading.remove(slot);
      CURRENT.remove();
      Thread.interrupted(); // an interrupt that closed this exchange must not reach the next task
    }
  }

  /**
   * Called first by the handler: the headers are in. Throws if the connection was closed for
   * being too slow meanwhile (the JDK server then forgets it). Until {@link #authenticated()} the
   * exchange still counts as one without a token: answering it (a ping, a 404, a 401, and the
   * JDK's draining of a body nobody read) stays within the same deadline and share.
   */
  public static void headersDone() throws IOException {
    Slot slot = CURRENT.get();
    if (slot != null && slot.phase == Phase.SHED) {
      throw new IOException("the connection was closed while it sent its headers");
    }
  }

  /**
   * Called once the request showed the bearer token (or a preview admission): from here on the
   * exchange is no longer cut by the header deadline or the share. Throws if it was cut already.
   */
  public static void authenticated() throws IOException {
    Slot slot = CURRENT.get();
    if (slot == null) {
      return; // not a thread of an admission's executor (a test's own server)
    }
    if (!slot.enterHandler()) {
      throw new IOException("the connection was closed before the request was authenticated");
    }
    slot.owner.reading.remove(slot);
  }

  private void shedOldest() {
    Slot oldest = null;
    for (Slot s : reading) {
      if (s.phase == Phase.READING && (oldest == null || s.startNanos - oldest.startNanos < 0)) {
        oldest = s;
      }
    }
    if (oldest != null && oldest.shed()) {
      reading.remove(oldest);
      shed.incrementAndGet();
    }
  }

  private void enforceDeadlines(long periodMs) {
    long lastLog = System.nanoTime() - TimeUnit.SECONDS.toNanos(61); // the first cut is logged at once
    int lastShed = 0;
    while (!closed) {
      try {
        Thread.sleep(periodMs);
      } catch (InterruptedException e) {
        return;
      }
      long now = System.nanoTime();
      for (Slot s : reading) {
        if (now - s.startNanos > headerDeadlineNanos && s.shed()) {
          reading.remove(s);
          shed.incrementAndGet();
        }
      }
      int total = shed.get();
      if (total != lastShed && now - lastLog > TimeUnit.SECONDS.toNanos(60)) {
        log.warn("closed {} connections that sent their request headers too slowly or too many at once"
            + " (before any token was seen; at most {} may send headers at once, within {} ms)", total - lastShed,
            maxReading, TimeUnit.NANOSECONDS.toMillis(headerDeadlineNanos));
        lastShed = total;
        lastLog = now;
      }
    }
  }

  /** Admits a proxied exchange without the bearer token; false if preview clients hold their share. */
  boolean admitPreview() {
    if (previewInFlight.incrementAndGet() > maxPreview) {
      previewInFlight.decrementAndGet();
      return false;
    }
    return true;
  }

  void releasePreview() {
    previewInFlight.decrementAndGet();
  }

  /**
   * Whether the connection of a preview exchange from {@code remote} may stay open for the next
   * request: only while preview clients keep fewer than their share of connections, counting
   * each for as long as the JDK server keeps an idle connection (so this errs towards closing).
   */
  boolean keepPreviewConnection(String remote) {
    long now = System.nanoTime();
    long idle = TimeUnit.MILLISECONDS.toNanos(IDLE_CONNECTION_MS);
    previewConnections.values().removeIf(t -> now - t > idle);
    if (previewConnections.containsKey(remote) || previewConnections.size() < maxPreview) {
      previewConnections.put(remote, now);
      return true;
    }
    return false;
  }

  @Override
  public void close() {
    closed = true;
    deadlines.interrupt();
    SilentConnections s = silent;
    if (s != null) {
      s.close();
    }
  }

  /**
   * Starts keeping connections that send nothing (which this executor never sees) to the same
   * deadline and share, on the server's {@code port}: see {@link SilentConnections}.
   */
  public void watchSilentConnections(int port) {
    silent = SilentConnections.start(port, maxReading, TimeUnit.NANOSECONDS.toMillis(headerDeadlineNanos));
  }

  private enum Phase { READING, HANDLER, SHED, DONE }

  /** One task of the JDK server on one thread: reading a request's headers, then in the handler. */
  private static final class Slot {
    final Thread thread;
    final Admission owner;
    final long startNanos = System.nanoTime();
    volatile Phase phase = Phase.READING;

    Slot(Thread thread, Admission owner) {
      this.thread = thread;
      this.owner = owner;
    }

    /** Closes the connection if it is still reading headers; the interrupt lands in this task only. */
    synchronized boolean shed() {
      if (phase != Phase.READING) {
        return false;
      }
      phase = Phase.SHED;
      thread.interrupt();
      return true;
    }

    synchronized boolean enterHandler() {
      if (phase == Phase.SHED) {
        return false;
      }
      phase = Phase.HANDLER;
      return true;
    }

    synchronized void finish() {
      phase = Phase.DONE;
    }
  }
}
