package dev.sandboxsdk.agent.text;

/**
 * Turns a byte stream into valid UTF-8, chunk by chunk, without ever splitting a code point.
 *
 * <p>A sequence that is incomplete at the end of a chunk is held back and completed by the next
 * chunk; at the end of input it becomes U+FFFD. Invalid bytes become U+FFFD exactly as the JDK's
 * UTF-8 decoder replaces them (one per maximal invalid subpart, and one per encoded surrogate), so
 * streamed text matches the text of a buffered exec. One instance per stream; not thread-safe.
 */
public final class Utf8Sanitizer {
  private static final byte[] REPLACEMENT = {(byte) 0xEF, (byte) 0xBF, (byte) 0xBD};

  private final byte[] carry = new byte[4];
  private int carryLength;

  /** Bytes received but not yet emitted because they may start a code point split across chunks. */
  public int pending() {
    return carryLength;
  }

  /** Drops any held-back bytes (used when a reader jumps to another offset). */
  public void reset() {
    carryLength = 0;
  }

  /**
   * Appends the valid UTF-8 form of {@code in[off, off+len)} (after any held-back bytes) to {@code
   * out}.
   *
   * @param endOfInput true when no more bytes will follow, so nothing may be held back
   */
  public void sanitize(byte[] in, int off, int len, boolean endOfInput, ByteBuf out) {
    byte[] a = in;
    int from = off;
    int to = off + len;
    if (carryLength > 0) {
      // Rare path: a code point was split across chunks; join the held bytes with the new ones.
      a = new byte[carryLength + len];
      System.arraycopy(carry, 0, a, 0, carryLength);
      System.arraycopy(in, off, a, carryLength, len);
      from = 0;
      to = a.length;
      carryLength = 0;
    }
    int i = from;
    int runStart = from;
    while (i < to) {
      int b = a[i] & 0xFF;
      if (b < 0x80) {
        i++;
        continue;
      }
      int lead = lead(b);
      if (lead < 0) {
        out.append(a, runStart, i - runStart).append(REPLACEMENT);
        i++;
        runStart = i;
        continue;
      }
      int need = lead & 0xFF;
      int lo = (lead >> 8) & 0xFF;
      int hi = lead >> 16;
      int j = 1;
      boolean invalid = false;
      while (j <= need && i + j < to) {
        int c = a[i + j] & 0xFF;
        int min = j == 1 ? lo : 0x80;
        int max = j == 1 ? hi : 0xBF;
        if (c < min || c > max) {
          invalid = true;
          break;
        }
        j++;
      }
      // An encoded surrogate is one malformed unit, as the JDK decoder (and so exec) treats it.
      boolean surrogate = !invalid && b == 0xED && j > 1 && (a[i + 1] & 0xFF) >= 0xA0 && (j > need || endOfInput);
      if (invalid || surrogate) {
        out.append(a, runStart, i - runStart).append(REPLACEMENT);
        i += j;
        runStart = i;
      } else if (j <= need) {
        // Incomplete sequence at the end of this chunk.
        out.append(a, runStart, i - runStart);
        if (endOfInput) {
          out.append(REPLACEMENT);
        } else {
          carryLength = to - i;
          System.arraycopy(a, i, carry, 0, carryLength);
        }
        return;
      } else {
        i += need + 1;
      }
    }
    out.append(a, runStart, to - runStart);
  }

  /**
   * For a byte that leads a multi-byte sequence: how many continuation bytes follow, and the range
   * the first of them must lie in, packed as {@code need | lo << 8 | hi << 16}; -1 if {@code b}
   * cannot lead one.
   */
  private static int lead(int b) {
    int need;
    int lo = 0x80;
    int hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) {
      need = 1;
    } else if (b == 0xE0) {
      need = 2;
      lo = 0xA0;
    } else if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) {
      need = 2;
    } else if (b == 0xED) {
      need = 2; // 0xED 0xA0..0xBF encodes a UTF-16 surrogate: checked by the caller
    } else if (b == 0xF0) {
      need = 3;
      lo = 0x90;
    } else if (b >= 0xF1 && b <= 0xF3) {
      need = 3;
    } else if (b == 0xF4) {
      need = 3;
      hi = 0x8F; // nothing above U+10FFFF
    } else {
      return -1;
    }
    return need | lo << 8 | hi << 16;
  }
}
