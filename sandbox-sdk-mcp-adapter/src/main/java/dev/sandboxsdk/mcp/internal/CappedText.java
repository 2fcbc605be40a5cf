package dev.sandboxsdk.mcp.internal;

/**
 * One output stream collected for a model: keeps the first {@code cap} bytes from the requested
 * offset, counts the rest, and knows the byte offset where the kept text ends, so a caller can
 * read on from there. Text that arrives from before the requested offset is context only: it
 * shows whether a secret straddles the start. Confined to one thread at a time.
 *
 * <p>Byte counts come from the agent's offsets. Where a chunk is cut, its kept part is measured
 * in UTF-8 with each U+FFFD counted as one byte: the agent turns each invalid sequence (1–3
 * bytes) into one U+FFFD, so the offset is then a lower bound and reading on from it repeats a
 * little rather than skipping anything.
 */
public final class CappedText {
  private final int cap;
  private final Redactor redactor;
  private final long requested;
  private final StringBuilder before = new StringBuilder(); // context just before the requested offset
  private final StringBuilder kept = new StringBuilder();
  private final StringBuilder lookahead = new StringBuilder(); // past the cap, to see a straddling secret
  private long start;
  private long keptBytes;
  private long keptEnd;
  private long end;
  private boolean capped;
  private boolean stopped;
  private boolean lost;
  private boolean ended;

  /** Collects from byte {@code from}; appended text before it is context only. */
  public CappedText(int cap, Redactor redactor, long from) {
    this.cap = cap;
    this.redactor = redactor;
    this.requested = from;
    this.start = from;
    this.keptEnd = from;
    this.end = from;
  }

  /**
   * Takes a whole stream at once: {@code text} is what was kept of it from byte 0, at most
   * {@code keptLimit} bytes, of {@code total} bytes written (-1: unknown, then the text is all).
   */
  public void appendWhole(String text, long keptLimit, long total) {
    long kept = total < 0 ? measure(text) : Math.min(total, keptLimit);
    append(text, 0, kept);
    end = Math.max(end, Math.max(total, kept));
  }

  /** Appends {@code text}, which the process wrote at byte {@code offset} ({@code bytes} long). */
  public void append(String text, long offset, long bytes) {
    end = Math.max(end, offset + bytes);
    if (offset < requested) {
      int k = prefixWithin(text, requested - offset);
      addBefore(text.substring(0, k));
      if (k == text.length()) {
        return;
      }
      text = text.substring(k);
      bytes = Math.max(0, bytes - (requested - offset));
      offset = requested;
    }
    if (capped || stopped) {
      addLookahead(text);
      return;
    }
    if (offset > keptEnd) { // bytes between left the sandbox's window
      lost = true;
      if (kept.length() == 0) { // nothing kept yet: start after the gap
        start = offset;
        keptEnd = offset;
        before.setLength(0);
      } else { // the kept text must stay contiguous: stop here, the caller reads on from keptEnd
        stopped = true;
        addLookahead(text);
        return;
      }
    }
    long room = cap - keptBytes;
    int take = prefixWithin(text, room);
    kept.append(text, 0, take);
    long takenBytes = take == text.length() ? bytes : Math.min(bytes, measure(text.substring(0, take)));
    keptBytes += takenBytes;
    keptEnd = offset + takenBytes;
    if (take < text.length()) {
      capped = true;
      addLookahead(text.substring(take));
    }
  }

  /** Marks the stream as finished: nothing can follow what was appended. */
  public void ended() {
    ended = true;
  }

  /** Whether anything written from the requested offset on was left out of {@link #text()}. */
  public boolean truncated() {
    return capped || stopped || lost || keptEnd < end;
  }

  /** Whether the cap cut the text (rather than output lost from the window). */
  public boolean capped() {
    return capped;
  }

  /** Whether output between the requested offset and what was kept had left the sandbox's window. */
  public boolean lost() {
    return lost;
  }

  /** Where the kept text starts: the requested offset, or later if output there was lost. */
  public long start() {
    return start;
  }

  /** The kept text, redacted: never starting in the tail or ending in the start of a secret. */
  public String text() {
    return view().text;
  }

  /** The byte offset just past {@link #text()}: where to read on. */
  public long nextOffset() {
    return view().next;
  }

  private record View(String text, long next) {
  }

  private View view() {
    if (redactor.isEmpty()) { // nothing to cut back or skip: the kept text as is, what the general case gives then
      return new View(kept.toString(), kept.length() == 0 ? Math.max(keptEnd, start) : keptEnd);
    }
    String ctx = before.toString();
    String all = ctx + kept + lookahead;
    int from = ctx.length();
    int to = from + kept.length();
    // While the stream goes on, text not seen yet may complete a secret that starts before the cut.
    int safe = redactor.safeCut(all, to, !ended);
    Redactor.Straddle lead = redactor.straddling(all, from);
    String marker = "";
    if (lead != null) {
      marker = lead.marker();
      from = lead.end();
    }
    if (from >= safe) { // the kept text is (the rest of) one secret
      long next = from >= to ? keptEnd : keptEnd - measure(all.substring(from, to));
      return new View(marker, Math.max(next, start));
    }
    long next = safe == to ? keptEnd : keptEnd - measure(all.substring(safe, to));
    return new View(marker + redactor.redact(all.substring(from, safe)), next);
  }

  /** Bytes written to this stream from the requested offset, kept or not. */
  public long totalBytes() {
    return Math.max(0, end - requested);
  }

  /** Whether the kept text has reached the cap (or stopped), so more output would only be counted. */
  public boolean full() {
    return capped || stopped || keptBytes >= cap;
  }

  private void addBefore(String text) {
    before.append(text);
    int excess = before.length() - redactor.maxLength();
    if (excess > 0) {
      before.delete(0, excess);
    }
  }

  private void addLookahead(String text) {
    int room = redactor.maxLength() - lookahead.length();
    if (room > 0) {
      lookahead.append(text, 0, Math.min(room, text.length()));
    }
  }

  /** The longest prefix of {@code s}, in chars, whose {@link #measure} fits in {@code room} bytes. */
  static int prefixWithin(String s, long room) {
    long used = 0;
    int i = 0;
    while (i < s.length()) {
      int cp = s.codePointAt(i);
      int len = bytesOf(cp);
      if (used + len > room) {
        break;
      }
      used += len;
      i += Character.charCount(cp);
    }
    return i;
  }

  /** UTF-8 length, counting U+FFFD as the single invalid byte it usually stands for. */
  static long measure(String s) {
    long n = 0;
    for (int i = 0; i < s.length(); ) {
      int cp = s.codePointAt(i);
      n += bytesOf(cp);
      i += Character.charCount(cp);
    }
    return n;
  }

  private static int bytesOf(int cp) {
    return cp == 0xFFFD ? 1 : cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
  }
}
