package dev.sandboxsdk.internal;

import dev.sandboxsdk.SandboxException;
import java.io.EOFException;
import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.Arrays;
import okio.BufferedSource;

/**
 * Reads server-sent events from a response body, one event per {@link #next()} call, and only
 * when called: nothing is read from the socket ahead of demand beyond one read's worth.
 *
 * <p>Lines starting with {@code :} (the agent's keep-alives) are skipped; {@code event:},
 * {@code id:} and {@code retry:} fields are ignored (the agent puts the type in the JSON).
 * A line longer than {@code maxLineBytes}, or an event whose data lines add up to more, ends the
 * stream with an error instead of growing the buffer without bound.
 *
 * <p>The reader keeps its own byte array rather than asking okio for each line: a profile of
 * {@code execStream} showed a third of the reading thread in okio's byte-by-byte
 * {@code indexOf} and in copying each line out of its segments. Here the newline is searched
 * eight bytes at a time, and the usual event (one {@code data:} line) is handed to the parser
 * in place, as a range of the array, without a copy.
 */
final class SseReader {
  private static final int INITIAL_BUFFER = 64 * 1024;
  /** A buffer grown beyond this for a long line is given back once it is empty. */
  private static final int KEPT_BUFFER = 1024 * 1024;
  private static final byte[] DATA_PREFIX = {'d', 'a', 't', 'a', ':', ' '};
  private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
  private static final long ONES = 0x0101010101010101L;
  private static final long HIGHS = 0x8080808080808080L;
  private static final long NEWLINES = ONES * '\n';

  private final BufferedSource source;
  private final long maxLineBytes;
  private final IdleWatch watch; // null: reads wait as long as the source lets them
  private byte[] buf = new byte[INITIAL_BUFFER];
  private int start; // next unread byte
  private int limit; // end of the bytes read
  private int scanned; // [start, scanned) is known to hold no newline
  private int pendingFrom = -1; // the data of a single-line event not yet ended by its blank line
  private int pendingTo;
  private byte[] joined; // the data of an event with several data lines
  private int joinedLength;
  private byte[] eventBytes;
  private int eventFrom;
  private int eventTo;

  SseReader(BufferedSource source, long maxLineBytes, IdleWatch watch) {
    this.source = source;
    this.maxLineBytes = maxLineBytes;
    this.watch = watch;
  }

  /**
   * Reads the next event; its data, the JSON text, is then {@link #bytes()} from
   * {@link #from()} to {@link #to()}, valid until the next call. False at a clean end of the
   * stream (no partial event pending).
   *
   * @throws EOFException if the stream ends inside an event
   * @throws SandboxException if an event is too long
   */
  boolean next() throws IOException {
    pendingFrom = -1;
    joined = null;
    for (;;) {
      int newline = lineEnd();
      if (newline < 0) {
        if (pendingFrom >= 0 || joined != null) {
          throw new EOFException("the event stream ended inside an event");
        }
        return false;
      }
      int from = start;
      int to = newline > from && buf[newline - 1] == '\r' ? newline - 1 : newline;
      start = newline + 1;
      scanned = start;
      if (to == from) { // a blank line ends the event
        if (joined != null) {
          eventBytes = joined;
          eventFrom = 0;
          eventTo = joinedLength;
          return true;
        }
        if (pendingFrom >= 0) {
          eventBytes = buf;
          eventFrom = pendingFrom;
          eventTo = pendingTo;
          return true;
        }
        continue;
      }
      if (buf[from] == ':') {
        continue; // comment: keep-alive
      }
      int valueFrom;
      if (to - from >= DATA_PREFIX.length && Arrays.equals(buf, from, from + DATA_PREFIX.length, DATA_PREFIX, 0,
          DATA_PREFIX.length)) {
        valueFrom = from + DATA_PREFIX.length;
      } else {
        int colon = indexOf(buf, from, to, (byte) ':');
        int fieldEnd = colon < 0 ? to : colon;
        if (fieldEnd - from != 4 || !Arrays.equals(buf, from, fieldEnd, DATA_PREFIX, 0, 4)) {
          continue; // not a data field
        }
        valueFrom = colon < 0 ? to : colon + 1;
        if (valueFrom < to && buf[valueFrom] == ' ') {
          valueFrom++;
        }
      }
      if (pendingFrom < 0 && joined == null) {
        pendingFrom = valueFrom;
        pendingTo = to;
        continue;
      }
      join(valueFrom, to);
    }
  }

  /** The array holding the last event's data. */
  byte[] bytes() {
    return eventBytes;
  }

  /** Where the last event's data starts in {@link #bytes()}. */
  int from() {
    return eventFrom;
  }

  /** Where the last event's data ends in {@link #bytes()}. */
  int to() {
    return eventTo;
  }

