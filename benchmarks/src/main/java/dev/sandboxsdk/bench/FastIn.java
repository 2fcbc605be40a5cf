package dev.sandboxsdk.bench;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;

/** An unsynchronized buffered input stream with a fast line reader (status line, headers, chunk sizes). */
public final class FastIn extends InputStream {
  final InputStream raw;
  final byte[] buf = new byte[256 * 1024];
  int pos;
  int lim;

  public FastIn(InputStream raw) {
    this.raw = raw;
  }

  private int fill() throws IOException {
    if (pos == lim) {
      pos = 0;
      lim = 0;
      int n = raw.read(buf, 0, buf.length);
      if (n < 0) {
        return -1;
      }
      lim = n;
    }
    return lim - pos;
  }

  @Override
  public int read() throws IOException {
    if (pos == lim && fill() < 0) {
      return -1;
    }
    return buf[pos++] & 0xFF;
  }

  @Override
  public int read(byte[] b, int off, int len) throws IOException {
    if (len == 0) {
      return 0;
    }
    if (pos == lim) {
      if (len >= buf.length) {
        return raw.read(b, off, len);
      }
      if (fill() < 0) {
        return -1;
      }
    }
    int n = Math.min(len, lim - pos);
    System.arraycopy(buf, pos, b, off, n);
    pos += n;
    return n;
  }

  @Override
  public int available() {
    return lim - pos;
  }

  /** Reads a CRLF (or LF) terminated ASCII line; null at EOF before any byte. */
  public String readLine() throws IOException {
    StringBuilder sb = null;
    while (true) {
      if (pos == lim && fill() < 0) {
        return sb == null || sb.length() == 0 ? null : sb.toString();
      }
      for (int i = pos; i < lim; i++) {
        if (buf[i] == '\n') {
          int end = i > pos && buf[i - 1] == '\r' ? i - 1 : i;
          String part = new String(buf, pos, end - pos, StandardCharsets.ISO_8859_1);
          pos = i + 1;
          if (sb == null) {
            return part;
          }
          sb.append(part);
          int n = sb.length();
          if (n > 0 && sb.charAt(n - 1) == '\r') {
            sb.setLength(n - 1);
          }
          return sb.toString();
        }
      }
      if (sb == null) {
        sb = new StringBuilder();
      }
      sb.append(new String(buf, pos, lim - pos, StandardCharsets.ISO_8859_1));
      pos = lim;
    }
  }
}
