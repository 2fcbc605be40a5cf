package dev.sandboxsdk.agent.egress;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * A client's request line and headers, read strictly (CRLF line ends, no folded headers, tokens
 * where HTTP wants tokens) and within a size bound, with the bytes that came after them.
 */
record RequestHead(String method, String target, String version, List<String[]> headers, byte[] rest) {
  private static final Pattern TOKEN = Pattern.compile("[!#$%&'*+.^_`|~0-9A-Za-z-]+");
  private static final Pattern TARGET = Pattern.compile("[\\x21-\\x7e]+");

  /** The head is larger than the bound ({@code 431}). */
  static final class TooLarge extends IOException {
    TooLarge() {
      super("request head too large");
    }
  }

  /** The head is not HTTP/1.x ({@code 400}). */
  static final class Malformed extends IOException {
    Malformed(String message) {
      super(message);
    }
  }

  /**
   * Reads a head of at most {@code max} bytes.
   *
   * @throws TooLarge beyond {@code max} bytes
   * @throws Malformed if it is not a valid head
   * @throws EOFException if the client closed first
   */
  static RequestHead read(ReadableByteChannel in, int max) throws IOException {
    ByteBuffer buf = ByteBuffer.allocate(max + 1);
    int scanned = 0;
    while (true) {
      if (in.read(buf) < 0) {
        throw new EOFException("client closed before its request head ended");
      }
      byte[] a = buf.array();
      for (int i = Math.max(3, scanned); i < buf.position(); i++) {
        if (a[i] == '\n' && a[i - 1] == '\r' && a[i - 2] == '\n' && a[i - 3] == '\r') {
          String text = new String(a, 0, i - 3, StandardCharsets.ISO_8859_1);
          byte[] rest = java.util.Arrays.copyOfRange(a, i + 1, buf.position());
          return parse(text, rest);
        }
      }
      scanned = buf.position();
      if (!buf.hasRemaining()) {
        throw new TooLarge();
      }
    }
  }

  static RequestHead parse(String text, byte[] rest) throws Malformed {
    String[] lines = text.split("\r\n", -1);
    String[] requestLine = lines[0].split(" ", -1);
    if (requestLine.length != 3 || !TOKEN.matcher(requestLine[0]).matches()
        || !TARGET.matcher(requestLine[1]).matches()
        || !(requestLine[2].equals("HTTP/1.1") || requestLine[2].equals("HTTP/1.0"))) {
      throw new Malformed("invalid request line");
    }
    List<String[]> headers = new ArrayList<>();
    for (int i = 1; i < lines.length; i++) {
      String line = lines[i];
      int colon = line.indexOf(':');
      if (colon <= 0 || !TOKEN.matcher(line.substring(0, colon)).matches() || line.indexOf('\n') >= 0
          || line.indexOf('\r') >= 0 || line.indexOf('\0') >= 0) {
        throw new Malformed("invalid header line");
      }
      headers.add(new String[] {line.substring(0, colon), line.substring(colon + 1).strip()});
    }
    return new RequestHead(requestLine[0], requestLine[1], requestLine[2], List.copyOf(headers), rest);
  }

  /** The values of a header (case-insensitive name), in order. */
  List<String> values(String name) {
    List<String> out = new ArrayList<>();
    for (String[] h : headers) {
      if (h[0].toLowerCase(Locale.ROOT).equals(name)) {
        out.add(h[1]);
      }
    }
    return out;
  }
}
