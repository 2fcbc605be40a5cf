package dev.sandboxsdk.agent.egress;

import java.io.EOFException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One client connection to the proxy: its request head, the decision, then a {@link Tunnel} to the
 * destination. The handshake (head, resolution, decision, connect) runs on the connection's pool
 * thread under the handshake deadline; {@link EgressProxy}'s watchdog enforces the deadlines by
 * closing the channels, which ends any blocked read.
 */
final class ProxyConnection implements Runnable {
  /** One pump's buffer: what a socket delivers at once, roughly, and small beside the thread's stack. */
  private static final int COPY_BUFFER = 16 * 1024;
  /** RFC 9110 hop-by-hop headers, plus the proxy's own; never forwarded. */
  private static final Set<String> HOP_BY_HOP = Set.of("connection", "keep-alive", "proxy-authenticate",
      "proxy-authorization", "proxy-connection", "te", "trailer", "upgrade");
  private static final Logger log = LoggerFactory.getLogger(ProxyConnection.class);
  private static final long LINGER_NANOS = TimeUnit.SECONDS.toNanos(1);

  private final EgressProxy proxy;
  final SocketChannel client;
  volatile SocketChannel upstream;
  /** An idle TLS connection to the intercepted destination, taken from the proxy's pool; or null. */
  TlsChannel pooled;
  /** The intercepted destination's key in the proxy's pool of idle connections. */
  String poolKey;
  private final Instant time = Instant.now();
  /** Absolute deadline (System.nanoTime) while not relaying, or for a ClientHello; 0 for none. */
  volatile long deadline;
  /** Whether the tunnel runs (then the idle timeout applies). */
  volatile boolean relaying;
  volatile long lastActivity = System.nanoTime();
  private final AtomicReference<String> outcome = new AtomicReference<>();
  private final AtomicBoolean ended = new AtomicBoolean();
  private volatile String host = "";
  private volatile int port;
  private volatile Decision decision = Decision.deny("malformed-request", null);
  /** The secrets the request carried (put in, or the cause of its refusal). */
  volatile List<String> secrets = List.of();
  final Tunnel tunnel = new Tunnel(this);

  ProxyConnection(EgressProxy proxy, SocketChannel client) {
    this.proxy = proxy;
    this.client = client;
    this.deadline = System.nanoTime() + proxy.limits().handshakeTimeout().toNanos();
  }

  EgressProxy proxy() {
    return proxy;
  }

  @Override
  public void run() {
    try {
      RequestHead head;
      try {
        head = RequestHead.read(client, proxy.limits().maxHeaderBytes());
      } catch (RequestHead.TooLarge e) {
        refuse(431, "Request Header Fields Too Large", "request-head-too-large");
        return;
      } catch (RequestHead.Malformed e) {
        refuse(400, "Bad Request", "malformed-request");
        return;
      }
      if (head.method().equals("CONNECT")) {
        connect(head);
      } else {
        forward(head);
      }
    } catch (IOException e) {
      fail(relaying ? "error" : "closed");
    } catch (RuntimeException e) {
      log.warn("egress connection to {}:{} failed", host, port, e);
      fail("error");
    }
  }

  private void connect(RequestHead head) throws IOException {
    Targets target;
    try {
      target = Targets.authority(head.target(), -1);
    } catch (IllegalArgumentException e) {
      host = clip(head.target());
      refuse(400, "Bad Request", Decision.INVALID_HOST);
      return;
    }
    boolean intercept = proxy.secrets().intercepts(target.host(), target.port());
    if (!open(target, intercept)) {
      return;
    }
    write(client, "HTTP/1.1 200 Connection established\r\n\r\n");
    if (intercept) {
      new Interception(this, target, pooled).run(head.rest());
      return;
    }
    deadline = 0;
    lastActivity = System.nanoTime();
    relaying = true;
    tunnel.start(head.rest(), target.host(), -1);
  }

  private void forward(RequestHead head) throws IOException {
    Targets target;
    try {
      target = Targets.absolute(head.target());
    } catch (IllegalArgumentException e) {
      host = clip(head.target());
      refuse(400, "Bad Request", head.target().startsWith("/") ? "not-absolute-form" : Decision.INVALID_HOST);
      return;
    }
    List<String> hosts = head.values("host");
    boolean agree;
    try {
      agree = hosts.size() == 1 && Targets.authority(hosts.get(0), 80).sameDestination(target);
    } catch (IllegalArgumentException e) {
      agree = false;
    }
    if (!agree) {
      host = target.host().text();
      port = target.port();
      refuse(400, "Bad Request", Decision.HOST_MISMATCH);
      return;
    }
    long bodyLength = bodyLength(head);
    if (bodyLength == -2) {
      host = target.host().text();
      port = target.port();
      refuse(400, "Bad Request", "malformed-request");
      return;
    }
    EgressSecrets.Rewrite rewrite = proxy.secrets().rewrite(head.target(), head.headers(), target.host(),
        target.port(), false);
    if (rewrite.refused()) {
      host = target.host().text();
      port = target.port();
      secrets = rewrite.secrets();
      refuse(403, "Forbidden", rewrite.refusal());
      return;
    }
    if (!open(target, false)) {
      return;
    }
    byte[] upstreamHead = originForm(head.method(), target.path(), head.headers(), true)
        .getBytes(StandardCharsets.ISO_8859_1);
    write(upstream, ByteBuffer.wrap(upstreamHead));
    tunnel.addUp(upstreamHead.length);
    deadline = 0;
    lastActivity = System.nanoTime();
    relaying = true;
    tunnel.start(head.rest(), null, bodyLength);
  }

