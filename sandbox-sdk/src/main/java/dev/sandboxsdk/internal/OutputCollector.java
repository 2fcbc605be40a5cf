package dev.sandboxsdk.internal;

/**
 * Collects the output of one stream of an exec with an output listener up to a byte limit; counts
 * the agent's raw byte numbers. Not thread-safe: one reader adds to it.
 */
final class OutputCollector {
  private final StringBuilder text = new StringBuilder();
  private final long max;
  private long bytes;
  private long written; // everything the command wrote, by the agent's count
  private boolean truncated;

  OutputCollector(long max) {
    this.max = max;
  }

  void add(String chunk, long agentBytes) {
    written += Math.max(agentBytes, 0);
    if (truncated) {
      return;
    }
    // Honest text never has more chars than the raw bytes it came from; an agent that says
    // otherwise is held to the text it really sent.
    long chunkBytes = Math.max(agentBytes, chunk.length());
    if (bytes + chunkBytes <= max) {
      text.append(chunk);
      bytes += chunkBytes;
      return;
    }
    // Keep the code points that fit, then stop collecting.
    long room = max - bytes;
    int i = 0;
    while (i < chunk.length()) {
      int cp = chunk.codePointAt(i);
      int len = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
      if (len > room) {
        break;
      }
      room -= len;
      i += Character.charCount(cp);
    }
    text.append(chunk, 0, i);
    truncated = true;
  }

  String text() {
    return text.toString();
  }

  long written() {
    return written;
  }

  boolean truncated() {
    return truncated;
  }
}
