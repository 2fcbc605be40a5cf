package dev.sandboxsdk.agent.egress;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A sandbox's egress proxy: HTTP {@code CONNECT} tunnels and absolute-form HTTP requests, each
 * decided by the current {@link EgressPolicy} on the addresses the proxy resolved itself, and
 * connected to the very address it checked. Every connection ends as an {@link EgressEvent} in
 * the {@link EgressAudit}.
 *
 * <p>Threads. Java 17 has no virtual threads, so this is blocking I/O on platform threads, bounded:
 * one accept thread, one watchdog thread, and a pool of at most two threads per connection (the
 * handshake and the client's side of the relay on one, the destination's side on the other),
 * while a semaphore admits at most {@link EgressLimits#maxConnections()} connections (one more is
 * answered {@code 503} without a thread). Idle pool threads end after a second. A selector loop
 * would use fewer threads, but the request head, the ClientHello check and the relays would become
 * state machines: more code to get wrong at a security boundary, for a bound that is already
 * small. The proxy shares no thread or lock with the agent's API, so a flood here cannot stall it.
 *
 * <p>Deadlines. The watchdog looks at every connection every {@value #TICK_MS} ms and closes the
 * channels of one past its deadline (head and handshake, the ClientHello, or the idle timeout),
 * which ends any read blocked on them; channel reads have no timeout of their own, and this way the
 * proxy also serves a Unix-domain server channel.
 *
 * <p>Policy updates swap one reference, which each new connection reads once: they apply to the
 * next connection at once, never to a connection already decided.
 */
public final class EgressProxy implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(EgressProxy.class);
  static final long TICK_MS = 50;
  static final long LINGER_MS = 500;
  static final int MAX_LINGERING = 256;
  private static final String BUSY_BODY = "egress refused by connection-limit\n";
  private static final byte[] BUSY = ("HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
      + "Content-Length: " + BUSY_BODY.length() + "\r\nConnection: close\r\n\r\n" + BUSY_BODY)
      .getBytes(StandardCharsets.ISO_8859_1);
  private static final AtomicInteger IDS = new AtomicInteger();

  private final ServerSocketChannel server;
  private final EgressResolver resolver;
  private final EgressLimits limits;
  private final EgressAudit audit;
  private volatile EgressPolicy policy;
  private final EgressSecrets secrets;
  private final CertificateAuthority authority;
  private final EgressTrust trust;
  private final Semaphore permits;
  private final Set<ProxyConnection> live = ConcurrentHashMap.newKeySet();
  private final UpstreamPool upstreams = new UpstreamPool();
  private final Queue<Lingering> lingering = new ConcurrentLinkedQueue<>();
  private final ThreadPoolExecutor pool;
  private final Thread acceptor;
  private final Thread watchdog;
  private volatile boolean closed;
  private volatile long lastBusyLog;

  private EgressProxy(ServerSocketChannel server, Builder b) throws IOException {
    this.server = server;
    this.resolver = b.resolver;
    this.limits = b.limits;
    this.audit = b.audit;
    this.policy = b.policy;
    this.secrets = b.secrets;
    this.authority = b.secrets.isEmpty() ? null
        : b.authority != null ? b.authority : CertificateAuthority.create("Sandbox egress CA");
    this.trust = b.trust != null ? b.trust : EgressTrust.system();
    this.permits = new Semaphore(limits.maxConnections());
    int id = IDS.incrementAndGet();
    AtomicInteger threads = new AtomicInteger();
    // Two threads per admitted connection; the slack covers a thread still finishing a connection
    // that has already given its place to the next.
    this.pool = new ThreadPoolExecutor(0, 2 * limits.maxConnections() + 16, 1, TimeUnit.SECONDS,
        new SynchronousQueue<>(), r -> daemon(r, "egress-" + id + "-conn-" + threads.incrementAndGet()));
    server.configureBlocking(true);
    this.acceptor = daemon(this::acceptLoop, "egress-" + id + "-accept");
    this.watchdog = daemon(this::watchLoop, "egress-" + id + "-watchdog");
    acceptor.start();
    watchdog.start();
  }

  /** A builder: policy off, the JDK's resolver, the default limits, a new audit. */
  public static Builder builder() {
    return new Builder();
  }

  /** The address it listens on. */
  public SocketAddress address() {
    try {
      return server.getLocalAddress();
    } catch (IOException e) {
      throw new IllegalStateException("proxy closed", e);
    }
  }

  /** The TCP port it listens on (-1 for a Unix-domain socket). */
  public int port() {
    return address() instanceof InetSocketAddress a ? a.getPort() : -1;
  }

  /** The policy new connections are decided by. */
  public EgressPolicy policy() {
    return policy;
  }

  /** Replaces the policy: every connection from now on is decided by it. */
  public void update(EgressPolicy next) {
    policy = Objects.requireNonNull(next, "policy");
    log.info("egress policy now {} with {} rule(s)", next.mode(), next.rules().size());
  }

  public EgressAudit audit() {
    return audit;
  }

  public EgressLimits limits() {
    return limits;
  }

  /** Connections open now (handshakes and tunnels). */
  public int liveConnections() {
    return live.size();
  }

  EgressResolver resolver() {
    return resolver;
  }

  /** The secrets the proxy puts into requests (none by default). */
  public EgressSecrets secrets() {
    return secrets;
  }

  /** The authority whose leaves intercepted connections present; null without secrets. */
  public CertificateAuthority authority() {
    return authority;
  }

  /** What the proxy trusts on its own TLS connections to intercepted hosts. */
  EgressTrust trust() {
    return trust;
  }

  /** Idle TLS connections to intercepted servers, for the next request to the same one. */
  UpstreamPool upstreams() {
    return upstreams;
  }

  void execute(Runnable task) {
    pool.execute(task);
  }

  /** A connection has ended: frees its place and records its event. */
  void ended(ProxyConnection connection, EgressEvent event) {
    if (live.remove(connection)) {
      permits.release();
    }
    audit.record(event);
  }

  private void acceptLoop() {
    while (!closed) {
      SocketChannel ch;
      try {
        ch = server.accept();
      } catch (ClosedChannelException e) { // AsynchronousCloseException included
        break;
      } catch (IOException e) {
        if (closed) {
          break;
        }
        log.warn("egress proxy cannot accept: {}", e.toString());
        sleep(50); // out of descriptors, say: let connections end
        continue;
      }
      admit(ch);
    }
  }

  private void admit(SocketChannel ch) {
    if (!permits.tryAcquire()) {
      busy(ch);
      return;
    }
    noDelay(ch);
    ProxyConnection connection = new ProxyConnection(this, ch);
    live.add(connection);
    if (closed) {
      connection.expire("proxy-closed");
      connection.end();
      return;
    }
    try {
      pool.execute(connection);
    } catch (RejectedExecutionException e) {
      connection.expire(closed ? "proxy-closed" : "refused");
      connection.end();
    }
  }

  /**
   * Small writes go at once: with Nagle on, the tunnel's second small write (a TLS server's next
   * record after the {@code 200}) waits for the client's delayed ACK, some 40 ms per handshake.
   * A Unix-domain channel (the relay's side, isolated) has no such option.
   */
  private static void noDelay(SocketChannel ch) {
    try {
      if (ch.supportedOptions().contains(java.net.StandardSocketOptions.TCP_NODELAY)) {
        ch.setOption(java.net.StandardSocketOptions.TCP_NODELAY, true);
      }
    } catch (IOException e) {
      // the client is gone; its connection fails on first use
    }
  }

  /**
   * Over the cap: a 503 written without blocking, and no thread spent. The channel stays open for
   * up to {@value #LINGER_MS} ms, drained by the watchdog, so that closing it with the client's
   * request unread does not reset the connection before the client reads the 503; past {@value
   * #MAX_LINGERING} such channels, one is closed at once.
   */
  private void busy(SocketChannel ch) {
    try {
      ch.configureBlocking(false);
      ch.write(ByteBuffer.wrap(BUSY));
      ch.shutdownOutput();
      if (lingering.size() < MAX_LINGERING) {
        lingering.add(new Lingering(ch, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(LINGER_MS)));
      } else {
        ch.close();
      }
    } catch (IOException e) {
      closeQuietly(ch); // the client is gone already
    }
    long now = System.nanoTime();
    if (now - lastBusyLog > TimeUnit.SECONDS.toNanos(10)) {
      lastBusyLog = now;
      log.warn("egress proxy at its cap of {} connections: refusing more", limits.maxConnections());
    }
    audit.recordQuietly(new EgressEvent(0, Instant.now(), "", 0, null, false, "connection-limit", 0, 0,
        Instant.now(), "refused", List.of()));
  }

  private void watchLoop() {
    ByteBuffer sink = ByteBuffer.allocate(4096);
    while (!closed) {
      long now = System.nanoTime();
      for (ProxyConnection c : live) {
        c.checkDeadline(now);
      }
      upstreams.expire(now);
      for (Lingering l : lingering) {
        if (now - l.until() > 0 || drained(l.channel(), sink)) {
          lingering.remove(l);
          closeQuietly(l.channel());
        }
      }
      sleep(TICK_MS);
    }
    for (Lingering l : lingering) {
      closeQuietly(l.channel());
    }
    lingering.clear();
    upstreams.close();
  }

  /** Reads what a refused client sent, without blocking; true once it has closed its side. */
  private static boolean drained(SocketChannel ch, ByteBuffer sink) {
    try {
      for (int i = 0; i < 16; i++) {
        sink.clear();
        int n = ch.read(sink);
        if (n < 0) {
          return true;
        }
        if (n == 0) {
          return false;
        }
      }
      return false;
    } catch (IOException e) {
      return true;
    }
  }

  private static void closeQuietly(SocketChannel ch) {
    try {
      ch.close();
    } catch (IOException e) {
      // nothing more to do with it
    }
  }

  private record Lingering(SocketChannel channel, long until) {}

  /** Stops accepting, closes every live connection and waits for the proxy's threads to end. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      server.close();
    } catch (IOException e) {
      log.debug("closing the egress listener: {}", e.toString());
    }
    for (ProxyConnection c : live) {
      c.expire("proxy-closed");
    }
    watchdog.interrupt();
    pool.shutdown();
    try {
      acceptor.join(5_000);
      watchdog.join(5_000);
      if (!pool.awaitTermination(5, TimeUnit.SECONDS)) {
        pool.shutdownNow();
        log.warn("egress proxy threads still running after close");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    for (ProxyConnection c : live) {
      c.end(); // a connection admitted but never run
    }
    for (Lingering l : lingering) {
      closeQuietly(l.channel()); // refused while the watchdog was stopping
    }
    lingering.clear();
    upstreams.close();
  }

  private static Thread daemon(Runnable r, String name) {
    Thread t = new Thread(r, name);
    t.setDaemon(true);
    return t;
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** What a proxy starts with. */
  public static final class Builder {
    private EgressPolicy policy = EgressPolicy.off();
    private EgressResolver resolver = EgressResolver.system();
    private EgressLimits limits = EgressLimits.defaults();
    private EgressAudit audit = new EgressAudit();
    private EgressSecrets secrets = EgressSecrets.none();
    private CertificateAuthority authority;
    private EgressTrust trust;

    private Builder() {}

    /**
     * Secrets to put into requests to their hosts; connections to those hosts are intercepted
     * (TLS terminated with a leaf of {@link #authority}).
     */
    public Builder secrets(EgressSecrets s) {
      this.secrets = Objects.requireNonNull(s, "secrets");
      return this;
    }

    /** The authority that issues the leaves; one is made if secrets are given without it. */
    public Builder authority(CertificateAuthority a) {
      this.authority = Objects.requireNonNull(a, "authority");
      return this;
    }

    /** What upstream TLS connections trust: the JDK's default unless told (tests add their CA). */
    public Builder trust(EgressTrust t) {
      this.trust = Objects.requireNonNull(t, "trust");
      return this;
    }

    public Builder policy(EgressPolicy p) {
      this.policy = Objects.requireNonNull(p, "policy");
      return this;
    }

    public Builder resolver(EgressResolver r) {
      this.resolver = Objects.requireNonNull(r, "resolver");
      return this;
    }

    public Builder limits(EgressLimits l) {
      this.limits = Objects.requireNonNull(l, "limits");
      return this;
    }

    public Builder audit(EgressAudit a) {
      this.audit = Objects.requireNonNull(a, "audit");
      return this;
    }

    /** Starts a proxy on an ephemeral port of 127.0.0.1. */
    public EgressProxy start() throws IOException {
      ServerSocketChannel ch = ServerSocketChannel.open();
      try {
        ch.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 1024);
        return new EgressProxy(ch, this);
      } catch (IOException | RuntimeException e) {
        ch.close();
        throw e;
      }
    }

    /**
     * Starts a proxy on a server channel already bound (TCP, or a Unix-domain socket); the proxy
     * owns it from now on and closes it on {@link EgressProxy#close()}.
     */
    public EgressProxy start(ServerSocketChannel bound) throws IOException {
      return new EgressProxy(bound, this);
    }
  }
}
