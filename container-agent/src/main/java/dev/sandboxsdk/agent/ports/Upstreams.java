package dev.sandboxsdk.agent.ports;

import dev.sandboxsdk.agent.process.NetnsRelay;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;

/**
 * How the proxy reaches a port where the sandbox's servers listen: one small interface, two ways.
 * {@link #direct()} when they listen in the agent's own network (no isolation, isolation with the
 * network on, or the agent inside a container); {@link #relay} when they listen in the sandbox's
 * own network namespace, which the agent's JVM cannot enter.
 */
interface Upstreams {
  /** How long a connection attempt may take. */
  int CONNECT_TIMEOUT_MS = 10_000;

  /**
   * A connection to {@code port} on the sandbox's loopback (127.0.0.1, else ::1).
   *
   * @throws java.net.ConnectException if nothing listens there
   * @throws java.net.SocketTimeoutException if the attempt timed out
   */
  Connection open(int port) throws IOException;

  /** A byte stream both ways; {@link #close()} may be called from any thread and unblocks reads and writes. */
  interface Connection extends Closeable {
    InputStream in();

    OutputStream out();

    /** The two streams of a socket or channel that {@code closer} closes. */
    static Connection of(InputStream in, OutputStream out, Closeable closer) {
      return new Connection() {
        @Override
        public InputStream in() {
          return in;
        }

        @Override
        public OutputStream out() {
          return out;
        }

        @Override
        public void close() throws IOException {
          closer.close();
        }
      };
    }
  }

  /** The agent connects itself. */
  static Upstreams direct() {
    return port -> {
      IOException first = null;
      for (InetAddress host : new InetAddress[] {InetAddress.getLoopbackAddress(), InetAddress.getByName("::1")}) {
        Socket s = new Socket();
        try {
          s.connect(new InetSocketAddress(host, port), CONNECT_TIMEOUT_MS);
          s.setTcpNoDelay(true);
          return Connection.of(s.getInputStream(), s.getOutputStream(), s);
        } catch (IOException e) {
          s.close();
          if (first == null) {
            first = e;
          }
        }
      }
      throw first;
    };
  }

  /** Through the relay inside the sandbox's network namespace. */
  static Upstreams relay(NetnsRelay relay) {
    return port -> {
      SocketChannel ch = relay.connect(port);
      // The proxy reads and writes one after the other, never at once, so the channel's shared
      // blocking lock between these two streams costs nothing.
      return Connection.of(Channels.newInputStream(ch), Channels.newOutputStream(ch), ch);
    };
  }
}