  /** The size of the read buffer now (for tests: it must shrink back after a long line). */
  int bufferSize() {
    return buf.length;
  }

  /** Adds a further data line to the event: SSE joins them with newlines. */
  private void join(int valueFrom, int to) {
    int add = to - valueFrom;
    int had = joined != null ? joinedLength : pendingTo - pendingFrom;
    if ((long) had + 1 + add > maxLineBytes) {
      throw new SandboxException("the agent sent an event longer than " + maxLineBytes
          + " bytes; the stream was stopped to keep memory bounded", null);
    }
    if (joined == null) {
      joined = Arrays.copyOfRange(buf, pendingFrom, pendingFrom + Math.max(had + 1 + add, 256));
      joinedLength = had;
      pendingFrom = -1;
    } else if (joinedLength + 1 + add > joined.length) {
      joined = Arrays.copyOf(joined, Math.max(joined.length * 2, joinedLength + 1 + add));
    }
    joined[joinedLength++] = '\n';
    System.arraycopy(buf, valueFrom, joined, joinedLength, add);
    joinedLength += add;
  }

  /** Where the next line ends (its newline) in the buffer, reading as needed; -1 at a clean end of the stream. */
  private int lineEnd() throws IOException {
    for (;;) {
      int newline = newlineIndex(buf, scanned, limit);
      if (newline >= 0) {
        if (newline - start > maxLineBytes) { // a read can bring a long line and its end at once
          throw new SandboxException("the agent sent an event line longer than " + maxLineBytes
              + " bytes; the stream was stopped to keep memory bounded", null);
        }
        return newline;
      }
      scanned = limit;
      if (limit - start > maxLineBytes) {
        throw new SandboxException("the agent sent an event line longer than " + maxLineBytes
            + " bytes; the stream was stopped to keep memory bounded", null);
      }
      makeRoom();
      int n;
      if (watch != null) {
        watch.beforeRead();
        try {
          n = source.read(buf, limit, buf.length - limit);
        } finally {
          watch.afterRead();
        }
      } else {
        n = source.read(buf, limit, buf.length - limit);
      }
      if (n < 0) {
        if (limit == start) {
          return -1;
        }
        throw new EOFException("the event stream ended inside a line");
      }
      limit += n;
    }
  }

  /**
   * Makes room after {@link #limit}: moves what is still needed (a pending event's data and the
   * unread bytes) to the front, and grows the array only for a line that does not fit.
   */
  private void makeRoom() {
    if (pendingFrom >= 0 && start - pendingTo > 2) {
      // Lines were skipped after the pending data line (comments, other fields): they count
      // towards no limit, so keeping the buffer from the data on could grow it without bound.
      // Move the data out, as for a second data line; the next one is joined to it.
      int length = pendingTo - pendingFrom;
      joined = Arrays.copyOfRange(buf, pendingFrom, pendingFrom + Math.max(length, 256));
      joinedLength = length;
      pendingFrom = -1;
    }
    int keep = pendingFrom >= 0 ? Math.min(pendingFrom, start) : start;
    int used = limit - keep;
    if (keep == 0 && limit < buf.length) {
      return;
    }
    byte[] target = buf;
    if (used > buf.length / 2) {
      target = new byte[(int) Math.min((long) buf.length * 2, Integer.MAX_VALUE - 8)];
    } else if (used == 0 && buf.length > KEPT_BUFFER) {
      target = new byte[INITIAL_BUFFER]; // after a very long line, give the memory back (not after each
      // ordinary event of up to a few hundred KiB: that would allocate and copy a buffer per event)
    }
    System.arraycopy(buf, keep, target, 0, used);
    buf = target;
    start -= keep;
    limit -= keep;
    scanned -= keep;
    if (pendingFrom >= 0) {
      pendingFrom -= keep;
      pendingTo -= keep;
    }
  }

  /**
   * The first {@code '\n'} in {@code b[from, to)}, or -1. Eight bytes at a time: a byte of
   * {@code x ^ 0x0A..} is zero at a newline, and the lowest byte flagged by
   * {@code (v - 0x01..) & ~v & 0x80..} is the first zero byte of {@code v}.
   */
  static int newlineIndex(byte[] b, int from, int to) {
    int i = from;
    while (i + 8 <= to) {
      long v = (long) LONGS.get(b, i) ^ NEWLINES;
      long zero = (v - ONES) & ~v & HIGHS;
      if (zero != 0) {
        return i + (Long.numberOfTrailingZeros(zero) >>> 3);
      }
      i += 8;
    }
    return indexOf(b, i, to, (byte) '\n');
  }

  private static int indexOf(byte[] b, int from, int to, byte c) {
    for (int i = from; i < to; i++) {
      if (b[i] == c) {
        return i;
      }
    }
    return -1;
  }
}