  /** Content-Length, -1 for a chunked body (relayed until the answer ends), -2 if invalid. */
  static long bodyLength(RequestHead head) {
    List<String> lengths = head.values("content-length");
    List<String> encodings = head.values("transfer-encoding");
    if (!encodings.isEmpty()) {
      boolean chunked = encodings.size() == 1 && encodings.get(0).equalsIgnoreCase("chunked");
      return chunked && lengths.isEmpty() ? -1 : -2;
    }
    if (lengths.isEmpty()) {
      return 0;
    }
    if (lengths.size() != 1 || !lengths.get(0).matches("[0-9]{1,18}")) {
      return -2;
    }
    return Long.parseLong(lengths.get(0));
  }

  /**
   * A request head as sent on: origin form, no hop-by-hop or proxy headers, and {@code Connection:
   * close} if {@code close} (else the connection stays open, HTTP/1.1's default).
   */
  static String originForm(String method, String path, List<String[]> headers, boolean close) {
    StringBuilder sb = new StringBuilder(method).append(' ').append(path).append(" HTTP/1.1\r\n");
    for (String[] h : headers) {
      if (!HOP_BY_HOP.contains(h[0].toLowerCase(Locale.ROOT))) {
        sb.append(h[0]).append(": ").append(h[1]).append("\r\n");
      }
    }
    return sb.append(close ? "Connection: close\r\n\r\n" : "\r\n").toString();
  }

  /**
   * Decides and connects (or, for an intercepted destination, takes an idle TLS connection to it
   * from the proxy's pool into {@link #pooled}); false (with the client answered) if refused or
   * unreachable.
   */
  private boolean open(Targets target, boolean intercept) throws IOException {
    host = target.host().text();
    port = target.port();
    Decision d = decide(target.host(), target.port());
    decision = d;
    if (!d.allowed()) {
      boolean unresolvable = Decision.UNRESOLVABLE.equals(d.rule());
      refuse(unresolvable ? 502 : 403, unresolvable ? "Bad Gateway" : "Forbidden", d.rule());
      return false;
    }
    if (intercept) {
      poolKey = UpstreamPool.key(target.host().name(), port, d.address());
      UpstreamPool.Idle idle = proxy.upstreams().take(poolKey);
      if (idle != null) {
        upstream = idle.socket();
        pooled = idle.tls();
        if (ended.get()) {
          closeQuietly(upstream);
          throw new EOFException("connection ended");
        }
        return true;
      }
    }
    SocketChannel up = SocketChannel.open();
    upstream = up;
    if (ended.get()) {
      up.close();
      throw new EOFException("connection ended");
    }
    try {
      up.setOption(StandardSocketOptions.TCP_NODELAY, true);
      up.socket().connect(new InetSocketAddress(d.address(), target.port()),
          (int) proxy.limits().connectTimeout().toMillis());
    } catch (IOException e) {
      outcome.compareAndSet(null, "connect-failed");
      respond(502, "Bad Gateway", "egress: cannot connect to " + host + ":" + port + "\n");
      return false;
    }
    return true;
  }

  private Decision decide(HostNames.Host target, int targetPort) {
    EgressPolicy policy = proxy.policy();
    Optional<Decision> early = policy.decideBeforeResolving(target, targetPort);
    if (early.isPresent()) {
      return early.get();
    }
    List<InetAddress> addresses = List.of();
    if (!target.isLiteral()) {
      try {
        addresses = proxy.resolver().resolve(target.name());
      } catch (UnknownHostException e) {
        return Decision.deny(Decision.UNRESOLVABLE, null);
      }
    }
    return policy.decide(target, targetPort, addresses);
  }

  /** Refuses with the status and a body naming the rule, recording the refusal. */
  void refuse(int status, String reason, String rule) throws IOException {
    decision = Decision.deny(rule, decision.address());
    outcome.compareAndSet(null, "refused");
    List<String> names = secrets;
    String because = names.isEmpty() ? rule : rule + " (" + String.join(", ", names) + ")";
    respond(status, reason, "egress " + (status == 403 ? "denied" : "refused") + " by " + because + "\n");
  }

