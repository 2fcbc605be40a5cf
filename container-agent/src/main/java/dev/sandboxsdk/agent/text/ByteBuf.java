package dev.sandboxsdk.agent.text;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/** A growable byte array used to assemble wire frames without intermediate strings. Not thread-safe. */
public final class ByteBuf {
  private byte[] bytes;
  private int size;

  public ByteBuf(int initialCapacity) {
    bytes = new byte[Math.max(16, initialCapacity)];
  }

  public int size() {
    return size;
  }

  public byte[] array() {
    return bytes;
  }

  public void clear() {
    size = 0;
  }

  public void ensureSpare(int n) {
    if (bytes.length - size < n) {
      long wanted = Math.max((long) size + n, (long) bytes.length * 2);
      if (wanted > Integer.MAX_VALUE - 16) {
        throw new OutOfMemoryError("frame too large: " + wanted);
      }
      bytes = Arrays.copyOf(bytes, (int) wanted);
    }
  }

  public ByteBuf append(byte b) {
    ensureSpare(1);
    bytes[size++] = b;
    return this;
  }

  public ByteBuf append(byte[] src, int off, int len) {
    ensureSpare(len);
    System.arraycopy(src, off, bytes, size, len);
    size += len;
    return this;
  }

  public ByteBuf append(byte[] src) {
    return append(src, 0, src.length);
  }

  /** Appends ASCII text; callers pass only ASCII (names, numbers, timestamps). */
  public ByteBuf ascii(String s) {
    int n = s.length();
    ensureSpare(n);
    for (int i = 0; i < n; i++) {
      bytes[size++] = (byte) s.charAt(i);
    }
    return this;
  }

  public ByteBuf number(long v) {
    return ascii(Long.toString(v));
  }

  public void writeTo(OutputStream out) throws IOException {
    out.write(bytes, 0, size);
  }

  public byte[] toByteArray() {
    return Arrays.copyOf(bytes, size);
  }

  @Override
  public String toString() {
    return new String(bytes, 0, size, StandardCharsets.UTF_8);
  }
}
