package dev.sandboxsdk.agent.egress;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLServerSocket;
import javax.net.ssl.SSLSocket;

/** Real loopback upstreams, test names mapped to them, and ways to count threads and descriptors. */
final class EgressFixtures {
  private EgressFixtures() {}

  /** Test names: most map to loopback, a few elsewhere. */
  static final Map<String, String> NAMES = Map.of("allowed.test", "127.0.0.1", "tls.test", "127.0.0.1",
      "other.test", "127.0.0.1", "denied.test", "127.0.0.1", "meta.test", "169.254.169.254",
      "public.test", "192.0.2.1", "loopback2.test", "127.0.0.2", "secret.test", "127.0.0.1",
      "bound.secret.test", "127.0.0.1");

  /** A resolver seam that knows the test names only, and counts its lookups. */
  static final class Resolver implements EgressResolver {
    final Map<String, Integer> lookups = new ConcurrentHashMap<>();

    @Override
    public List<InetAddress> resolve(String host) throws UnknownHostException {
      lookups.merge(host, 1, Integer::sum);
      String address = NAMES.get(host);
      if (address == null) {
        throw new UnknownHostException(host);
      }
      return List.of(InetAddress.getByName(address));
    }
  }

  /** The tests' usual policy: named hosts, with loopback opened by an explicit address rule. */
  static EgressPolicy policy() {
    return EgressPolicy.builder(EgressPolicy.Mode.ALLOW_LIST).deny("denied.test").allow("allowed.test")
        .allow("tls.test").allow("127.0.0.1/32").build();
  }

  /** The same names without the address rule: loopback stays blocked. */
  static EgressPolicy withoutLoopback() {
    return EgressPolicy.builder(EgressPolicy.Mode.ALLOW_LIST).deny("denied.test").allow("allowed.test")
        .allow("tls.test").allow("meta.test").build();
  }

  /** Serves each connection {@code server} accepts on a daemon thread of its own, until it is closed. */
  static void serveEach(ServerSocket server, String name, java.util.function.Consumer<Socket> serve) {
    Thread acceptor = new Thread(() -> {
      while (!server.isClosed()) {
        try {
          Socket s = server.accept();
          Thread t = new Thread(() -> serve.accept(s), name + "-conn");
          t.setDaemon(true);
          t.start();
        } catch (IOException e) {
          return;
        }
      }
    }, name);
    acceptor.setDaemon(true);
    acceptor.start();
  }

  /**
   * An HTTP/1.1 server, a thread per connection: answers one request with a body that echoes what it
   * got ({@code GET /path host=... connection=... body=...}), then closes.
   */
  static final class HttpUpstream implements AutoCloseable {
    final ServerSocket server;
    final List<String> heads = new java.util.concurrent.CopyOnWriteArrayList<>();

    HttpUpstream() throws IOException {
      this(new ServerSocket(0, 1024, InetAddress.getLoopbackAddress()));
    }

    /** On a server socket of the caller's (a TLS one, say). */
    HttpUpstream(ServerSocket server) {
      this.server = server;
      serveEach(server, "test-http-upstream", this::serve);
    }

    int port() {
      return server.getLocalPort();
    }

    private void serve(Socket s) {
      try (s) {
        InputStream in = s.getInputStream();
        String head = readHead(in);
        if (head == null) {
          return;
        }
        heads.add(head);
        int length = 0;
        String connection = "";
        String host = "";
        for (String line : head.split("\r\n")) {
          String lower = line.toLowerCase(Locale.ROOT);
          if (lower.startsWith("content-length:")) {
            length = Integer.parseInt(line.substring(15).trim());
          } else if (lower.startsWith("connection:")) {
            connection = line.substring(11).trim();
          } else if (lower.startsWith("host:")) {
            host = line.substring(5).trim();
          }
        }
        String body = new String(in.readNBytes(length), StandardCharsets.UTF_8);
        String requestLine = head.substring(0, head.indexOf("\r\n"));
        String answer = "hello " + requestLine + " host=" + host + " connection=" + connection + " body=" + body;
        byte[] bytes = answer.getBytes(StandardCharsets.UTF_8);
        OutputStream out = s.getOutputStream();
        out.write(("HTTP/1.1 200 OK\r\nContent-Length: " + bytes.length + "\r\nConnection: close\r\n\r\n")
            .getBytes(StandardCharsets.ISO_8859_1));
        out.write(bytes);
        out.flush();
      } catch (IOException e) {
        // the client went away
      }
    }

    @Override
    public void close() throws IOException {
      server.close();
    }
  }

  /** Reads up to the blank line; null at end of stream. */
  static String readHead(InputStream in) throws IOException {
    StringBuilder head = new StringBuilder();
    while (head.length() < 4 || !head.substring(head.length() - 4).equals("\r\n\r\n")) {
      int c = in.read();
      if (c < 0) {
        return null;
      }
      head.append((char) c);
    }
    return head.toString();
  }

  /** A key pair made by keytool for tls.test, as a server context and a client context that trusts it. */
  static final class Tls {
    final SSLContext server;
    final SSLContext client;

    Tls() {
      dev.sandboxsdk.testkit.TestCertificate certificate =
          dev.sandboxsdk.testkit.TestCertificate.forNames("tls.test", "other.test");
      server = certificate.serverContext();
      client = certificate.clientContext();
    }
  }

  /** A TLS server: per connection, reads a line and answers {@code tls-hello <line>}. */
  static final class TlsUpstream implements AutoCloseable {
    final SSLServerSocket server;

    TlsUpstream(SSLContext context) throws IOException {
      server = (SSLServerSocket) context.getServerSocketFactory().createServerSocket(0, 50,
          InetAddress.getLoopbackAddress());
      serveEach(server, "test-tls-upstream", s -> serve((SSLSocket) s));
    }

    int port() {
      return server.getLocalPort();
    }

    private static void serve(SSLSocket s) {
      try (s) {
        s.setSoTimeout(10_000);
        s.startHandshake();
        InputStream in = s.getInputStream();
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        for (int c = in.read(); c >= 0 && c != '\n'; c = in.read()) {
          line.write(c);
        }
        s.getOutputStream().write(("tls-hello " + line.toString(StandardCharsets.UTF_8) + "\n")
            .getBytes(StandardCharsets.UTF_8));
        s.getOutputStream().flush();
      } catch (IOException e) {
        // a refused or broken handshake
      }
    }

    @Override
    public void close() throws IOException {
      server.close();
    }
  }

  /** Opens a plain connection to the proxy and sends the text. */
  static Socket send(EgressProxy proxy, String text) throws IOException {
    Socket s = new Socket();
    s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), proxy.port()), 30_000);
    s.setSoTimeout(15_000);
    s.getOutputStream().write(text.getBytes(StandardCharsets.ISO_8859_1));
    s.getOutputStream().flush();
    return s;
  }

  /** Everything the peer sends until it closes. */
  static String readAll(Socket s) throws IOException {
    return new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
  }

  static int threads() {
    return Thread.getAllStackTraces().size();
  }

  static long fds() {
    try (var list = Files.list(Path.of("/proc/self/fd"))) {
      return list.count();
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }
}
