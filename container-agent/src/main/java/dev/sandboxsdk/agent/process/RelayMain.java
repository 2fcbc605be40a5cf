package dev.sandboxsdk.agent.process;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Semaphore;

/**
 * The relay's own program ({@link NetnsRelay} starts it inside the sandbox's network namespace):
 * listens on a Unix-domain socket in the agent's private directory and, for each connection,
 * reads a two-byte port number, connects to that port on the namespace's loopback, answers one
 * status byte and then copies bytes both ways until either side is done.
 *
 * <p>With egress ({@code RelayMain SOCKET_PATH EGRESS_SOCKET EGRESS_PORT}) it also listens on
 * {@code 127.0.0.1:EGRESS_PORT} inside the namespace (0: a free port, printed after the ready
 * word) and joins each connection made there to the agent's egress proxy on the Unix-domain
 * socket {@code EGRESS_SOCKET}: that is the only way out of a namespace that has nothing but
 * loopback.
 *
 * <p>The egress side is the one a command reaches, so it is bounded: at most {@value
 * #MAX_EGRESS_CONNECTIONS} joined connections at once (more than the proxy itself admits, so the
 * proxy's cap is what a client normally meets; one more is answered {@code 503} and closed), each
 * with two threads and a direct buffer of {@value #BUFFER} bytes, which fits the relay's small heap
 * and direct memory. Accept loops outlive a failed accept (out of descriptors) or a thread that
 * cannot start, and every connection closes its sockets however its threads end, so a command that
 * floods the port is refused rather than ending the relay, and the relay is whole again once the
 * command's connections close.
 *
 * <p>It uses nothing but the JDK (it runs with a small heap and no agent classes loaded) and
 * prints nothing but its ready line. It exits when its standard input reaches end of file: the
 * agent holds the other end of that pipe, so the relay ends with the agent however the agent
 * ends, even by SIGKILL.
 */
