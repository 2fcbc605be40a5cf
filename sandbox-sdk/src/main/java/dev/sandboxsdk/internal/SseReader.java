package dev.sandboxsdk.internal;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sandboxsdk.SandboxException;
import java.io.EOFException;
import java.io.IOException;
import okio.BufferedSource;

/**
 * Reads server-sent events from a response body, one event per {@link #next()} call, and only
 * when called: nothing is read from the socket ahead of demand beyond okio's buffer.
 *
 * <p>Lines starting with {@code :} (the agent's keep-alives) are skipped; {@code event:},
 * {@code id:} and {@code retry:} fields are ignored (the agent puts the type in the JSON).
 * A line longer than {@code maxLineBytes} ends the stream with an error instead of growing the
 * buffer without bound.
 */
final class SseReader {
  private final BufferedSource source;
  private final long maxLineBytes;

  SseReader(BufferedSource source, long maxLineBytes) {
    this.source = source;
    this.maxLineBytes = maxLineBytes;
  }

  /**
   * The data of the next event, parsed as JSON; null at a clean end of the stream (no partial
   * event pending).
   *
   * @throws EOFException if the stream ends inside an event
   * @throws SandboxException if an event is too long or its data is not a JSON object
   */
  JsonNode next() throws IOException {
    StringBuilder data = null;
    for (;;) {
      String line = readLine();
      if (line == null) {
        if (data != null) {
          throw new EOFException("the event stream ended inside an event");
        }
        return null;
      }
      if (line.isEmpty()) {
        if (data != null) {
          return Wire.parse(data.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8), "event");
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
      if (data == null) {
        data = new StringBuilder(value);
      } else {
        data.append('\n').append(value);
      }
    }
  }

  private String readLine() throws IOException {
    long newline = source.indexOf((byte) '\n', 0, maxLineBytes + 1);
    if (newline == -1) {
      long buffered = source.getBuffer().size();
      if (buffered > maxLineBytes) {
        throw new SandboxException("the agent sent an event line longer than " + maxLineBytes
            + " bytes; the stream was stopped to keep memory bounded", null);
      }
      if (buffered == 0) {
        return null;
      }
      throw new EOFException("the event stream ended inside a line");
    }
    String line = source.readUtf8(newline);
    source.skip(1);
    if (line.endsWith("\r")) {
      line = line.substring(0, line.length() - 1);
    }
    return line;
  }
}
