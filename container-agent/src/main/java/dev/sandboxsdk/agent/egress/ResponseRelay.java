package dev.sandboxsdk.agent.egress;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.function.LongConsumer;
import java.util.regex.Pattern;

/**
 * Relays one HTTP/1.1 response of a server to an intercepted client, by its framing (RFC 9112,
 * section 6.3): interim {@code 1xx} answers, then a head whose body is none ({@code HEAD},
 * {@code 204}, {@code 304}), chunked, of a {@code Content-Length}, or until the server closes. The
 * client's copy of the head says {@code Connection: close} (its connection carries one request);
 * everything else goes on byte for byte. Anything the relay cannot frame (a malformed head, a
 * length it cannot trust, an upgrade) it relays until the server closes, as a tunnel would.
 *
 * <p>{@link #relay} answers whether the server's connection may carry another request: the
 * response ended by its framing, the server did not ask to close, and not one byte more arrived.
 * Not thread-safe: one relay per response.
 */
final class ResponseRelay {
  /** The longest response head, and the longest chunk-size or trailer line. */
  static final int MAX_HEAD = 64 * 1024;
  private static final int MAX_LINE = 4096;
  private static final Pattern STATUS_LINE = Pattern.compile("HTTP/1\\.[01] [0-9]{3}( .*)?");
  private static final Pattern CHUNK_SIZE = Pattern.compile("[0-9a-fA-F]{1,15}[ \t]*(;.*)?");

  private final ReadableByteChannel from;
  private final WritableByteChannel to;
  private final LongConsumer counter;
  private final Runnable activity;
  private final ByteBuffer buf = ByteBuffer.allocate(MAX_HEAD);

  /**
   * @param counter told every byte relayed down
   * @param activity told whenever bytes arrive (the idle timeout measures silence)
   */
  ResponseRelay(ReadableByteChannel from, WritableByteChannel to, LongConsumer counter, Runnable activity) {
    this.from = from;
    this.to = to;
    this.counter = counter;
    this.activity = activity;
    buf.flip();
  }

  /** Relays the answer to a request of {@code method}; true if the connection may be used again. */
  boolean relay(String method) throws IOException {
    while (true) {
      byte[] raw = head();
      String text = raw == null ? null : new String(raw, StandardCharsets.ISO_8859_1);
      if (text == null || !STATUS_LINE.matcher(text.substring(0, text.indexOf('\r'))).matches()) {
        send(raw == null ? new byte[0] : raw);
        return untilClose();
      }
      int status = Integer.parseInt(text.substring(9, 12));
      if (status == 101) {
        send(raw);
        return untilClose();
      }
      if (status >= 100 && status < 200) {
        send(raw);
        continue;
      }
      Head head = Head.parse(text);
      send(head.forClient().getBytes(StandardCharsets.ISO_8859_1));
      boolean framed;
      if (method.equals("HEAD") || status == 204 || status == 304) {
        framed = true;
      } else if (head.transferEncoding != null) {
        framed = head.transferEncoding.endsWith("chunked") && chunked();
      } else if (head.contentLength >= 0) {
        exactly(head.contentLength);
        framed = true;
      } else {
        framed = false;
      }
      if (!framed) {
        return untilClose();
      }
      return head.keepAlive && !buf.hasRemaining();
    }
  }

  /** The response head's parts that decide its framing and the connection's reuse. */
  private record Head(String text, String transferEncoding, long contentLength, boolean keepAlive) {
    static Head parse(String text) {
      String[] lines = text.split("\r\n");
      String te = null;
      long length = -1;
      boolean lengthValid = true;
      boolean close = lines[0].startsWith("HTTP/1.0");
      for (int i = 1; i < lines.length; i++) {
        int colon = lines[i].indexOf(':');
        if (colon <= 0) {
          continue;
        }
        String name = lines[i].substring(0, colon).strip().toLowerCase(Locale.ROOT);
        String value = lines[i].substring(colon + 1).strip().toLowerCase(Locale.ROOT);
        switch (name) {
          case "transfer-encoding" -> te = te == null ? value : te + "," + value;
          case "content-length" -> {
            long l = value.matches("[0-9]{1,18}") ? Long.parseLong(value) : -2;
            lengthValid &= l >= 0 && (length < 0 || length == l);
            length = l;
          }
          case "connection" -> close |= value.contains("close");
          default -> { }
        }
      }
      if (te != null) {
        te = te.replace(" ", "");
      }
      // A length that is invalid or says two things cannot be trusted: relayed until the close.
      // Both a transfer coding and a length: the coding frames it, and the connection is not kept.
      return new Head(text, te, lengthValid ? length : -1, !close && lengthValid && (te == null || length < 0));
    }

