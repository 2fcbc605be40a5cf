package dev.sandboxsdk.agent.ports;

import java.io.IOException;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Closes server connections that stay silent longer than the proxy timeout, which unblocks the
 * request thread waiting on them: one daemon thread for all, started with the first request
 * and stopped by {@link #close()} (an agent may live in a JVM that goes on, such as a test's).
 */
final class ProxyTimeouts {
  private final long timeoutNanos;
  private final Set<Watch> watches = ConcurrentHashMap.newKeySet();
  private Thread thread;
  private boolean closed;

  ProxyTimeouts(long timeoutMs) {
    this.timeoutNanos = TimeUnit.MILLISECONDS.toNanos(timeoutMs);
  }

  /** One connection under watch. */
  static final class Watch {
    private final Upstreams.Connection connection;
    private final long limitNanos;
    private volatile long lastNanos = System.nanoTime();
    private volatile boolean timedOut;

    Watch(Upstreams.Connection connection, long limitNanos) {
      this.connection = connection;
      this.limitNanos = limitNanos;
    }

    void touch() {
      lastNanos = System.nanoTime();
    }

    boolean timedOut() {
      return timedOut;
    }

    long limitMs() {
      return TimeUnit.NANOSECONDS.toMillis(limitNanos);
    }
  }

  /** Watches {@code c}, silent for at most {@code limitMs}; once closed, closes it and throws. */
  Watch watch(Upstreams.Connection c, long limitMs) throws IOException {
    Watch w = new Watch(c, Math.min(timeoutNanos, TimeUnit.MILLISECONDS.toNanos(limitMs)));
    watches.add(w);
    if (!startThread()) {
      watches.remove(w);
      c.close();
      throw new IOException("the agent is stopping");
    }
    return w;
  }

  void release(Watch w) {
    watches.remove(w);
  }

  /** False once closed. */
  private synchronized boolean startThread() {
    if (closed) {
      return false;
    }
    if (thread != null) {
      return true;
    }
    long shortest = Math.min(timeoutNanos, TimeUnit.MILLISECONDS.toNanos(ProxyForwarder.PREVIEW_SILENCE_MS));
    long periodMs = Math.max(10, Math.min(1000, TimeUnit.NANOSECONDS.toMillis(shortest) / 4));
    thread = new Thread(null, () -> {
      while (true) {
        try {
          Thread.sleep(periodMs);
        } catch (InterruptedException e) {
          return;
        }
        long now = System.nanoTime();
        for (Watch w : watches) {
          if (now - w.lastNanos > w.limitNanos) {
            w.timedOut = true;
            watches.remove(w);
            try {
              w.connection.close();
            } catch (IOException e) {
              // closed either way
            }
          }
        }
      }
    }, "agent-proxy-timeouts", 256 * 1024);
    thread.setDaemon(true);
    thread.start();
    return true;
  }

  void close() {
    synchronized (this) {
      closed = true;
      if (thread != null) {
        thread.interrupt();
      }
    }
    for (Watch w : watches) {
      watches.remove(w);
      try {
        w.connection.close();
      } catch (IOException e) {
        // closed either way
      }
    }
  }
}
