package dev.sandboxsdk.bench;

import java.nio.charset.StandardCharsets;

/**
 * Reading JSON fields straight from bytes, without a parser: what the raw clients use to keep up
 * with the agent's event streams.
 */
public final class JsonBytes {
  private JsonBytes() {}

  public static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }

  public static int indexOf(byte[] a, int from, int to, byte[] pat) {
    outer:
    for (int i = from, last = to - pat.length; i <= last; i++) {
      for (int j = 0; j < pat.length; j++) {
        if (a[i + j] != pat[j]) {
          continue outer;
        }
      }
      return i;
    }
    return -1;
  }

  public static long parseLongAfter(byte[] a, int from, int to, byte[] key) {
    int k = indexOf(a, from, to, key);
    if (k < 0) {
      return Long.MIN_VALUE;
    }
    int i = k + key.length;
    boolean neg = false;
    if (i < to && a[i] == '-') {
      neg = true;
      i++;
    }
    long v = 0;
    int digits = 0;
    while (i < to && a[i] >= '0' && a[i] <= '9') {
      v = v * 10 + (a[i] - '0');
      i++;
      digits++;
    }
    return digits == 0 ? Long.MIN_VALUE : neg ? -v : v;
  }

  /** The last occurrence of {@code pat} in {@code a[from..to)}, or -1. */
  public static int lastIndexOf(byte[] a, int from, int to, byte[] pat) {
    outer:
    for (int i = to - pat.length; i >= from; i--) {
      for (int j = 0; j < pat.length; j++) {
        if (a[i + j] != pat[j]) {
          continue outer;
        }
      }
      return i;
    }
    return -1;
  }

  /** JSON string unescape of a[from..] up to the closing quote into out; returns the decoded length. */
  public static int unescapeJsonString(byte[] a, int from, int to, byte[] out, int[] closeQuote) {
    int o = 0;
    int i = from;
    while (i < to) {
      byte b = a[i];
      if (b == '"') {
        closeQuote[0] = i;
        return o;
      }
      if (b != '\\') {
        out[o++] = b;
        i++;
        continue;
      }
      byte e = a[i + 1];
      i += 2;
      switch (e) {
        case 'n': out[o++] = '\n'; break;
        case 'r': out[o++] = '\r'; break;
        case 't': out[o++] = '\t'; break;
        case 'b': out[o++] = '\b'; break;
        case 'f': out[o++] = '\f'; break;
        case '/': out[o++] = '/'; break;
        case '"': out[o++] = '"'; break;
        case '\\': out[o++] = '\\'; break;
        case 'u': {
          int cp = Integer.parseInt(new String(a, i, 4, StandardCharsets.US_ASCII), 16);
          i += 4;
          if (cp >= 0xD800 && cp <= 0xDBFF && i + 6 <= to && a[i] == '\\' && a[i + 1] == 'u') {
            int lo = Integer.parseInt(new String(a, i + 2, 4, StandardCharsets.US_ASCII), 16);
            i += 6;
            cp = Character.toCodePoint((char) cp, (char) lo);
          }
          byte[] enc = new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8);
          System.arraycopy(enc, 0, out, o, enc.length);
          o += enc.length;
          break;
        }
        default:
          throw new IllegalStateException("bad escape \\" + (char) e);
      }
    }
    throw new IllegalStateException("unterminated JSON string");
  }
}
