package dev.sandboxsdk.agent.egress;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The relay between a client and its destination, one blocking pump per direction: the client's
 * side on the connection's thread, the destination's on a second pool thread. A CONNECT tunnel
 * half-closes each way as each side finishes; a forwarded request sends its body and ends when the
 * answer ends. Before a CONNECT tunnel sends the client's first bytes on, a TLS ClientHello among
 * them must name the host of the CONNECT (or no host).
 */
final class Tunnel {
  private static final int BUFFER = 16 * 1024;

  private final ProxyConnection connection;
  private final AtomicLong up = new AtomicLong();
  private final AtomicLong down = new AtomicLong();
  private final AtomicInteger running = new AtomicInteger(2);

  Tunnel(ProxyConnection connection) {
    this.connection = connection;
  }

  long bytesUp() {
    return up.get();
  }

  long bytesDown() {
    return down.get();
  }

  void addUp(long n) {
    up.addAndGet(n);
  }

  void addDown(long n) {
    down.addAndGet(n);
  }

  /**
   * Runs the tunnel: starts the destination's pump and runs the client's on this thread.
   *
   * @param first bytes the client sent after its request head
   * @param sniHost for a CONNECT, the host a ClientHello must name; null for a forwarded request
   * @param body for a forwarded request, the body's length, or -1 to relay until the answer ends
   */
  void start(byte[] first, HostNames.Host sniHost, long body) {
    boolean forwarded = sniHost == null;
    try {
      connection.proxy().execute(() -> downstream(forwarded));
    } catch (RejectedExecutionException e) {
      connection.fail("proxy-closed");
      return;
    }
    try {
      if (forwarded) {
        upstreamBody(first, body);
      } else {
        upstreamTunnel(first, sniHost);
      }
    } catch (IOException e) {
      connection.expire("error");
    } finally {
      pumpDone();
    }
  }

  private void upstreamTunnel(byte[] first, HostNames.Host sniHost) throws IOException {
    SocketChannel client = connection.client;
    SocketChannel server = connection.upstream;
    ByteBuffer buf = ByteBuffer.allocate(Math.max(BUFFER, first.length));
    buf.put(first);
    while (true) {
      ClientHello.Result hello = ClientHello.read(buf.array(), buf.position());
      if (hello.kind() == ClientHello.Kind.NOT_TLS) {
        break;
      }
      if (hello.kind() == ClientHello.Kind.MALFORMED) {
        connection.refuseInTunnel("invalid-client-hello");
        return;
      }
      if (hello.kind() == ClientHello.Kind.COMPLETE) {
        connection.deadline = 0;
        if (hello.serverName() != null && !matches(hello.serverName(), sniHost)) {
          connection.refuseInTunnel(Decision.SNI_MISMATCH);
          return;
        }
        break;
      }
      if (buf.position() > 0 && connection.deadline == 0) {
        connection.deadline = System.nanoTime() + connection.proxy().limits().handshakeTimeout().toNanos();
      }
      if (!buf.hasRemaining()) {
        if (buf.capacity() >= ClientHello.MAX_BYTES + BUFFER) {
          connection.refuseInTunnel("invalid-client-hello");
          return;
        }
        buf = ByteBuffer.allocate(buf.capacity() * 2).put(buf.flip());
      }
      if (client.read(buf) < 0) {
        server.shutdownOutput(); // a ClientHello cut short is never sent on unchecked
        return;
      }
      connection.lastActivity = System.nanoTime();
    }
    buf.flip();
    send(server, buf);
    connection.copy(client, server, up::addAndGet, Long.MAX_VALUE);
    server.shutdownOutput();
  }

  private static boolean matches(String serverName, HostNames.Host host) {
    return !host.isLiteral() && HostNames.normalise(serverName).equals(host.name());
  }

  /**
   * Sends the request's body on. When the client ends its side first, a chunked body has ended
   * (the server is told by a half-close), and a body shorter than its {@code Content-Length} can
   * never complete: the exchange is closed both ways rather than left for the idle timeout, with
   * the server waiting for the rest and the client perhaps long gone.
   */
  private void upstreamBody(byte[] first, long body) throws IOException {
    SocketChannel server = connection.upstream;
    long remaining = body < 0 ? Long.MAX_VALUE : body;
    ByteBuffer head = ByteBuffer.wrap(first, 0, (int) Math.min(first.length, remaining));
    remaining -= head.remaining();
    send(server, head);
    if (remaining > 0 && connection.copy(connection.client, server, up::addAndGet, remaining) < remaining) {
      if (body < 0) {
        server.shutdownOutput();
      } else {
        connection.expire("closed");
      }
    }
  }

  private void downstream(boolean forwarded) {
    try {
      connection.copy(connection.upstream, connection.client, down::addAndGet, Long.MAX_VALUE);
      if (forwarded) {
        connection.expire("closed"); // one request per connection: the answer has ended
      } else {
        connection.client.shutdownOutput();
      }
    } catch (IOException e) {
      connection.expire("error");
    } finally {
      pumpDone();
    }
  }

  private void send(SocketChannel to, ByteBuffer buf) throws IOException {
    int n = buf.remaining();
    ProxyConnection.write(to, buf);
    up.addAndGet(n);
  }

  private void pumpDone() {
    if (running.decrementAndGet() == 0) {
      connection.end();
    }
  }
}
