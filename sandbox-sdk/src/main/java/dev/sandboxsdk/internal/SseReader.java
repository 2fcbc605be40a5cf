package dev.sandboxsdk.internal;

import dev.sandboxsdk.SandboxException;
import java.io.EOFException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import okio.BufferedSource;
import okio.ByteString;

/**
 * Reads server-sent events from a response body, one event per {@link #next()} call, and only
 * when called: nothing is read from the socket ahead of demand beyond okio's buffer.
 *
 * <p>Lines starting with {@code :} (the agent's keep-alives) are skipped; {@code event:},
 * {@code id:} and {@code retry:} fields are ignored (the agent puts the type in the JSON).
 * A line longer than {@code maxLineBytes}, or an event whose data lines add up to more, ends the
 * stream with an error instead of growing the buffer without bound.
 */
final class SseReader {
  private static final ByteString DATA_PREFIX = ByteString.encodeUtf8("data: ");
  private final BufferedSource source;
  private final long maxLineBytes;

  SseReader(BufferedSource source, long maxLineBytes) {
    this.source = source;
    this.maxLineBytes = maxLineBytes;
  }

  /**
   * The data of the next event, as UTF-8 bytes (the caller parses the JSON); null at a clean end
   * of the stream (no partial event pending).
   *
   * @throws EOFException if the stream ends inside an event
   * @throws SandboxException if an event is too long
   */
  byte[] next() throws IOException {
    byte[] single = null; // the usual event: one "data: " line, parsed from its bytes as they are
    StringBuilder data = null; // several data lines, joined with newlines as SSE says
    for (;;) {
      long newline = lineEnd();
      if (newline < 0) {
        if (single != null || data != null) {
          throw new EOFException("the event stream ended inside an event");
        }
        return null;
      }
      if (single == null && data == null && source.rangeEquals(0, DATA_PREFIX)) {
        source.skip(DATA_PREFIX.size());
        single = source.readByteArray(newline - DATA_PREFIX.size());
        source.skip(1);
        int n = single.length;
        if (n > 0 && single[n - 1] == '\r') {
          single = java.util.Arrays.copyOf(single, n - 1);
        }
        continue;
      }
      String line = readLine(newline);
      if (line.isEmpty()) {
        if (data != null) {
          return data.toString().getBytes(StandardCharsets.UTF_8);
        }
        if (single != null) {
          return single;
        }
        continue;
      }
      if (line.charAt(0) == ':') {
        continue; // comment: keep-alive
      }
      int colon = line.indexOf(':');
      String field = colon < 0 ? line : line.substring(0, colon);
      if (!field.equals("data")) {
        continue;
      }
      String value = colon < 0 ? "" : line.substring(colon + 1);
      if (value.startsWith(" ")) {
        value = value.substring(1);
      }
      if ((data != null ? data.length() : single != null ? single.length : 0) + value.length() + 1 > maxLineBytes) {
        throw new SandboxException("the agent sent an event longer than " + maxLineBytes
            + " bytes; the stream was stopped to keep memory bounded", null);
      }
      if (data == null) {
        data = new StringBuilder();
        if (single != null) {
          data.append(new String(single, StandardCharsets.UTF_8)).append('\n');
          single = null;
        }
        data.append(value);
      } else {
        data.append('\n').append(value);
      }
    }
  }

  /** Where the next line ends in the buffer; -1 at a clean end of the stream. */
  private long lineEnd() throws IOException {
    long newline = source.indexOf((byte) '\n', 0, maxLineBytes + 1);
    if (newline == -1) {
      long buffered = source.getBuffer().size();
      if (buffered > maxLineBytes) {
        throw new SandboxException("the agent sent an event line longer than " + maxLineBytes
            + " bytes; the stream was stopped to keep memory bounded", null);
      }
      if (buffered == 0) {
        return -1;
      }
      throw new EOFException("the event stream ended inside a line");
    }
    return newline;
  }

  private String readLine(long newline) throws IOException {
    String line = source.readUtf8(newline);
    source.skip(1);
    if (line.endsWith("\r")) {
      line = line.substring(0, line.length() - 1);
    }
    return line;
  }
}
