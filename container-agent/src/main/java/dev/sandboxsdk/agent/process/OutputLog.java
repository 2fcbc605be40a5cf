package dev.sandboxsdk.agent.process;

/**
 * The retained window of one output stream of a background process: the last {@code capacity}
 * bytes, addressed by absolute byte offset from the start of the stream. Grows lazily up to its
 * capacity so an idle process costs little memory.
 *
 * <p>Every byte of buffer it allocates is charged to the agent's {@link OutputBudget}. When the
 * budget refuses a growth, the window keeps its current size (it retains fewer bytes, and a
 * reader that falls behind sees them as dropped, as with any window). {@link #evict()} drops the
 * buffer altogether; from then on only the stream's length is counted.
 *
 * <p>Not thread-safe: {@link ManagedProcess} guards every call with its lock.
 */
final class OutputLog {
  static final int INITIAL_BYTES = 4096;

  private final int capacity;
  private final OutputBudget budget;
  private byte[] buf;
  private int start; // index of the oldest retained byte
  private int size; // retained bytes
  private long total; // bytes ever appended
  private boolean evicted;

  OutputLog(int capacity, OutputBudget budget) {
    this.capacity = capacity;
    this.budget = budget;
    int first = Math.min(capacity, INITIAL_BYTES);
    budget.forceReserve(first); // the floor every window gets, so a process can always be read
    this.buf = new byte[first];
  }

  /** Offset one past the newest byte: the number of bytes the stream has produced. */
  long end() {
    return total;
  }

  /** Offset of the oldest byte still retained. */
  long oldest() {
    return total - size;
  }

  /** Bytes of buffer allocated (and charged to the budget). */
  int allocated() {
    return buf.length;
  }

  /**
   * Drops the retained bytes and releases their buffer from the budget; later appends are only
   * counted. Readers of earlier offsets then get {@code truncated} with the dropped byte count.
   *
   * @return the bytes of buffer freed (0 if it was evicted already)
   */
  long evict() {
    if (evicted) {
      return 0;
    }
    int freed = buf.length;
    buf = new byte[0];
    start = 0;
    size = 0;
    evicted = true;
    budget.release(freed);
    return freed;
  }

  void append(byte[] src, int off, int len) {
    total += len;
    if (evicted) {
      return;
    }
    if (size + len > buf.length && buf.length < capacity) {
      grow((long) size + len);
    }
    int cap = buf.length;
    if (len >= cap) {
      System.arraycopy(src, off + len - cap, buf, 0, cap);
      start = 0;
      size = cap;
      return;
    }
    int overflow = size + len - cap;
    if (overflow > 0) {
      start = (start + overflow) % cap;
      size -= overflow;
    }
    int pos = (start + size) % cap;
    int first = Math.min(len, cap - pos);
    System.arraycopy(src, off, buf, pos, first);
    System.arraycopy(src, off + first, buf, 0, len - first);
    size += len;
  }

  /** Grows towards {@code wanted} bytes (at least doubling, at most the capacity) if the budget allows. */
  private void grow(long wanted) {
    int target = (int) Math.min(capacity, Math.max(wanted, (long) buf.length * 2));
    int extra = target - buf.length;
    if (!budget.tryReserve(extra)) {
      return; // keep the current size: the window retains less, readers see the rest as dropped
    }
    byte[] bigger;
    try {
      bigger = new byte[target];
    } catch (OutOfMemoryError e) {
      budget.release(extra);
      return;
    }
    copyOut(start, bigger, 0, size);
    buf = bigger;
    start = 0;
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