    /** The head as the client gets it: without the server's connection headers, with {@code close}. */
    String forClient() {
      StringBuilder sb = new StringBuilder(text.length() + 24);
      String[] lines = text.split("\r\n");
      sb.append(lines[0]).append("\r\n");
      for (int i = 1; i < lines.length; i++) {
        String lower = lines[i].toLowerCase(Locale.ROOT);
        if (!lower.startsWith("connection:") && !lower.startsWith("keep-alive:")) {
          sb.append(lines[i]).append("\r\n");
        }
      }
      return sb.append("Connection: close\r\n\r\n").toString();
    }
  }

  /** Relays a chunked body to its last chunk and trailers; false if it is malformed (then relayed to the close). */
  private boolean chunked() throws IOException {
    while (true) {
      String line = line();
      if (line == null || !CHUNK_SIZE.matcher(line).matches()) {
        send(line == null ? new byte[0] : (line + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
        return false;
      }
      send((line + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
      int end = 0;
      while (end < line.length() && Character.digit(line.charAt(end), 16) >= 0) {
        end++;
      }
      long size = Long.parseLong(line.substring(0, end), 16);
      if (size == 0) {
        String trailer;
        do {
          trailer = line();
          if (trailer == null) {
            return false;
          }
          send((trailer + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
        } while (!trailer.isEmpty());
        return true;
      }
      exactly(size);
      String crlf = line();
      if (crlf == null || !crlf.isEmpty()) {
        send(crlf == null ? new byte[0] : (crlf + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
        return false;
      }
      send("\r\n".getBytes(StandardCharsets.ISO_8859_1));
    }
  }

  /** The head up to and with its empty line, or null if it is over {@link #MAX_HEAD} or cut off (then in the buffer). */
  private byte[] head() throws IOException {
    int scanned = 0;
    while (true) {
      byte[] a = buf.array();
      for (int i = buf.position() + Math.max(3, scanned); i < buf.limit(); i++) {
        if (a[i] == '\n' && a[i - 1] == '\r' && a[i - 2] == '\n' && a[i - 3] == '\r') {
          return take(i + 1 - buf.position());
        }
      }
      scanned = buf.remaining();
      if (buf.remaining() == buf.capacity() || !fill()) {
        if (buf.remaining() == 0) {
          throw new EOFException("the server closed before its answer");
        }
        return null;
      }
    }
  }

  /** One CRLF-ended line without its CRLF, or null if over {@value #MAX_LINE} bytes or cut off. */
  private String line() throws IOException {
    while (true) {
      byte[] a = buf.array();
      for (int i = buf.position() + 1; i < buf.limit() && i - buf.position() <= MAX_LINE; i++) {
        if (a[i] == '\n' && a[i - 1] == '\r') {
          byte[] line = take(i + 1 - buf.position());
          return new String(line, 0, line.length - 2, StandardCharsets.ISO_8859_1);
        }
      }
      if (buf.remaining() > MAX_LINE || !fill()) {
        return null;
      }
    }
  }

  private byte[] take(int n) {
    byte[] out = new byte[n];
    buf.get(out);
    return out;
  }

  /** Reads more into the buffer (compacting it first); false at the server's end. */
  private boolean fill() throws IOException {
    buf.compact();
    try {
      int n = from.read(buf);
      if (n > 0) {
        activity.run();
      }
      return n > 0;
    } finally {
      buf.flip();
    }
  }

  /** Relays exactly {@code n} body bytes; the server closing first ends the relay with an exception. */
  private void exactly(long n) throws IOException {
    long left = n;
    while (left > 0) {
      if (!buf.hasRemaining() && !fill()) {
        throw new EOFException("the server closed " + left + " bytes before its answer's end");
      }
      int chunk = (int) Math.min(left, buf.remaining());
      ByteBuffer slice = buf.slice();
      slice.limit(chunk);
      write(slice);
      buf.position(buf.position() + chunk);
      left -= chunk;
    }
  }

  /** What is buffered, then everything until the server closes; never reusable. */
  private boolean untilClose() throws IOException {
    while (buf.hasRemaining() || fill()) {
      ByteBuffer slice = buf.slice();
      write(slice);
      buf.position(buf.limit());
    }
    return false;
  }

  private void send(byte[] bytes) throws IOException {
    write(ByteBuffer.wrap(bytes));
  }

  private void write(ByteBuffer b) throws IOException {
    int n = b.remaining();
    ProxyConnection.write(to, b);
    counter.accept(n);
  }
}
