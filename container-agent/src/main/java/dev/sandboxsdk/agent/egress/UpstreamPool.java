package dev.sandboxsdk.agent.egress;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The proxy's idle TLS connections to the servers it intercepts for, kept after an answer that
 * left them reusable ({@link ResponseRelay}) so that the next intercepted request to the same host,
 * port and address skips the TCP and TLS handshakes: that is most of what interception costs, and
 * across the internet it is round trips. Bounded: {@value #PER_DESTINATION} per destination,
 * {@value #TOTAL} in all, each kept {@value #IDLE_SECONDS} s (below the keep-alive timeouts common
 * servers use, 5 s and up). A connection is handed out only if nothing arrived on it while it was
 * idle (a server that closed it, or sent anything at all, has it dropped). Thread-safe.
 */
final class UpstreamPool implements AutoCloseable {
  static final int PER_DESTINATION = 4;
  static final int TOTAL = 32;
  static final int IDLE_SECONDS = 4;
  private static final long IDLE_NANOS = TimeUnit.SECONDS.toNanos(IDLE_SECONDS);

  /** An idle connection: its TLS, the socket under it, and when it became idle. */
  record Idle(TlsChannel tls, SocketChannel socket, long since) {
  }

  private final Map<String, Deque<Idle>> idle = new HashMap<>();
  private int size;
  private boolean closed;

  static String key(String host, int port, InetAddress address) {
    return host + ':' + port + '@' + address.getHostAddress();
  }

  /** An idle connection to this destination that is still quiet, or null. */
  Idle take(String key) {
    while (true) {
      Idle c;
      synchronized (this) {
        Deque<Idle> q = idle.get(key);
        c = q == null ? null : q.pollLast();
        if (c == null) {
          return null;
        }
        size--;
        if (q.isEmpty()) {
          idle.remove(key);
        }
      }
      if (System.nanoTime() - c.since() < IDLE_NANOS && quiet(c)) {
        return c;
      }
      close(c);
    }
  }

  /** Keeps a connection whose last answer left it reusable, or closes it if there is no room. */
  void offer(String key, TlsChannel tls, SocketChannel socket) {
    if (tls.hasBuffered()) {
      close(new Idle(tls, socket, 0));
      return;
    }
    Idle c = new Idle(tls, socket, System.nanoTime());
    synchronized (this) {
      Deque<Idle> q = idle.computeIfAbsent(key, k -> new ArrayDeque<>());
      if (!closed && size < TOTAL && q.size() < PER_DESTINATION) {
        q.addLast(c);
        size++;
        return;
      }
      if (q.isEmpty()) {
        idle.remove(key);
      }
    }
    close(c);
  }

  /** Closes the connections idle for too long (the proxy's watchdog calls it). */
  void expire(long now) {
    Deque<Idle> expired = new ArrayDeque<>();
    synchronized (this) {
      for (Iterator<Deque<Idle>> it = idle.values().iterator(); it.hasNext(); ) {
        Deque<Idle> q = it.next();
        while (!q.isEmpty() && now - q.peekFirst().since() >= IDLE_NANOS) {
          expired.add(q.pollFirst());
          size--;
        }
        if (q.isEmpty()) {
          it.remove();
        }
      }
    }
    expired.forEach(UpstreamPool::close);
  }

  /** Connections idle now. */
  synchronized int size() {
    return size;
  }

  @Override
  public void close() {
    Deque<Idle> all = new ArrayDeque<>();
    synchronized (this) {
      closed = true;
      idle.values().forEach(all::addAll);
      idle.clear();
      size = 0;
    }
    all.forEach(UpstreamPool::close);
  }

  /** Whether nothing, not even the end of the stream, arrived while the connection was idle. */
  private static boolean quiet(Idle c) {
    try {
      c.socket().configureBlocking(false);
      try {
        return c.socket().read(ByteBuffer.allocate(1)) == 0;
      } finally {
        c.socket().configureBlocking(true);
      }
    } catch (IOException e) {
      return false;
    }
  }

  /** Says close_notify (an idle connection's send buffer has room for it) and closes. */
  private static void close(Idle c) {
    try {
      c.tls().shutdownOutput();
    } catch (IOException e) {
      // closed already
    }
    try {
      c.socket().close();
    } catch (IOException e) {
      // closing is all that is left to do
    }
  }
}
