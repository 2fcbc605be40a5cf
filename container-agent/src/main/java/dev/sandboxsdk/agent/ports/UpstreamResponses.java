package dev.sandboxsdk.agent.ports;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads a server's HTTP/1.1 answer for the proxy: the head ({@link #readHead}), then the body as
 * it arrives, plain ({@link UpstreamReader}) or chunked ({@link ChunkedReader}).
 */
final class UpstreamResponses {
  /** The largest response head (status line and headers) accepted from a server. */
  static final int MAX_HEAD_BYTES = 64 * 1024;
  private static final int BUFFER = 16 * 1024;

  private UpstreamResponses() {}

  /** A response's status and headers, names as sent. */
  record Head(int status, List<String[]> headers) {
    String first(String name) {
      for (String[] h : headers) {
        if (h[0].equalsIgnoreCase(name)) {
          return h[1];
        }
      }
      return null;
    }
  }

  static Head readHead(UpstreamReader in) throws IOException {
    int budget = MAX_HEAD_BYTES;
    String status = in.readLine(budget);
    budget -= status.length();
    String[] parts = status.split(" ", 3);
    if (parts.length < 2 || !parts[0].startsWith("HTTP/1.") || !parts[1].matches("[1-5][0-9][0-9]")) {
      throw new IOException("not an HTTP/1.x status line");
    }
    List<String[]> headers = new ArrayList<>();
    while (true) {
      String line = in.readLine(budget);
      budget -= line.length() + 2;
      if (line.isEmpty()) {
        return new Head(Integer.parseInt(parts[1]), headers);
      }
      int colon = line.indexOf(':');
      // A bare CR or a NUL is invalid in a field (RFC 9110 5.5); the JDK's server throws on a CR.
      if (colon <= 0 || line.charAt(0) == ' ' || line.charAt(0) == '\t' || line.indexOf('\r') >= 0
          || line.indexOf('\0') >= 0) {
        throw new IOException("malformed header line");
      }
      headers.add(new String[] {line.substring(0, colon).strip(), line.substring(colon + 1).strip()});
    }
  }

  /**
   * Buffered reads from the server that never wait for more than one read of the socket, so a
   * server-sent event is passed on as soon as it arrives. Every read counts as activity.
   */
  static final class UpstreamReader extends InputStream {
    private final InputStream in;
    private final ProxyTimeouts.Watch watch;
    private final byte[] buf = new byte[BUFFER];
    private int pos;
    private int lim;

    UpstreamReader(InputStream in, ProxyTimeouts.Watch watch) {
      this.in = in;
      this.watch = watch;
    }

    private boolean fill() throws IOException {
      int n = in.read(buf, 0, buf.length);
      if (n < 0) {
        return false;
      }
      watch.touch();
      pos = 0;
      lim = n;
      return true;
    }

    @Override
    public int read() throws IOException {
      if (pos == lim && !fill()) {
        return -1;
      }
      return buf[pos++] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      if (len == 0) {
        return 0;
      }
      if (pos == lim && !fill()) {
        return -1;
      }
      int n = Math.min(len, lim - pos);
      System.arraycopy(buf, pos, b, off, n);
      pos += n;
      return n;
    }

    /** A line without its CRLF (or LF), at most {@code max} bytes; EOFException at end of file. */
    String readLine(int max) throws IOException {
      StringBuilder line = new StringBuilder();
      while (true) {
        int c = read();
        if (c < 0) {
          throw new EOFException("end of file in the answer's head");
        }
        if (c == '\n') {
          int end = line.length();
          if (end > 0 && line.charAt(end - 1) == '\r') {
            line.setLength(end - 1);
          }
          return line.toString();
        }
        if (line.length() >= max) {
          throw new IOException("the answer's head is larger than " + MAX_HEAD_BYTES + " bytes");
        }
        line.append((char) c);
      }
    }
  }

  /** The data of a chunked body (RFC 9112 7.1); trailers are read and dropped. */
  static final class ChunkedReader extends InputStream {
    private final UpstreamReader in;
    private long left;
    private boolean done;

    ChunkedReader(UpstreamReader in) {
      this.in = in;
    }

    @Override
    public int read() throws IOException {
      byte[] one = new byte[1];
      return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      if (done) {
        return -1;
      }
      if (left == 0) {
        String size = in.readLine(1024);
        int semi = size.indexOf(';');
        String hex = (semi < 0 ? size : size.substring(0, semi)).strip();
        if (!hex.matches("[0-9A-Fa-f]{1,15}")) {
          throw new IOException("malformed chunk size in the server's answer");
        }
        left = Long.parseLong(hex, 16);
        if (left == 0) {
          while (!in.readLine(MAX_HEAD_BYTES).isEmpty()) {
            // trailers: dropped
          }
          done = true;
          return -1;
        }
      }
      int n = in.read(b, off, (int) Math.min(len, left));
      if (n < 0) {
        throw new EOFException("the server closed the connection inside a chunk");
      }
      left -= n;
      if (left == 0 && !in.readLine(2).isEmpty()) {
        throw new IOException("a chunk of the server's answer does not end with CRLF");
      }
      return n;
    }
  }
}
