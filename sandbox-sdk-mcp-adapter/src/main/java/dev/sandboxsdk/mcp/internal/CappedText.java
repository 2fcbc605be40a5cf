package dev.sandboxsdk.mcp.internal;

import java.nio.charset.StandardCharsets;

/**
 * One output stream collected for a model: keeps the first {@code cap} UTF-8 bytes from where
 * collection started, counts the rest, and knows the byte offset where the kept text ends, so a
 * caller can read on from there. Confined to one thread at a time.
 */
public final class CappedText {
  private final int cap;
  private final Redactor redactor;
  private final StringBuilder kept = new StringBuilder();
  private final StringBuilder lookahead = new StringBuilder(); // past the cap, to see a straddling secret
  private final long startOffset;
  private long keptBytes;
  private long keptEnd;
  private long end;
  private boolean cut;
  private boolean ended;

  public CappedText(int cap, Redactor redactor, long startOffset) {
    this.cap = cap;
    this.redactor = redactor;
    this.startOffset = startOffset;
    this.keptEnd = startOffset;
    this.end = startOffset;
  }

  /** Appends {@code text}, which the process wrote at byte {@code offset}. */
  public void append(String text, long offset, long bytes) {
    end = Math.max(end, offset + bytes);
    if (cut) {
      addLookahead(text);
      return;
    }
    if (offset > keptEnd) { // bytes between were dropped (left the sandbox's window)
      cut = true;
      addLookahead(text);
      return;
    }
    long room = cap - keptBytes;
    int take = prefixWithin(text, room);
    kept.append(text, 0, take);
    long takenBytes = take == text.length() ? bytes : utf8Length(text.substring(0, take));
    keptBytes += takenBytes;
    keptEnd = offset + takenBytes;
    if (take < text.length()) {
      cut = true;
      addLookahead(text.substring(take));
    }
  }

  /** Marks the stream as finished: nothing can follow what was appended. */
  public void ended() {
    ended = true;
  }

  /** Whether anything written was left out of {@link #text()}. */
  public boolean truncated() {
    return cut || keptEnd < end;
  }

  /** The kept text, redacted, never ending in part of a secret. */
  public String text() {
    String all = kept.toString() + lookahead;
    return redactor.redact(all.substring(0, safeEnd(all)));
  }

  /** The byte offset just past {@link #text()}: where to read on. */
  public long nextOffset() {
    String all = kept.toString() + lookahead;
    int safe = safeEnd(all);
    return safe == kept.length() ? keptEnd : keptEnd - utf8Length(kept.substring(safe));
  }

  /** Bytes written to this stream from the start offset, kept or not. */
  public long totalBytes() {
    return end - startOffset;
  }

  /** The byte offset just past everything seen. */
  public long end() {
    return end;
  }

  /** Whether the kept text has reached the cap, so more output would only be counted. */
  public boolean full() {
    return cut || keptBytes >= cap;
  }

  private int safeEnd(String all) {
    // While the stream goes on, text not seen yet may complete a secret that starts before the cut.
    return redactor.safeCut(all, kept.length(), !ended);
  }

  private void addLookahead(String text) {
    int room = redactor.maxLength() - lookahead.length();
    if (room > 0) {
      lookahead.append(text, 0, Math.min(room, text.length()));
    }
  }

  /** The longest prefix of {@code s}, in chars, whose UTF-8 form fits in {@code room} bytes. */
  private static int prefixWithin(String s, long room) {
    long used = 0;
    int i = 0;
    while (i < s.length()) {
      int cp = s.codePointAt(i);
      int len = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
      if (used + len > room) {
        break;
      }
      used += len;
      i += Character.charCount(cp);
    }
    return i;
  }

  static long utf8Length(String s) {
    return s.getBytes(StandardCharsets.UTF_8).length;
  }
}
