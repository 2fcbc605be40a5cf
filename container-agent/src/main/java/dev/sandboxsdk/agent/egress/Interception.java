package dev.sandboxsdk.agent.egress;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.ExtendedSSLSession;
import javax.net.ssl.SNIHostName;
import javax.net.ssl.SNIServerName;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLParameters;

/**
 * A CONNECT to a host a secret is bound to, after the proxy's {@code 200}: the proxy terminates the
 * client's TLS with a leaf from its {@link CertificateAuthority} (ALPN: {@code http/1.1} only),
 * reads one HTTP/1.1 request head, puts the secrets' values in for their placeholders ({@link
 * EgressSecrets#rewrite}), and sends it over its own TLS connection to the address the policy
 * allowed (certificate and host name verified against {@link EgressTrust}), then relays the
 * request's body up and the answer down by its framing ({@link ResponseRelay}). One request per
 * client connection; the server connection goes back to the proxy's {@link UpstreamPool} when the
 * answer left it reusable and the request's body went up whole.
 *
 * <p>The upstream handshake runs on a second thread from the {@code 200} on, beside the client's
 * handshake and request head, instead of after them: the two handshakes are most of what
 * interception costs, and the second thread is the one that relays the answer down anyway. Nothing
 * is sent upstream before the request has passed every check; a refused request or a failed
 * client handshake only closes the upstream TLS connection.
 *
 * <p>The deadlines are the tunnel's: from the {@code 200}, the client's handshake, its request
 * head and the upstream handshake must finish within the handshake deadline; then the idle
 * timeout applies. The watchdog enforces both by closing the channels.
 */
final class Interception {
  private static final String[] ALPN = {"http/1.1"};

  private final ProxyConnection connection;
  private final Targets target;
  private final String host;
  private final AtomicInteger running = new AtomicInteger(2);
  /** The upstream handshake's end: null once it succeeded, else why it failed. */
  private final CompletableFuture<Exception> upstreamReady = new CompletableFuture<>();
  /** Whether the upstream thread goes on to relay the answer down (false: the request never went). */
  private final CompletableFuture<Boolean> relayDown = new CompletableFuture<>();
  private TlsChannel client;
  private TlsChannel upstream;

  /** Whether the request's body went up whole, so the server's connection may carry another. */
  private volatile boolean bodySent;
  private String method;

  /** @param pooled an idle TLS connection to the server from the proxy's pool, or null for a new one */
  Interception(ProxyConnection connection, Targets target, TlsChannel pooled) {
    this.connection = connection;
    this.target = target;
    this.host = target.host().name();
    this.upstream = pooled;
    if (pooled != null) {
      upstreamReady.complete(null);
    }
  }

  /** Runs the interception on the connection's thread; {@code first}: bytes after the CONNECT head. */
  void run(byte[] first) throws IOException {
    EgressProxy proxy = connection.proxy();
    connection.deadline = System.nanoTime() + proxy.limits().handshakeTimeout().toNanos();
    if (upstream == null) {
      upstream = new TlsChannel(connection.upstream, upstreamEngine(proxy), new byte[0]);
    }
    try {
      proxy.execute(this::upstreamSide);
    } catch (RejectedExecutionException e) {
      connection.fail("proxy-closed");
      return;
    }
    try {
      clientSide(proxy, first);
    } finally {
      relayDown.complete(false); // unless relay() started it: the upstream thread ends
    }
  }

  private void clientSide(EgressProxy proxy, byte[] first) throws IOException {
    SSLEngine server = proxy.authority().serverContext(host).createSSLEngine(host, target.port());
    server.setUseClientMode(false);
    SSLParameters sp = server.getSSLParameters();
    sp.setApplicationProtocols(ALPN);
    server.setSSLParameters(sp);
    client = new TlsChannel(connection.client, server, first);
    try {
      client.handshake();
    } catch (SSLException e) {
      connection.fail("tls-failed");
      return;
    }
    if (!sniMatches(server)) {
      connection.refuseInTunnel(Decision.SNI_MISMATCH);
      connection.end();
      return;
    }
    RequestHead head;
    try {
      head = RequestHead.read(client, proxy.limits().maxHeaderBytes());
    } catch (RequestHead.TooLarge e) {
      answer(431, "Request Header Fields Too Large", "request-head-too-large", List.of());
      return;
    } catch (RequestHead.Malformed e) {
      answer(400, "Bad Request", "malformed-request", List.of());
      return;
    }
    long body = ProxyConnection.bodyLength(head);
    String invalid = invalid(head, body);
    if (invalid != null) {
      answer(400, "Bad Request", invalid, List.of());
      return;
    }
    EgressSecrets.Rewrite rewrite = proxy.secrets().rewrite(head.target(), head.headers(), target.host(),
        target.port(), true);
    if (rewrite.refused()) {
      answer(403, "Forbidden", rewrite.refusal(), rewrite.secrets());
      return;
    }
    connection.secrets = rewrite.secrets();
    if (!upstreamReady()) {
      return;
    }
    method = head.method();
    byte[] up = ProxyConnection.originForm(method, rewrite.target(), rewrite.headers(), false)
        .getBytes(StandardCharsets.ISO_8859_1);
    upstream.write(ByteBuffer.wrap(up));
    connection.tunnel.addUp(up.length);
    relay(head.rest(), body);
  }