  private void respond(int status, String reason, String body) throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    write(client, "HTTP/1.1 " + status + " " + reason + "\r\nContent-Type: text/plain; charset=utf-8\r\n"
        + "Content-Length: " + bytes.length + "\r\nConnection: close\r\n\r\n" + body);
    lingeringClose();
  }

  /** Lets the client read the answer: stop sending, take what it still sends for a second, close. */
  void lingeringClose() {
    try {
      client.shutdownOutput();
      deadline = System.nanoTime() + LINGER_NANOS;
      ByteBuffer sink = ByteBuffer.allocate(8192);
      long drained = 0;
      while (drained < 1 << 20 && client.read(sink) >= 0) {
        drained += sink.position();
        sink.clear();
      }
    } catch (IOException e) {
      // the client or the deadline closed it: either way it is over
    }
    end();
  }

  /** Records a failed handshake or relay as ended with the outcome (unless one is set). */
  void fail(String why) {
    if (why != null) {
      outcome.compareAndSet(null, why);
    }
    end();
  }

  /** Closes both sides because of a deadline or the proxy closing. */
  void expire(String why) {
    outcome.compareAndSet(null, why);
    closeChannels();
  }

  /** Called by the watchdog: enforces the handshake, ClientHello and idle deadlines. */
  void checkDeadline(long now) {
    long d = deadline;
    if (d != 0 && now - d > 0) {
      expire("handshake-timeout"); // a refusal lingering past its second keeps "refused"
    } else if (relaying && now - lastActivity > proxy.limits().idleTimeout().toNanos()) {
      expire("idle-timeout");
    }
  }

  /** An intercepted request refused by the rule: the decision becomes a refusal naming the secrets. */
  void refuseIntercepted(String rule, List<String> names) {
    decision = Decision.deny(rule, decision.address());
    secrets = names;
    outcome.compareAndSet(null, "refused");
  }

  /** The proxy's TLS to the destination failed (its certificate, say). */
  void failUpstream() {
    outcome.compareAndSet(null, "connect-failed");
  }

  /** A tunnel refused by the ClientHello check: the decision becomes a refusal. */
  void refuseInTunnel(String rule) {
    decision = Decision.deny(rule, decision.address());
    outcome.compareAndSet(null, "refused");
    closeChannels();
  }

  /** Takes the upstream channel out of this connection (into the pool): closing it no longer closes that. */
  void releaseUpstream() {
    upstream = null;
  }

  void closeChannels() {
    closeQuietly(client);
    closeQuietly(upstream);
  }

  /** Ends the connection once: closes it, frees its place, and records its event. */
  void end() {
    if (!ended.compareAndSet(false, true)) {
      return;
    }
    closeChannels();
    outcome.compareAndSet(null, "closed");
    Decision d = decision;
    InetAddress address = d.address();
    proxy.ended(this, new EgressEvent(0, time, host, port, address == null ? null : address.getHostAddress(),
        d.allowed(), d.rule(), tunnel.bytesUp(), tunnel.bytesDown(), Instant.now(), outcome.get(), secrets));
  }

  private void write(SocketChannel ch, String text) throws IOException {
    write(ch, ByteBuffer.wrap(text.getBytes(StandardCharsets.ISO_8859_1)));
  }

  static void write(java.nio.channels.WritableByteChannel ch, ByteBuffer buf) throws IOException {
    while (buf.hasRemaining()) {
      ch.write(buf);
    }
  }

  /**
   * Copies until end of stream or {@code limit} bytes, counting them and marking this connection
   * active (so the idle timeout measures silence, not age); returns the bytes copied. The tunnel's
   * pumps and the interception's both copy through it.
   */
  long copy(java.nio.channels.ReadableByteChannel from, java.nio.channels.WritableByteChannel to,
      java.util.function.LongConsumer counter, long limit) throws IOException {
    ByteBuffer buf = ByteBuffer.allocate(COPY_BUFFER);
    long left = limit;
    while (left > 0) {
      buf.clear();
      if (left < COPY_BUFFER) {
        buf.limit((int) left);
      }
      int n = from.read(buf);
      if (n < 0) {
        break;
      }
      lastActivity = System.nanoTime();
      buf.flip();
      write(to, buf);
      counter.accept(n);
      left -= n;
      lastActivity = System.nanoTime();
    }
    return limit - left;
  }

  private static void closeQuietly(SocketChannel ch) {
    if (ch != null) {
      try {
        ch.close();
      } catch (IOException e) {
        // closing is all that is left to do
      }
    }
  }

  private static String clip(String s) {
    return s.length() > 255 ? s.substring(0, 255) : s;
  }
}
