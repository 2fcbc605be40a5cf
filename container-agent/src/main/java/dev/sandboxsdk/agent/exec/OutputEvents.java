package dev.sandboxsdk.agent.exec;

import dev.sandboxsdk.agent.process.ExecSpec.Encoding;
import dev.sandboxsdk.agent.text.ByteBuf;
import dev.sandboxsdk.agent.text.JsonText;
import dev.sandboxsdk.agent.text.Utf8Sanitizer;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.Base64;

/**
 * Turns the raw bytes of one output stream into {@code stdout}/{@code stderr} event JSON, tracking
 * byte offsets. In UTF-8 mode a code point split across reads is held back until it is complete,
 * so {@code offset} is where the event's first byte sits in the stream and {@code bytes} how many
 * raw bytes it covers (a resuming reader continues at {@code offset + bytes}). Not thread-safe.
 */
public final class OutputEvents {
  private final String type;
  private final String processId;
  private final Encoding encoding;
  private final Utf8Sanitizer sanitizer = new Utf8Sanitizer();
  private final ByteBuf text = new ByteBuf(8192);
  private long offset;

  /** Events of stream {@code type} ({@code stdout}, {@code stderr}), naming {@code processId} unless null, from {@code startOffset}. */
  public OutputEvents(String type, String processId, Encoding encoding, long startOffset) {
    this.type = type;
    this.processId = processId;
    this.encoding = encoding;
    this.offset = startOffset;
  }

  /** Offset of the next byte this stream expects (bytes held back for decoding count as consumed). */
  public long position() {
    return offset;
  }

  /** Forgets held-back bytes and continues at {@code newOffset} (after a gap in the window). */
  public void jumpTo(long newOffset) {
    sanitizer.reset();
    offset = newOffset;
  }

  /**
   * Builds the event for {@code bytes[off, off+len)} into {@code frame}.
   *
   * @return false if there is nothing to send yet (only part of a code point arrived)
   */
  public boolean encode(byte[] bytes, int off, int len, boolean endOfInput, ByteBuf frame) {
    frame.clear();
    long eventOffset;
    long covered;
    if (encoding == Encoding.BASE64) {
      if (len == 0) {
        return false;
      }
      eventOffset = offset;
      covered = len;
      ByteBuffer b64 = Base64.getEncoder().encode(ByteBuffer.wrap(bytes, off, len));
      head(frame);
      frame.append((byte) '"').append(b64.array(), b64.arrayOffset() + b64.position(), b64.remaining()).append((byte) '"');
    } else {
      int heldBefore = sanitizer.pending();
      eventOffset = offset - heldBefore;
      text.clear();
      sanitizer.sanitize(bytes, off, len, endOfInput, text);
      covered = (long) heldBefore + len - sanitizer.pending();
      if (covered == 0) {
        offset += len;
        return false;
      }
      head(frame);
      JsonText.appendQuoted(text.array(), 0, text.size(), frame);
    }
    offset += len;
    frame.ascii(",\"offset\":").number(eventOffset)
        .ascii(",\"bytes\":").number(covered)
        .ascii(",\"timestamp\":\"").ascii(Instant.now().toString()).ascii("\"}");
    return true;
  }

  /** Builds the event for bytes held back at the end of the stream, if any. */
  public boolean flush(ByteBuf frame) {
    return sanitizer.pending() > 0 && encode(new byte[0], 0, 0, true, frame);
  }

  private void head(ByteBuf frame) {
    frame.ascii("{\"type\":\"").ascii(type).ascii("\"");
    if (processId != null) {
      frame.ascii(",\"processId\":");
      JsonText.appendQuotedAscii(processId, frame);
    }
    frame.ascii(",\"data\":");
  }
}