  /** Why the head cannot be forwarded (a reason for a 400), or null. */
  private String invalid(RequestHead head, long body) {
    if (!head.target().startsWith("/")) {
      return "not-origin-form";
    }
    List<String> hosts = head.values("host");
    try {
      if (hosts.size() != 1 || !Targets.authority(hosts.get(0), 443).sameDestination(target)) {
        return Decision.HOST_MISMATCH;
      }
    } catch (IllegalArgumentException e) {
      return Decision.HOST_MISMATCH;
    }
    return body == -2 ? "malformed-request" : null;
  }

  private boolean sniMatches(SSLEngine engine) {
    List<SNIServerName> names = ((ExtendedSSLSession) engine.getSession()).getRequestedServerNames();
    for (SNIServerName n : names) {
      if (n instanceof SNIHostName h && !HostNames.normalise(h.getAsciiName()).equals(host)) {
        return false;
      }
    }
    return true;
  }

  /** The engine of the proxy's own TLS to the allowed address: SNI and certificate for the host. */
  private SSLEngine upstreamEngine(EgressProxy proxy) {
    SSLEngine engine = proxy.trust().context().createSSLEngine(host, target.port());
    engine.setUseClientMode(true);
    SSLParameters p = engine.getSSLParameters();
    p.setEndpointIdentificationAlgorithm("HTTPS");
    p.setServerNames(List.of(new SNIHostName(host)));
    p.setApplicationProtocols(ALPN);
    engine.setSSLParameters(p);
    return engine;
  }

  /** The upstream thread: the handshake (unless the connection is a pooled one), then the answer down. */
  private void upstreamSide() {
    if (!upstreamReady.isDone()) {
      Exception failure = null;
      try {
        upstream.handshake();
      } catch (IOException | RuntimeException e) {
        failure = e;
      }
      upstreamReady.complete(failure);
    }
    if (upstreamReady.join() == null && relayDown.join()) {
      downstream();
    }
  }

  /**
   * Waits for the upstream handshake; false (the client answered 502) if TLS to the server failed.
   *
   * @throws IOException if the connection ended another way (closed, or the deadline passed)
   */
  private boolean upstreamReady() throws IOException {
    Exception failure = upstreamReady.join();
    if (failure instanceof SSLException e) {
      connection.failUpstream();
      respond(502, "Bad Gateway", "egress: TLS to " + host + ":" + target.port() + " failed: " + e.getMessage() + "\n");
      return false;
    } else if (failure instanceof IOException e) {
      throw e;
    } else if (failure instanceof RuntimeException e) {
      throw e;
    }
    return true;
  }

  /** Refuses over the client's TLS, naming the rule (and the secrets that caused it). */
  private void answer(int status, String reason, String rule, List<String> secrets) throws IOException {
    connection.refuseIntercepted(rule, secrets);
    String because = secrets.isEmpty() ? rule : rule + " (" + String.join(", ", secrets) + ")";
    respond(status, reason, "egress " + (status == 403 ? "denied" : "refused") + " by " + because + "\n");
  }

  private void respond(int status, String reason, String body) throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    String head = "HTTP/1.1 " + status + " " + reason + "\r\nContent-Type: text/plain; charset=utf-8\r\n"
        + "Content-Length: " + bytes.length + "\r\nConnection: close\r\n\r\n";
    client.write(ByteBuffer.wrap((head + body).getBytes(StandardCharsets.UTF_8)));
    client.shutdownOutput();
    connection.lingeringClose();
  }

  private void relay(byte[] rest, long body) {
    connection.deadline = 0;
    connection.lastActivity = System.nanoTime();
    connection.relaying = true;
    bodySent = body == 0;
    relayDown.complete(true);
    try {
      long remaining = body < 0 ? Long.MAX_VALUE : body;
      ByteBuffer head = ByteBuffer.wrap(rest, 0, (int) Math.min(rest.length, remaining));
      remaining -= head.remaining();
      int n = head.remaining();
      upstream.write(head);
      connection.tunnel.addUp(n);
      long copied = remaining > 0 ? connection.copy(client, upstream, connection.tunnel::addUp, remaining) : 0;
      bodySent = body >= 0 && copied == remaining;
    } catch (IOException e) {
      connection.expire("error");
    } finally {
      pumpDone();
    }
  }

  /**
   * Relays the answer by its framing; if it left the server's connection reusable and the request's
   * body went up whole, the connection goes to the proxy's pool instead of being closed.
   */
  private void downstream() {
    try {
      boolean reusable = new ResponseRelay(upstream, client, connection.tunnel::addDown,
          () -> connection.lastActivity = System.nanoTime()).relay(method);
      client.shutdownOutput();
      if (reusable && bodySent && connection.poolKey != null) {
        SocketChannel socket = connection.upstream;
        connection.releaseUpstream();
        if (socket != null && socket.isOpen()) {
          connection.proxy().upstreams().offer(connection.poolKey, upstream, socket);
        }
      }
      connection.expire("closed"); // one request per client connection: the answer has ended
    } catch (IOException e) {
      connection.expire("error");
    } finally {
      pumpDone();
    }
  }

  private void pumpDone() {
    if (running.decrementAndGet() == 0) {
      connection.end();
    }
  }
}