public final class RelayMain {
  /** The status byte: connected, then the bytes flow. */
  static final int OK = 0;
  /** The status byte: nothing accepts connections on the port. */
  static final int REFUSED = 1;
  /** The status byte: the connection attempt timed out. */
  static final int TIMED_OUT = 2;
  /** The line the relay prints once it listens. */
  static final String READY = "relay-ready";
  static final int CONNECT_TIMEOUT_MS = 10_000;
  /** The most command connections joined to the egress proxy at once. */
  static final int MAX_EGRESS_CONNECTIONS = 320;
  private static final byte[] BUSY = ("HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
      + "Content-Length: 35\r\nConnection: close\r\n\r\negress refused by connection-limit\n")
      .getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);
  /** Direct, so a copy needs no heap buffer and no per-thread temporary direct buffer of the JDK's. */
  private static final int BUFFER = 8 * 1024;
  /** Each connection holds two threads; they copy bytes and need little stack. */
  private static final long STACK = 128 * 1024;

  private RelayMain() {}

  /** {@code RelayMain SOCKET_PATH [EGRESS_SOCKET EGRESS_PORT]}. */
  public static void main(String[] args) throws IOException {
    if (args.length != 1 && args.length != 3) {
      throw new IllegalArgumentException("usage: RelayMain SOCKET_PATH [EGRESS_SOCKET EGRESS_PORT]");
    }
    Path socket = Path.of(args[0]);
    Files.deleteIfExists(socket);
    ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
    server.bind(UnixDomainSocketAddress.of(socket));
    Thread stdinWatch = new Thread(null, () -> {
      try {
        InputStream in = System.in;
        byte[] b = new byte[64];
        while (in.read(b) >= 0) {
          // the agent never writes; wait for end of file
        }
      } catch (IOException e) {
        // the pipe broke: the agent is gone as well
      }
      try {
        Files.deleteIfExists(socket);
      } catch (IOException e) {
        // the agent removes its directory anyway
      }
      Runtime.getRuntime().halt(0);
    }, "relay-stdin", STACK);
    stdinWatch.setDaemon(true);
    stdinWatch.start();
    // The ready line is the relay's protocol with the agent, not logging.
    java.io.PrintStream out = System.out;
    String ready = READY;
    if (args.length == 3) {
      ready += " " + forwardEgress(Path.of(args[1]), Integer.parseInt(args[2]));
    }
    out.println(ready);
    out.flush();
    acceptLoop(server, null, RelayMain::serve, "relay-conn");
  }

  /**
   * Accepts until the listener closes, each connection on a thread of its own; with {@code slots},
   * at most that many at once (one more is answered {@link #BUSY} and closed). A failed accept (out
   * of descriptors) or a thread that cannot start costs that one connection and a short pause, not
   * the loop.
   */
  private static void acceptLoop(ServerSocketChannel listener, Semaphore slots,
      java.util.function.Consumer<SocketChannel> handler, String name) {
    while (listener.isOpen()) {
      SocketChannel client;
      try {
        client = listener.accept();
      } catch (ClosedChannelException e) {
        return;
      } catch (IOException | Error e) { // EMFILE, or no memory for the channel
        pause();
        continue;
      }
      if (slots != null && !slots.tryAcquire()) {
        busy(client);
        continue;
      }
      try {
        Thread t = new Thread(null, () -> {
          try {
            handler.accept(client);
          } finally {
            closeQuietly(client);
            if (slots != null) {
              slots.release();
            }
          }
        }, name, STACK);
        t.setDaemon(true);
        t.start();
      } catch (Error e) { // no thread: unable to create native thread, or no heap for it
        closeQuietly(client);
        if (slots != null) {
          slots.release();
        }
        pause();
      }
    }
  }

  /** Over the cap: the proxy's own answer, written without blocking, then closed. */
  private static void busy(SocketChannel client) {
    try {
      client.configureBlocking(false);
      client.write(ByteBuffer.wrap(BUSY));
    } catch (IOException e) {
      // closed below either way
    }
    closeQuietly(client);
  }

  private static void pause() {
    try {
      Thread.sleep(50);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static void serve(SocketChannel client) {
    SocketChannel upstream = null;
    try (client) {
      ByteBuffer header = ByteBuffer.allocate(2);
      while (header.hasRemaining()) {
        if (client.read(header) < 0) {
          return;
        }
      }
      int port = Short.toUnsignedInt(header.flip().getShort());
      int status;
      try {
        upstream = connect(port);
        status = OK;
      } catch (SocketTimeoutException e) {
        status = TIMED_OUT;
      } catch (IOException e) {
        status = REFUSED;
      }
      client.write(ByteBuffer.wrap(new byte[] {(byte) status}));
      if (upstream == null) {
        return;
      }
      SocketChannel up = upstream;
      Thread back = new Thread(null, () -> {
        // Upstream to agent; at the upstream's end of file the agent learns it by a half-close.
        if (copy(up, client)) {
          try {
            client.shutdownOutput();
          } catch (IOException e) {
            closeQuietly(up);
          }
        } else {
          closeQuietly(up);
          closeQuietly(client);
        }
      }, "relay-back", STACK);
      back.setDaemon(true);
      back.start();
      // Agent to upstream: the agent never half-closes, so its end of file (or an error) ends the exchange.
      copy(client, up);
    } catch (IOException e) {
      // the agent or the server went away
    } finally {
      closeQuietly(upstream); // also when no thread could start for the way back
    }
  }

  /**
   * Listens on {@code 127.0.0.1:port} of the namespace and joins each connection to the egress
   * proxy's Unix-domain socket; returns the port.
   */
  private static int forwardEgress(Path proxy, int port) throws IOException {
    ServerSocketChannel listener = ServerSocketChannel.open();
    listener.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), port), 1024);
    Semaphore slots = new Semaphore(MAX_EGRESS_CONNECTIONS);
    Thread t = new Thread(null, () -> acceptLoop(listener, slots, c -> join(c, proxy), "relay-egress"),
        "relay-egress-accept", STACK);
    t.setDaemon(true);
    t.start();
    return ((InetSocketAddress) listener.getLocalAddress()).getPort();
  }

  /** Copies both ways between a command's connection and the proxy; each side's end of file half-closes the other. */
  private static void join(SocketChannel client, Path proxy) {
    SocketChannel up;
    try {
      client.socket().setTcpNoDelay(true); // as the proxy's own side: no delayed-ACK wait per TLS record
    } catch (IOException e) {
      return; // the command's connection is gone already
    }
    try {
      up = SocketChannel.open(UnixDomainSocketAddress.of(proxy));
    } catch (IOException e) {
      return;
    }
    try {
      Thread back = new Thread(null, () -> {
        if (copy(up, client)) {
          shutdownQuietly(client);
        } else {
          closeQuietly(up);
          closeQuietly(client);
        }
      }, "relay-egress-back", STACK);
      back.setDaemon(true);
      back.start();
      if (copy(client, up)) {
        shutdownQuietly(up);
      } else {
        closeQuietly(up);
        closeQuietly(client);
      }
      back.join(); // the connection's slot is free only once both directions are done
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      closeQuietly(up); // the client is closed by the accept loop's thread
    }
  }

  private static void shutdownQuietly(SocketChannel ch) {
    try {
      ch.shutdownOutput();
    } catch (IOException e) {
      closeQuietly(ch);
    }
  }

  /** 127.0.0.1 first, then ::1, as servers bind one or the other. */
  private static SocketChannel connect(int port) throws IOException {
    IOException first = null;
    for (String host : new String[] {"127.0.0.1", "::1"}) {
      SocketChannel ch = SocketChannel.open();
      try {
        ch.socket().connect(new InetSocketAddress(InetAddress.getByName(host), port), CONNECT_TIMEOUT_MS);
        ch.socket().setTcpNoDelay(true);
        return ch;
      } catch (IOException e) {
        closeQuietly(ch);
        if (first == null) {
          first = e;
        }
      }
    }
    throw first;
  }

  /** Copies until end of file (true) or an error (false). */
  private static boolean copy(SocketChannel from, SocketChannel to) {
    ByteBuffer buf = ByteBuffer.allocateDirect(BUFFER);
    try {
      while (from.read(buf) >= 0) {
        buf.flip();
        while (buf.hasRemaining()) {
          to.write(buf);
        }
        buf.clear();
      }
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  private static void closeQuietly(SocketChannel ch) {
    if (ch == null) {
      return;
    }
    try {
      ch.close();
    } catch (IOException e) {
      // closing anyway
    }
  }
}
