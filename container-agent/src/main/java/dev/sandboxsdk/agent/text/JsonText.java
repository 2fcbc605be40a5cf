package dev.sandboxsdk.agent.text;

/** Writes JSON string literals straight from valid UTF-8 bytes; the hot path of output events. */
public final class JsonText {
  private static final byte[] HEX = "0123456789abcdef".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

  private JsonText() {}

  /**
   * Appends {@code "..."} with the JSON-escaped form of {@code utf8[off, off+len)}. The input must be
   * valid UTF-8 (see {@link Utf8Sanitizer}); bytes at or above 0x80 are copied unchanged.
   */
  public static void appendQuoted(byte[] utf8, int off, int len, ByteBuf out) {
    out.ensureSpare(len + 2);
    out.append((byte) '"');
    appendEscaped(utf8, off, len, out);
    out.append((byte) '"');
  }

  /**
   * The length {@link #appendEscaped} gives {@code utf8[off, off+len)}, without writing it: so a
   * body can be measured (for its {@code Content-Length}) before it is written.
   */
  public static long escapedLength(byte[] utf8, int off, int len) {
    long n = len;
    int end = off + len;
    for (int i = off; i < end; i++) {
      int b = utf8[i] & 0xFF;
      if (b >= 0x20 && b != '"' && b != '\\') {
        continue;
      }
      n += b == '"' || b == '\\' || b == '\n' || b == '\r' || b == '\t' ? 1 : 5;
    }
    return n;
  }

  /** Appends the JSON-escaped form of valid UTF-8 {@code utf8[off, off+len)}, without quotes. */
  public static void appendEscaped(byte[] utf8, int off, int len, ByteBuf out) {
    out.ensureSpare(len);
    int end = off + len;
    int runStart = off;
    for (int i = off; i < end; i++) {
      int b = utf8[i] & 0xFF;
      if (b >= 0x20 && b != '"' && b != '\\') {
        continue;
      }
      out.append(utf8, runStart, i - runStart);
      runStart = i + 1;
      switch (b) {
        case '"':
          out.append((byte) '\\').append((byte) '"');
          break;
        case '\\':
          out.append((byte) '\\').append((byte) '\\');
          break;
        case '\n':
          out.append((byte) '\\').append((byte) 'n');
          break;
        case '\r':
          out.append((byte) '\\').append((byte) 'r');
          break;
        case '\t':
          out.append((byte) '\\').append((byte) 't');
          break;
        default:
          out.append((byte) '\\').append((byte) 'u').append((byte) '0').append((byte) '0')
              .append(HEX[b >> 4]).append(HEX[b & 0xF]);
      }
    }
    out.append(utf8, runStart, end - runStart);
  }

  /** Appends a JSON string literal for ASCII-only text such as ids, names and timestamps. */
  public static void appendQuotedAscii(String s, ByteBuf out) {
    byte[] b = s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    appendQuoted(b, 0, b.length, out);
  }
}
