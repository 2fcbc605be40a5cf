package dev.sandboxsdk.agent.http;

import dev.sandboxsdk.agent.process.NativeLibc;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps connections that send nothing from holding the agent's connection cap.
 *
 * <p>The JDK server accepts a connection at once and keeps it, inside its cap, until its own idle
 * deadline (30 s) even if no byte ever arrives; its executor, where {@link Admission} watches,
 * only sees a connection once bytes arrive. Two things close that gap, both on the kernel's side
 * of the JDK:
 *
 * <ul>
 *   <li>{@code TCP_DEFER_ACCEPT} on the listening socket: the kernel hands a connection to the
 *       server only once its first bytes arrive, or after {@link Admission#HEADER_DEADLINE_MS}
 *       of silence. A client that sends its request at once is not delayed at all.
 *   <li>A sweep, every {@link #PERIOD_MS} ms ({@link #ATTACKED_PERIOD_MS} ms for 30 s after one
 *       found a silent connection), and soon after connections arrive on the listening socket
 *       (at most every {@link #MIN_GAP_MS} ms), of the agent's accepted connections (its
 *       descriptors, asked for {@code TCP_INFO}): one that has received no byte is shut down
 *       ({@code shutdown(2)}; the JDK then sees its end and closes it) at once where accepting is
 *       deferred (it has been silent for the deadline), else once it has been silent for the
 *       deadline since its accept; past {@code maxSilent} such connections the longest-silent go
 *       first.
 * </ul>
 *
 * <p>A descriptor is acted on only through a duplicate checked to be the same socket, so a
 * descriptor closed and reused meanwhile is never touched. Linux on x86-64 and aarch64; elsewhere
 * (or if the calls cannot be bound) it does nothing and says so once. Thread-safe; {@link
 * #close()} stops the sweep.
 */
final class SilentConnections implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(SilentConnections.class);
  /** Arrivals wake the sweep, so the period only catches what arrived while it was sweeping. */
  static final long PERIOD_MS = 500;
  /** The period for 30 s after a sweep found a silent connection. */
  static final long ATTACKED_PERIOD_MS = 20;
  /** The least time between two sweeps, however many connections arrive. */
  static final long MIN_GAP_MS = 10;
  /** How long after connections arrive the sweep waits for the JDK server to accept them. */
  private static final long ACCEPT_MS = 2;
  private static final int POLLIN = 1;
  // <sys/socket.h>, <netinet/tcp.h>: the same on x86-64 and aarch64
  private static final int SOL_SOCKET = 1;
  private static final int SO_ACCEPTCONN = 30;
  private static final int IPPROTO_TCP = 6;
  private static final int TCP_DEFER_ACCEPT = 9;
  private static final int TCP_INFO = 11;
  private static final int SHUT_RDWR = 2;
  private static final int AF_INET = 2;
  private static final int AF_INET6 = 10;
  // struct tcp_info: tcpi_last_data_recv (ms, u32) and tcpi_bytes_received (u64, Linux 4.1+)
  private static final int LAST_DATA_RECV = 52;
  private static final int BYTES_RECEIVED = 128;
  private static final Path FDS = Path.of("/proc/self/fd");
  private static final String UNAVAILABLE = NativeLibc.register(Calls.class);

  private final int port;
  /** A duplicate of the listening socket's descriptor, to wait for connections on; or -1. */
  private final int listening;
  private final int maxSilent;
  private final long graceMs;
  private final AtomicInteger shut = new AtomicInteger();
  private final Thread sweeper;
  private volatile boolean closed;

  private SilentConnections(int port, int maxSilent, long graceMs, int listening) {
    this.port = port;
    this.listening = listening;
    this.maxSilent = maxSilent;
    this.graceMs = graceMs;
    this.sweeper = new Thread(null, this::sweepLoop, "agent-silent-connections", 256 * 1024);
    sweeper.setDaemon(true);
  }

  /**
   * Defers accepting on the server's listening socket on {@code port} and starts the sweep.
   *
   * @param maxSilent how many accepted connections may be silent at once
   */
  static SilentConnections start(int port, int maxSilent, long headerDeadlineMs) {
    int listening = UNAVAILABLE == null ? deferAccept(port, headerDeadlineMs) : -1;
    boolean deferred = listening >= 0;
    if (UNAVAILABLE != null) {
      log.warn("connections that send nothing are closed only by the JDK server's idle deadline: {}", UNAVAILABLE);
    } else if (!deferred) {
      log.warn("could not set TCP_DEFER_ACCEPT on port {}: connections that send nothing count from their accept", port);
    }
    // Deferred, an accepted connection without a byte has been silent for the deadline already.
    SilentConnections s = new SilentConnections(port, maxSilent, deferred ? 0 : headerDeadlineMs, listening);
    if (UNAVAILABLE == null) {
      s.sweeper.start();
    }
    return s;
  }

  @Override
  public void close() {
    closed = true;
    sweeper.interrupt();
    if (listening >= 0) {
      try {
        sweeper.join(1_000); // it may be in poll() on the duplicate, which must outlive that
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      Calls.close(listening);
    }
  }

  private void sweepLoop() {
    long lastLog = System.nanoTime() - TimeUnit.SECONDS.toNanos(61);
    int lastShut = 0;
    long lastFound = System.nanoTime() - TimeUnit.SECONDS.toNanos(31);
    while (!closed) {
      try {
        // The kernel hands over a holder's deferred connections in bursts that fill the cap until
        // the next sweep: while one is under way, sweep more often.
        boolean attacked = System.nanoTime() - lastFound < TimeUnit.SECONDS.toNanos(30);
        awaitConnections(attacked ? ATTACKED_PERIOD_MS : PERIOD_MS);
        if (sweep() > 0) {
          lastFound = System.nanoTime();
        }
        Thread.sleep(MIN_GAP_MS);
      } catch (InterruptedException e) {
        return;
      } catch (RuntimeException e) {
        log.warn("sweep of silent connections failed", e);
      }
      int total = shut.get();
      if (total != lastShut && System.nanoTime() - lastLog > TimeUnit.SECONDS.toNanos(60)) {
        log.warn("closed {} connections that sent no byte within the header deadline (at most {} may be silent"
            + " at once)", total - lastShut, maxSilent);
        lastShut = total;
        lastLog = System.nanoTime();
      }
    }
  }

  /** One accepted connection that has not sent a byte, held by a duplicate descriptor. */
  private record Silent(int dup, long silentMs) {}

  /**
   * Waits for the period, or less if connections arrive on the listening socket (then a moment
   * more, for the JDK server to accept them): the kernel hands over deferred connections in a
   * burst that can fill the cap, and the sooner the sweep, the shorter they hold it. Sweeps stay
   * {@link #MIN_GAP_MS} apart however many connections arrive.
   */
  private void awaitConnections(long periodMs) throws InterruptedException {
    if (listening < 0) {
      Thread.sleep(periodMs);
      return;
    }
    int[] pollfd = {listening, POLLIN}; // struct pollfd: int fd; short events; short revents
    if (Calls.poll(pollfd, 1, (int) periodMs) > 0) {
      Thread.sleep(ACCEPT_MS);
    }
  }

  /** One sweep; returns how many silent connections it shut down. */
  int sweep() {
    int shutNow = 0;
    List<Silent> silent = new ArrayList<>();
    try {
      for (Map.Entry<Integer, String> socket : socketDescriptors().entrySet()) {
        Silent s = inspect(socket.getKey(), socket.getValue());
        if (s != null) {
          silent.add(s);
        }
      }
      silent.sort(Comparator.comparingLong(Silent::silentMs).reversed());
      for (int i = 0; i < silent.size(); i++) {
        Silent s = silent.get(i);
        if ((s.silentMs() >= graceMs || silent.size() - i > maxSilent) && Calls.shutdown(s.dup(), SHUT_RDWR) == 0) {
          shut.incrementAndGet();
          shutNow++;
        }
      }
    } finally {
      for (Silent s : silent) {
        Calls.close(s.dup());
      }
    }
    return shutNow;
  }

  /** The agent's socket descriptors, each socket once: descriptor to {@code socket:[inode]}. */
  private static Map<Integer, String> socketDescriptors() {
    Map<Integer, String> fds = new HashMap<>();
    Set<String> sockets = new HashSet<>();
    try (DirectoryStream<Path> dir = Files.newDirectoryStream(FDS)) {
      for (Path p : dir) {
        String target = link(p);
        if (target != null && target.startsWith("socket:") && sockets.add(target)) {
          fds.put(Integer.parseInt(p.getFileName().toString()), target);
        }
      }
    } catch (IOException e) {
      // /proc unreadable: nothing to sweep this time
    }
    return fds;
  }

  private static String link(Path p) {
    try {
      return Files.readSymbolicLink(p).toString();
    } catch (IOException | UnsupportedOperationException e) {
      return null; // closed meanwhile
    }
  }

  /**
   * A duplicate of {@code fd} if it is a connection accepted on our port that has received no
   * byte (the caller closes it), else null. The duplicate is checked to be the socket that {@code
   * fd} named when it was listed.
   */
  private Silent inspect(int fd, String socket) {
    int dup = Calls.dup(fd);
    if (dup < 0) {
      return null;
    }
    boolean keep = false;
    try {
      if (!socket.equals(link(FDS.resolve(Integer.toString(dup)))) || localPort(dup) != port) {
        return null;
      }
      byte[] peer = new byte[128];
      if (Calls.getpeername(dup, peer, new int[] {peer.length}) != 0) {
        return null; // the listening socket
      }
      byte[] info = new byte[256];
      int[] len = {info.length};
      if (Calls.getsockopt(dup, IPPROTO_TCP, TCP_INFO, info, len) != 0 || len[0] < BYTES_RECEIVED + 8) {
        return null;
      }
      ByteBuffer b = ByteBuffer.wrap(info).order(ByteOrder.nativeOrder());
      if (b.getLong(BYTES_RECEIVED) != 0) {
        return null;
      }
      keep = true;
      return new Silent(dup, Integer.toUnsignedLong(b.getInt(LAST_DATA_RECV)));
    } finally {
      if (!keep) {
        Calls.close(dup);
      }
    }
  }

  private static int localPort(int fd) {
    byte[] addr = new byte[128];
    if (Calls.getsockname(fd, addr, new int[] {addr.length}) != 0) {
      return -1;
    }
    int family = (addr[0] & 0xff) | (addr[1] & 0xff) << 8; // sa_family_t, host order
    if (family != AF_INET && family != AF_INET6) {
      return -1;
    }
    return (addr[2] & 0xff) << 8 | (addr[3] & 0xff); // network order
  }

  /**
   * Sets TCP_DEFER_ACCEPT on the listening socket of {@code port} (at start, before any other
   * socket is opened or closed); returns a duplicate of its descriptor, or -1 if none was set.
   */
  private static int deferAccept(int port, long headerDeadlineMs) {
    int[] seconds = {(int) Math.max(1, TimeUnit.MILLISECONDS.toSeconds(headerDeadlineMs))};
    for (int fd : socketDescriptors().keySet()) {
      int[] listening = {0};
      int[] len = {4};
      if (Calls.getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, listening, len) == 0 && listening[0] == 1
          && localPort(fd) == port && Calls.setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, seconds, 4) == 0) {
        return Calls.dup(fd);
      }
    }
    return -1;
  }

  /** The socket calls, by JNA direct mapping. */
  private static final class Calls {
    private Calls() {}

    static native int dup(int fd);

    static native int close(int fd);

    static native int shutdown(int fd, int how);

    static native int getsockname(int fd, byte[] addr, int[] len);

    static native int getpeername(int fd, byte[] addr, int[] len);

    static native int getsockopt(int fd, int level, int name, byte[] value, int[] len);

    static native int getsockopt(int fd, int level, int name, int[] value, int[] len);

    static native int setsockopt(int fd, int level, int name, int[] value, int len);

    static native int poll(int[] fds, long nfds, int timeoutMs);
  }
}
