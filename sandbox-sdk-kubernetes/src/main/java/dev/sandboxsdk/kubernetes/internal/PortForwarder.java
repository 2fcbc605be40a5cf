package dev.sandboxsdk.kubernetes.internal;

import io.fabric8.kubernetes.client.PortForward;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A local port whose every connection is forwarded to the agent through the API server, one
 * port-forward WebSocket per connection. fabric8's own local forwarder does the same, but leaves
 * Nagle's algorithm on for the accepted sockets: an answer written in two pieces (headers, then
 * body) then waited for the client's delayed ACK, about 40 ms per request. Here every accepted
 * socket has TCP_NODELAY.
 */
final class PortForwarder implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(PortForwarder.class);

  /** More than the SDK opens (a pool of a few, plus one per live stream); the rest are refused. */
  static final int MAX_CONNECTIONS = 256;

  private final String pod;
  private final ServerSocketChannel server;
  private final BiFunction<SocketChannel, SocketChannel, PortForward> forward;
  private final Set<PortForward> open = ConcurrentHashMap.newKeySet();
  private final Thread acceptor;
  private volatile boolean closed;
  private boolean full; // only the acceptor thread reads and writes it

  /** Listens on a free port of 127.0.0.1; {@code forward} starts one forward of a connection (in, out). */
  PortForwarder(String pod, BiFunction<SocketChannel, SocketChannel, PortForward> forward) throws IOException {
    this.pod = pod;
    this.forward = forward;
    this.server = ServerSocketChannel.open();
    server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
    acceptor = new Thread(this::acceptLoop, "sandbox-port-forward-" + pod);
    acceptor.setDaemon(true);
    acceptor.start();
  }

  int localPort() {
    return server.socket().getLocalPort();
  }

  private void acceptLoop() {
    while (!closed) {
      SocketChannel c;
      try {
        c = server.accept();
      } catch (ClosedChannelException e) {
        return;
      } catch (IOException e) {
        if (!closed) {
          log.warn("port-forward: accept failed", e);
        }
        return;
      }
      try {
        open.removeIf(p -> !p.isAlive());
        if (open.size() >= MAX_CONNECTIONS) {
          // Any local process may connect here; each connection costs a WebSocket and a thread.
          // Logged once per episode: a flood of refused connections must not become a flood of lines.
          if (!full) {
            full = true;
            log.warn("port-forward to {}: {} connections open, refusing more until some close", pod, MAX_CONNECTIONS);
          }
          c.close();
          continue;
        }
        if (full) {
          full = false;
          log.info("port-forward to {}: accepting connections again", pod);
        }
        c.setOption(StandardSocketOptions.TCP_NODELAY, true);
        PortForward f = forward.apply(c, c);
        open.add(f);
      } catch (IOException | RuntimeException e) {
        log.debug("port-forward: could not forward a connection", e);
        try {
          c.close();
        } catch (IOException ignored) {
          // closing a failed connection
        }
      }
    }
  }

  @Override
  public void close() {
    closed = true;
    try {
      server.close();
    } catch (IOException ignored) {
      // no longer listening either way
    }
    for (PortForward f : open) {
      try {
        f.close();
      } catch (IOException ignored) {
        // its WebSocket is gone either way
      }
    }
    open.clear();
  }
}
