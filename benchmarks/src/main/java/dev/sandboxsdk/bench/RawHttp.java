package dev.sandboxsdk.bench;

import java.io.Closeable;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A minimal HTTP/1.1 client on a plain socket with TCP_NODELAY, for the agent's own figures: one
 * keep-alive connection at a time, bearer token, JSON bodies; counts the connections it had to
 * open. JDK only.
 */
public final class RawHttp implements Closeable {
  /** A response read whole. */
  public static final class Resp {
    public final int status;
    public final Map<String, String> headers;
    public final byte[] body;

    Resp(int status, Map<String, String> headers, byte[] body) {
      this.status = status;
      this.headers = headers;
      this.body = body;
    }

    public String text() {
      return new String(body, StandardCharsets.UTF_8);
    }
  }

  final String host;
  final int port;
  final String token;
  /** Connections opened so far (1 if the server kept the first one open). */
  public int connectionsOpened;
  /** Requests sent so far. */
  public long requests;
  /** Where the server closed the keep-alive connection. */
  public final List<String> reconnects = new ArrayList<>();
  Socket socket;
  FastIn in;
  OutputStream out;
  boolean mustClose;

  public RawHttp(String host, int port, String token) {
    this.host = host;
    this.port = port;
    this.token = token;
  }

  void connect() throws IOException {
    close();
    Socket s = new Socket();
    s.setTcpNoDelay(true);
    s.connect(new InetSocketAddress(host, port), 5000);
    s.setSoTimeout(120_000);
    socket = s;
    in = new FastIn(s.getInputStream());
    out = s.getOutputStream();
    connectionsOpened++;
    mustClose = false;
  }

  byte[] requestBytes(String method, String path, byte[] body) {
    StringBuilder h = new StringBuilder(256);
    h.append(method).append(' ').append(path).append(" HTTP/1.1\r\n")
        .append("Host: ").append(host).append(':').append(port).append("\r\n")
        .append("Authorization: Bearer ").append(token).append("\r\n");
    if (body != null) {
      h.append("Content-Type: application/json\r\n");
    }
    h.append("Content-Length: ").append(body == null ? 0 : body.length).append("\r\n\r\n");
    byte[] head = h.toString().getBytes(StandardCharsets.US_ASCII);
    if (body == null || body.length == 0) {
      return head;
    }
    byte[] all = Arrays.copyOf(head, head.length + body.length);
    System.arraycopy(body, 0, all, head.length, body.length);
    return all;
  }

  /** Sends a request (one write) and reads the status line and headers. */
  Map<String, String> send(String method, String path, byte[] body, int[] statusOut) throws IOException {
    if (socket == null || mustClose) {
      connect();
    }
    byte[] request = requestBytes(method, path, body);
    String status;
    try {
      out.write(request);
      status = in.readLine();
    } catch (IOException e) {
      status = null;
    }
    if (status == null) {
      // The server closed the keep-alive connection: note it, and retry once on a new one.
      requests++;
      reconnects.add("after " + (requests - 1) + " requests, before " + method + " " + path);
      connect();
      out.write(request);
      status = in.readLine();
      if (status == null) {
        throw new EOFException("server closed a fresh connection before answering " + method + " " + path);
      }
    } else {
      requests++;
    }
    if (!status.startsWith("HTTP/1.1 ")) {
      throw new IOException("unexpected status line: " + status);
    }
    statusOut[0] = Integer.parseInt(status.substring(9, 12));
    Map<String, String> headers = new LinkedHashMap<>();
    String line;
    while ((line = in.readLine()) != null && !line.isEmpty()) {
      int colon = line.indexOf(':');
      if (colon > 0) {
        headers.put(line.substring(0, colon).trim().toLowerCase(Locale.ROOT), line.substring(colon + 1).trim());
      }
    }
    if (line == null) {
      throw new EOFException("connection closed inside the response headers");
    }
    if ("close".equalsIgnoreCase(headers.get("connection"))) {
      mustClose = true;
    }
    return headers;
  }

  public Resp call(String method, String path, byte[] body) throws IOException {
    int[] st = new int[1];
    Map<String, String> headers = send(method, path, body, st);
    byte[] data;
    String te = headers.get("transfer-encoding");
    if (te != null && te.toLowerCase(Locale.ROOT).contains("chunked")) {
      data = new ChunkedIn(in).readAllBytes();
    } else {
      String cl = headers.get("content-length");
      if (cl == null) {
        throw new IOException("response without Content-Length or chunking (" + method + " " + path + ")");
      }
      data = in.readNBytes(Integer.parseInt(cl));
      if (data.length != Integer.parseInt(cl)) {
        throw new EOFException("short body");
      }
    }
    return new Resp(st[0], headers, data);
  }

  /** Sends a request and returns the (de-chunked) body stream of a chunked response. */
  public ChunkedIn stream(String method, String path, byte[] body, int[] status) throws IOException {
    Map<String, String> headers = send(method, path, body, status);
    String te = headers.get("transfer-encoding");
    if (te == null || !te.toLowerCase(Locale.ROOT).contains("chunked")) {
      throw new IOException("expected a chunked response, got headers " + headers);
    }
    return new ChunkedIn(in);
  }

  @Override
  public void close() {
    if (socket != null) {
      try {
        socket.close();
      } catch (IOException ignored) {
        // closing anyway
      }
      socket = null;
    }
  }
}
