package dev.sandboxsdk;

import static java.nio.charset.StandardCharsets.UTF_8;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A minimal HTTP/1.1 server for what MockWebServer cannot show: whether and when the client
 * hangs up, and streams that go silent without a response finishing. Each connection runs on
 * its own daemon thread; the handler writes raw bytes.
 */
final class RawHttpServer implements AutoCloseable {

  /** A request as read from the socket. */
  record Request(String method, String target, Map<String, String> headers, String body) {
    String header(String name) {
      return headers.get(name.toLowerCase(Locale.ROOT));
    }
  }

  /** Answers one request. */
  @FunctionalInterface
  interface Handler {
    /** Writes the answer; returns whether the connection may carry another request. */
    boolean handle(Request request, Exchange exchange) throws Exception;
  }

  /** The server side of one exchange. */
  final class Exchange {
    private final InputStream in;
    private final OutputStream out;

    private Exchange(InputStream in, OutputStream out) {
      this.in = in;
      this.out = out;
    }

    void writeBytes(byte[] bytes) throws IOException {
      out.write(bytes);
      out.flush();
    }

    void write(String text) throws IOException {
      out.write(text.getBytes(UTF_8));
      out.flush();
    }

    /** A complete response with a Content-Length. */
    void respond(int status, String contentType, String body) throws IOException {
      byte[] bytes = body.getBytes(UTF_8);
      write("HTTP/1.1 " + status + " X\r\nContent-Type: " + contentType + "\r\nContent-Length: " + bytes.length
          + "\r\n\r\n");
      out.write(bytes);
      out.flush();
    }

    /** The head of an event stream whose body ends when the connection closes. */
    void startEventStream() throws IOException {
      write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-cache\r\n"
          + "Connection: close\r\n\r\n");
    }

    /** The head of a chunked JSON response, as the agent sends it for long commands. */
    void startChunkedJson() throws IOException {
      write("HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\nTransfer-Encoding: chunked\r\n\r\n");
    }

    /** Blocks until the client closes the connection, then counts the hang-up. */
    void awaitHangUp() {
      try {
        while (in.read() != -1) {
          // the client sends nothing more on a held exchange; read until it closes
        }
      } catch (IOException closed) {
        // reset by the client: also a hang-up
      }
      hungUp.countDown();
    }

    /** Writes {@code text} every {@code periodMillis} until a write fails because the client hung up. */
    void writeUntilHangUp(String text, long periodMillis) throws InterruptedException {
      try {
        for (;;) {
          write(text);
          Thread.sleep(periodMillis);
        }
      } catch (IOException closed) {
        hungUp.countDown();
      }
    }
  }

  private final ServerSocket serverSocket;
  private final Handler handler;
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();
  /** Every request, in arrival order. */
  final BlockingQueue<Request> requests = new LinkedBlockingQueue<>();
  /** How many connections the client opened. */
  final AtomicInteger connections = new AtomicInteger();
  /** Opened when the client hung up on an exchange the handler held open. */
  final CountDownLatch hungUp = new CountDownLatch(1);
  private final List<Throwable> handlerFailures = new CopyOnWriteArrayList<>();

  RawHttpServer(Handler handler) throws IOException {
    this.handler = handler;
    this.serverSocket = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread acceptor = new Thread(this::acceptLoop, "raw-http-accept");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  URI url() {
    return URI.create("http://127.0.0.1:" + serverSocket.getLocalPort() + "/");
  }

  private void acceptLoop() {
    while (!serverSocket.isClosed()) {
      try {
        Socket socket = serverSocket.accept();
        sockets.add(socket);
        connections.incrementAndGet();
        Thread t = new Thread(() -> serve(socket), "raw-http-conn");
        t.setDaemon(true);
        t.start();
      } catch (IOException closed) {
        return;
      }
    }
  }

  private void serve(Socket socket) {
    try (socket) {
      InputStream in = new BufferedInputStream(socket.getInputStream());
      OutputStream out = socket.getOutputStream();
      for (;;) {
        Request request = readRequest(in);
        if (request == null) {
          return;
        }
        requests.add(request);
        if (!handler.handle(request, new Exchange(in, out))) {
          return;
        }
      }
    } catch (IOException | InterruptedException e) {
      // connection gone or server closed
    } catch (Exception | AssertionError e) {
      handlerFailures.add(e); // a broken script: close() reports it to the test
    }
  }

  private static Request readRequest(InputStream in) throws IOException {
    String requestLine = readLine(in);
    if (requestLine == null || requestLine.isEmpty()) {
      return null;
    }
    String[] parts = requestLine.split(" ");
    Map<String, String> headers = new LinkedHashMap<>();
    for (String line = readLine(in); line != null && !line.isEmpty(); line = readLine(in)) {
      int colon = line.indexOf(':');
      headers.put(line.substring(0, colon).trim().toLowerCase(Locale.ROOT), line.substring(colon + 1).trim());
    }
    int length = Integer.parseInt(headers.getOrDefault("content-length", "0"));
    byte[] body = in.readNBytes(length);
    return new Request(parts[0], parts[1], headers, new String(body, UTF_8));
  }

  private static String readLine(InputStream in) throws IOException {
    ByteArrayOutputStream line = new ByteArrayOutputStream();
    for (;;) {
      int b = in.read();
      if (b == -1) {
        return line.size() == 0 ? null : line.toString(UTF_8);
      }
      if (b == '\n') {
        String s = line.toString(UTF_8);
        return s.endsWith("\r") ? s.substring(0, s.length() - 1) : s;
      }
      line.write(b);
    }
  }

  @Override
  public void close() throws IOException {
    serverSocket.close();
    for (Socket s : sockets) {
      s.close();
    }
    if (!handlerFailures.isEmpty()) {
      AssertionError failed = new AssertionError("the scripted agent's handler failed", handlerFailures.get(0));
      handlerFailures.stream().skip(1).forEach(failed::addSuppressed);
      throw failed;
    }
  }
}
