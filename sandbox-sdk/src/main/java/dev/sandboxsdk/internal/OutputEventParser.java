package dev.sandboxsdk.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Reads the events that carry output ({@code stdout}/{@code stderr}) straight from their JSON
 * bytes, without building a Jackson tree: a profile of {@code execStream} showed about 60% of the
 * reading thread in Jackson decoding the {@code data} string (its escape path, taken at every
 * {@code \n}, goes char by char through a segmented text buffer and a StringBuilder).
 *
 * <p>Only the shape the agent sends is read here: one flat object whose {@code type} is
 * {@code "stdout"} or {@code "stderr"}, with a string {@code data}, integer {@code offset} and
 * {@code bytes}, and other members that are strings. Anything else (another type, a nested
 * value, an escaped key, a number with a fraction, invalid UTF-8, a surrogate escape, bad JSON,
 * a non-ASCII byte in a key or in a string other than {@code data}, whose UTF-8 is not checked)
 * makes {@link #parse} return false, and the caller parses the event with Jackson as before, so
 * the result, and every error, is exactly what the tree path gives. Not thread-safe: one per
 * stream.
 */
final class OutputEventParser {
  private static final byte[] TYPE = ascii("type");
  private static final byte[] DATA = ascii("data");
  private static final byte[] OFFSET = ascii("offset");
  private static final byte[] BYTES = ascii("bytes");
  private static final byte[] STDOUT = ascii("stdout");
  private static final byte[] STDERR = ascii("stderr");
  private static final VarHandle LONGS =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
  private static final long ONES = 0x0101010101010101L;
  private static final long HIGHS = 0x8080808080808080L;
  private static final long QUOTES = ONES * '"';
  private static final long BACKSLASHES = ONES * '\\';
  private static final long HIGH3 = ONES * 0xE0;

  private byte[] json;
  private int pos;
  private int end;
  private byte[] scratch = new byte[0]; // unescaped data, reused between events

  /** The last event parsed: whether it was stderr, its text, offset and raw byte count. */
  boolean stderr;
  String text;
  long offset;
  long bytes;

  /**
   * Parses {@code json[from, to)}; true if it is an output event read completely, false if the
   * caller has to parse it the general way.
   */
  boolean parse(byte[] json, int from, int to) {
    this.json = json;
    this.pos = from;
    this.end = to;
    try {
      return object();
    } finally {
      this.json = null;
    }
  }

  private boolean object() {
    int type = 0; // 1 stdout, 2 stderr, -1 another
    String data = null;
    long off = -1;
    long count = -1;
    skipSpace();
    if (!take('{')) {
      return false;
    }
    skipSpace();
    if (peek() == '}') {
      return false; // no fields: let the tree path say what is missing
    }
    for (;;) {
      skipSpace();
      if (!take('"')) {
        return false;
      }
      int keyFrom = pos;
      int keyEnd = plainStringEnd();
      if (keyEnd < 0) {
        return false; // an escape, control char or non-ASCII byte in a key: rare, leave it to Jackson
      }
      pos = keyEnd + 1;
      skipSpace();
      if (!take(':')) {
        return false;
      }
      skipSpace();
      if (is(keyFrom, keyEnd, OFFSET) || is(keyFrom, keyEnd, BYTES)) {
        long v = integer();
        if (v < 0) {
          return false;
        }
        if (is(keyFrom, keyEnd, OFFSET)) {
          off = v;
        } else {
          count = v;
        }
      } else {
        if (!take('"')) {
          return false; // only strings besides the two numbers
        }
        if (is(keyFrom, keyEnd, DATA)) {
          data = stringValue();
          if (data == null) {
            return false;
          }
        } else {
          int valueFrom = pos;
          int valueEnd = skipString();
          if (valueEnd < 0) {
            return false;
          }
          if (is(keyFrom, keyEnd, TYPE)) {
            type = is(valueFrom, valueEnd, STDOUT) ? 1 : is(valueFrom, valueEnd, STDERR) ? 2 : -1;
          }
        }
      }
      skipSpace();
      if (take(',')) {
        continue;
      }
      if (!take('}')) {
        return false;
      }
      break;
    }
    skipSpace();
    if (pos != end || type <= 0 || data == null || off < 0 || count < 0) {
      return false;
    }
    stderr = type == 2;
    text = data;
    offset = off;
    bytes = count;
    return true;
  }

  /**
   * Reads the string whose content starts at {@link #pos}, in one pass that checks and decodes
   * it, and moves past its closing quote; null if it needs the general path (unterminated, a
   * raw control char, a bad or surrogate escape, invalid UTF-8).
   */
  private String stringValue() {
    byte[] b = json;
    int from = pos;
    int i = plainRun(from);
    if (i >= end) {
      return null;
    }
    if (b[i] == '"') {
      pos = i + 1;
      return utf8(b, from, i - from); // no escape: decode the bytes as they are
    }
    // Escapes: unescaped bytes go to the scratch buffer; they are never more than the escaped ones.
    byte[] out = scratch.length >= end - from ? scratch : (scratch = new byte[Math.max(end - from, 256)]);
    int n = i - from;
    System.arraycopy(b, from, out, 0, n);
    for (;;) {
      byte c = b[i];
      if (c == '"') {
        pos = i + 1;
        return utf8(out, 0, n);
      }
      if (c != '\\' || i + 1 >= end) {
        return null; // a raw control char, or a backslash at the very end
      }
      byte e = b[i + 1];
      i += 2;
      switch (e) {
        case 'n': out[n++] = '\n'; break;
        case 't': out[n++] = '\t'; break;
        case 'r': out[n++] = '\r'; break;
        case '"': out[n++] = '"'; break;
        case '\\': out[n++] = '\\'; break;
        case '/': out[n++] = '/'; break;
        case 'b': out[n++] = '\b'; break;
        case 'f': out[n++] = '\f'; break;
        case 'u': {
          int cp = hex4(i);
          if (cp < 0 || (cp >= 0xD800 && cp <= 0xDFFF)) {
            return null; // surrogates (a pair or a lone one) are left to Jackson
          }
          i += 4;
          if (cp < 0x80) {
            out[n++] = (byte) cp;
          } else if (cp < 0x800) {
            out[n++] = (byte) (0xC0 | cp >> 6);
            out[n++] = (byte) (0x80 | cp & 0x3F);
          } else {
            out[n++] = (byte) (0xE0 | cp >> 12);
            out[n++] = (byte) (0x80 | cp >> 6 & 0x3F);
            out[n++] = (byte) (0x80 | cp & 0x3F);
          }
          break;
        }
        default:
          return null;
      }
      int run = i;
      i = plainRun(run);
      if (i >= end) {
        return null;
      }
      System.arraycopy(b, run, out, n, i - run);
      n += i - run;
    }
  }

  /**
   * The index of the first quote, backslash or control char from {@code from}; {@link #end} if
   * none. This loop is most of the parser's time, so it tests eight bytes at a time: a byte of
   * {@code x ^ 0x22..} is zero at a quote, of {@code x ^ 0x5C..} at a backslash, and of
   * {@code x & 0xE0..} at a byte below 0x20, and {@code (v - 0x01..) & ~v & 0x80..} is non-zero
   * exactly when some byte of {@code v} is zero (its lowest flagged byte is the first zero byte;
   * bytes above it may be flagged wrongly, which does not matter).
   */
  private int plainRun(int from) {
    byte[] b = json;
    int limit = end;
    int i = from;
    while (i + 8 <= limit) {
      long x = (long) LONGS.get(b, i);
      long stop = zeroByte(x ^ QUOTES) | zeroByte(x ^ BACKSLASHES) | zeroByte(x & HIGH3);
      if (stop != 0) {
        return i + (Long.numberOfTrailingZeros(stop) >>> 3); // the lowest flagged byte is exact
      }
      i += 8;
    }
    while (i < limit) {
      byte c = b[i];
      if (c == '"' || c == '\\' || (c >= 0 && c < 0x20)) {
        return i;
      }
      i++;
    }
    return limit;
  }

  private static long zeroByte(long v) {
    return (v - ONES) & ~v & HIGHS;
  }

  /**
   * Decodes UTF-8; null if it was not valid (the JDK would have put U+FFFD where Jackson
   * reports an error). A U+FFFD that was really sent also takes the general path, which is
   * correct, only slower.
   */
  private static String utf8(byte[] b, int from, int length) {
    String s = new String(b, from, length, StandardCharsets.UTF_8);
    return s.indexOf('\uFFFD') >= 0 ? null : s;
  }

  /**
   * Checks the string whose content starts at {@link #pos} and moves past its closing quote;
   * returns where the closing quote is, or -1 if the string is unterminated, holds a raw
   * control char, an invalid escape or a non-ASCII byte (the agent sends none in these strings,
   * and Jackson, which checks its UTF-8, must decide).
   */
  private int skipString() {
    byte[] b = json;
    int i = pos;
    while (i < end) {
      byte c = b[i];
      if (c == '"') {
        pos = i + 1;
        return i;
      }
      if (c == '\\') {
        if (i + 1 >= end) {
          return -1;
        }
        byte e = b[i + 1];
        if (e == 'u') {
          if (i + 6 > end || hex4(i + 2) < 0) {
            return -1;
          }
          i += 6;
        } else if (e == 'n' || e == 't' || e == 'r' || e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f') {
          i += 2;
        } else {
          return -1;
        }
      } else if (c < 0x20) {
        return -1; // JSON forbids raw control chars in strings; a negative byte is non-ASCII
      } else {
        i++;
      }
    }
    return -1;
  }

  /** Where the string starting at {@link #pos} ends if it is plain ASCII (no escape, no control char); else -1. */
  private int plainStringEnd() {
    for (int i = pos; i < end; i++) {
      byte c = json[i];
      if (c == '"') {
        return i;
      }
      if (c == '\\' || c < 0x20) { // a negative byte is non-ASCII
        return -1;
      }
    }
    return -1;
  }

  /** A non-negative JSON integer without fraction or exponent that fits a long; else -1. */
  private long integer() {
    int from = pos;
    long v = 0;
    while (pos < end && json[pos] >= '0' && json[pos] <= '9') {
      if (pos - from >= 18) {
        return -1; // 19+ digits may not fit; the tree path decides
      }
      v = v * 10 + (json[pos] - '0');
      pos++;
    }
    int digits = pos - from;
    if (digits == 0 || (digits > 1 && json[from] == '0')) {
      return -1; // no digits, or a leading zero, which JSON forbids
    }
    if (pos < end && (json[pos] == '.' || json[pos] == 'e' || json[pos] == 'E')) {
      return -1;
    }
    return v;
  }

  private int hex4(int at) {
    if (at + 4 > end) {
      return -1;
    }
    int v = 0;
    for (int i = at; i < at + 4; i++) {
      int d = Character.digit(json[i], 16);
      if (d < 0) {
        return -1;
      }
      v = v << 4 | d;
    }
    return v;
  }

  private boolean is(int from, int to, byte[] word) {
    return Arrays.equals(json, from, to, word, 0, word.length);
  }

  private void skipSpace() {
    while (pos < end) {
      byte c = json[pos];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
        return;
      }
      pos++;
    }
  }

  private int peek() {
    return pos < end ? json[pos] : -1;
  }

  private boolean take(char c) {
    if (pos < end && json[pos] == c) {
      pos++;
      return true;
    }
    return false;
  }

  private static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }
}
