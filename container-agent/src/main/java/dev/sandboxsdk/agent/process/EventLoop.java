package dev.sandboxsdk.agent.process;

import com.sun.jna.Memory;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One thread that waits, with epoll, on every descriptor the native spawn watches: the pidfd of
 * each process it started (to reap it the moment it exits) and the output pipes of background
 * processes (to append what they write to their windows). A thousand idle processes therefore
 * cost no thread at all, where the JDK's path costs three each (a reaper and two readers).
 *
 * <p>Handlers run on the loop thread and must not block; they may register and unregister
 * descriptors. Each registration has its own key, so an event that arrives for a descriptor
 * already closed and reused finds no handler instead of the wrong one. Thread-safe.
 */
final class EventLoop implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(EventLoop.class);
  private static final int MAX_EVENTS = 256;

  /** Called on the loop thread when a registered descriptor is ready. */
  interface Handler {
    void ready(int events);
  }

  private final int epfd;

  /** The epoll descriptor, for tests. */
  int descriptor() {
    return epfd;
  }
  private final Map<Long, Handler> handlers = new ConcurrentHashMap<>();
  private final AtomicLong keys = new AtomicLong();
  private final Thread thread;
  private volatile boolean closed;
  /** Set, under this object's lock, once the loop thread has closed {@link #epfd}. */
  private boolean epfdClosed;
  /** The loop thread's read buffer, shared by every output handler (they run one at a time). */
  final Memory buffer = new Memory(64 * 1024);
  /** Where the loop thread copies {@link #buffer} for a sink: no garbage per read. */
  final byte[] chunk = new byte[64 * 1024];

  EventLoop() {
    epfd = Libc.epoll_create1(Libc.O_CLOEXEC);
    if (epfd < 0) {
      throw new IllegalStateException("epoll_create1 failed: " + Libc.strerror(Libc.errno()));
    }
    thread = new Thread(null, this::run, "agent-events", 256 * 1024);
    thread.setDaemon(true);
    thread.start();
  }

  /**
   * Watches {@code fd} for input (or hang-up); returns the key to {@link #remove} it with.
   *
   * @throws IllegalStateException if the kernel refuses, or the loop has stopped
   */
  synchronized long add(int fd, Handler handler) {
    if (epfdClosed) {
      throw new IllegalStateException("the event loop has stopped");
    }
    long key = keys.incrementAndGet();
    handlers.put(key, handler);
    try (Memory ev = new Memory(16)) {
      ev.clear();
      ev.setInt(0, Libc.EPOLLIN);
      ev.setLong(Libc.EPOLL_DATA_OFFSET, key);
      if (Libc.epoll_ctl(epfd, Libc.EPOLL_CTL_ADD, fd, ev) != 0) {
        handlers.remove(key);
        throw new IllegalStateException("epoll_ctl(ADD) failed: " + Libc.strerror(Libc.errno()));
      }
    }
    return key;
  }

  /** Stops watching {@code fd}; the caller closes it afterwards. */
  synchronized void remove(long key, int fd) {
    handlers.remove(key);
    if (!epfdClosed) {
      Libc.epoll_ctl(epfd, Libc.EPOLL_CTL_DEL, fd, null);
    }
  }

  boolean onLoopThread() {
    return Thread.currentThread() == thread;
  }

  private void run() {
    try (Memory events = new Memory((long) MAX_EVENTS * Libc.EPOLL_EVENT_SIZE)) {
      while (!closed) {
        int n = Libc.epoll_wait(epfd, events, MAX_EVENTS, 1000);
        if (n < 0) {
          if (Libc.errno() == Libc.EINTR) {
            continue;
          }
          log.error("epoll_wait failed: {}; process exits and background output are no longer watched",
              Libc.strerror(Libc.errno()));
          return;
        }
        for (int i = 0; i < n; i++) {
          long at = (long) i * Libc.EPOLL_EVENT_SIZE;
          int mask = events.getInt(at);
          Handler h = handlers.get(events.getLong(at + Libc.EPOLL_DATA_OFFSET));
          if (h == null) {
            continue;
          }
          try {
            h.ready(mask);
          } catch (RuntimeException | Error e) {
            log.warn("event handler failed: {}", e.toString(), e);
          }
        }
      }
    } finally {
      // Under the lock: a closed number may be reused at once, and add/remove must not touch that.
      synchronized (this) {
        epfdClosed = true;
        Libc.close(epfd);
      }
    }
  }

  @Override
  public void close() {
    closed = true; // the loop notices within its one-second wait and closes the epoll descriptor
  }
}
