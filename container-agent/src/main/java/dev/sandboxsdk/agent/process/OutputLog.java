package dev.sandboxsdk.agent.process;

/**
 * The retained window of one output stream of a background process: the last {@code capacity}
 * bytes, addressed by absolute byte offset from the start of the stream. Grows lazily up to its
 * capacity so an idle process costs little memory.
 *
 * <p>Not thread-safe: {@link ManagedProcess} guards every call with its lock.
 */
final class OutputLog {
  private final int capacity;
  private byte[] buf;
  private int start; // index of the oldest retained byte
  private int size; // retained bytes
  private long total; // bytes ever appended

  OutputLog(int capacity) {
    this.capacity = capacity;
    this.buf = new byte[Math.min(capacity, 4096)];
  }

  /** Offset one past the newest byte: the number of bytes the stream has produced. */
  long end() {
    return total;
  }

  /** Offset of the oldest byte still retained. */
  long oldest() {
    return total - size;
  }

  void append(byte[] src, int off, int len) {
    total += len;
    if (len >= capacity) {
      if (buf.length != capacity) {
        buf = new byte[capacity];
      }
      System.arraycopy(src, off + len - capacity, buf, 0, capacity);
      start = 0;
      size = capacity;
      return;
    }
    if (size + len > buf.length && buf.length < capacity) {
      int grown = (int) Math.min(capacity, Math.max((long) size + len, (long) buf.length * 2));
      byte[] bigger = new byte[grown];
      copyOut(start, bigger, 0, size);
      buf = bigger;
      start = 0;
    }
    int overflow = size + len - buf.length;
    if (overflow > 0) {
      start = (start + overflow) % buf.length;
      size -= overflow;
    }
    int pos = (start + size) % buf.length;
    int first = Math.min(len, buf.length - pos);
    System.arraycopy(src, off, buf, pos, first);
    System.arraycopy(src, off + first, buf, 0, len - first);
    size += len;
  }

  /**
   * Copies up to {@code max} bytes starting at absolute offset {@code from} (which must lie in
   * {@code [oldest(), end()]}) into {@code dst}; returns how many were copied.
   */
  int read(long from, byte[] dst, int dstOff, int max) {
    if (from < oldest() || from > total) {
      throw new IllegalArgumentException("offset " + from + " outside [" + oldest() + ", " + total + "]");
    }
    int n = (int) Math.min(max, total - from);
    int skip = (int) (from - oldest());
    copyOut((start + skip) % Math.max(1, buf.length), dst, dstOff, n);
    return n;
  }

  private void copyOut(int from, byte[] dst, int dstOff, int n) {
    if (n == 0) {
      return;
    }
    int first = Math.min(n, buf.length - from);
    System.arraycopy(buf, from, dst, dstOff, first);
    System.arraycopy(buf, 0, dst, dstOff + first, n - first);
  }
}
