package dev.sandboxsdk;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A plain TCP proxy on 127.0.0.1 in front of an agent, so a test can break the connections of a
 * client in the middle of a stream ({@link #cutAll}) the way a flaky network would. New
 * connections keep working after a cut.
 */
final class ItProxy implements AutoCloseable {
  private final ServerSocket server;
  private final InetSocketAddress target;
  private final Set<Link> links = ConcurrentHashMap.newKeySet();
  private final AtomicInteger accepted = new AtomicInteger();
  private volatile boolean closed;
  private volatile boolean refusing;

  /** Starts forwarding to the host and port of {@code target}. */
  ItProxy(URI target) throws IOException {
    this.target = new InetSocketAddress(target.getHost(), target.getPort());
    this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread t = new Thread(this::acceptLoop, "it-proxy-accept-" + server.getLocalPort());
    t.setDaemon(true);
    t.start();
  }

  /** The proxy's own address, for {@code Sandbox.builder().baseUrl(...)}. */
  URI uri() {
    return URI.create("http://127.0.0.1:" + server.getLocalPort());
  }

  /** How many client connections were accepted so far. */
  int accepted() {
    return accepted.get();
  }

  /**
   * Breaks every open connection on both sides.
   *
   * @param reset true to send a TCP reset (SO_LINGER 0), false for an ordinary close (FIN)
   * @return how many connections were cut
   */
  int cutAll(boolean reset) {
    List<Link> now = new ArrayList<>(links);
    for (Link l : now) {
      l.cut(reset);
    }
    return now.size();
  }

  /**
   * While refusing, every new connection is reset as soon as it is accepted: an outage of the
   * agent's address, as a client sees it.
   */
  void refuse(boolean refuse) {
    this.refusing = refuse;
  }

  @Override
  public void close() {
    closed = true;
    try {
      server.close();
    } catch (IOException ignored) {
      // closing anyway
    }
    cutAll(false);
  }

  private void acceptLoop() {
    while (!closed) {
      Socket client;
      try {
        client = server.accept();
      } catch (IOException e) {
        return; // closed
      }
      accepted.incrementAndGet();
      if (refusing) {
        try {
          client.setSoLinger(true, 0);
        } catch (IOException ignored) {
          // closing anyway
        }
        quietly(client);
        continue;
      }
      Socket upstream = new Socket();
      try {
        upstream.connect(target, 30_000);
        client.setTcpNoDelay(true);
        upstream.setTcpNoDelay(true);
      } catch (IOException e) {
        quietly(client);
        quietly(upstream);
        continue;
      }
      Link link = new Link(client, upstream);
      links.add(link);
      link.start();
    }
  }

  private static void quietly(Socket s) {
    try {
      s.close();
    } catch (IOException ignored) {
      // nothing to do
    }
  }

  /** One proxied connection: two pump threads; closing either side closes both. */
  private final class Link {
    private final Socket client;
    private final Socket upstream;

    Link(Socket client, Socket upstream) {
      this.client = client;
      this.upstream = upstream;
    }

    void start() {
      pump(client, upstream, "up");
      pump(upstream, client, "down");
    }

    private void pump(Socket from, Socket to, String direction) {
      Thread t = new Thread(() -> {
        byte[] buf = new byte[16 * 1024];
        try {
          InputStream in = from.getInputStream();
          OutputStream out = to.getOutputStream();
          int n;
          while ((n = in.read(buf)) >= 0) {
            out.write(buf, 0, n);
            out.flush();
          }
        } catch (IOException ignored) {
          // cut or closed
        }
        cut(false);
      }, "it-proxy-" + direction + "-" + from.getPort());
      t.setDaemon(true);
      t.start();
    }

    void cut(boolean reset) {
      if (!links.remove(this)) {
        return;
      }
      for (Socket s : new Socket[] {client, upstream}) {
        if (reset) {
          try {
            s.setSoLinger(true, 0);
          } catch (IOException ignored) {
            // already closed
          }
        }
        quietly(s);
      }
    }
  }
}
