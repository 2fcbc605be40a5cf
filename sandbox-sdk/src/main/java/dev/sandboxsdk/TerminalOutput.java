package dev.sandboxsdk;

import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * A chunk of a terminal's output as the program wrote it: raw bytes, so escape sequences and
 * UTF-8 characters split between two chunks arrive intact (decode with a
 * {@link java.nio.charset.CharsetDecoder} that keeps state between chunks, or hand the bytes to
 * a terminal emulator as they are).
 *
 * <p>A terminal's output is one stream: what the program writes to stdout and stderr, and what
 * the terminal echoes of the input. If the next chunk's {@code offset} is beyond this one's
 * {@link #nextOffset()}, the bytes in between had left the agent's retained window.
 *
 * @param offset the byte offset of {@code bytes[0]} in the terminal's output
 * @param bytes the bytes; not copied, so do not change them
 */
public record TerminalOutput(long offset, byte[] bytes) {
  /** Checks the arguments. */
  public TerminalOutput {
    Objects.requireNonNull(bytes, "bytes == null");
    if (offset < 0) {
      throw new IllegalArgumentException("offset < 0: " + offset);
    }
  }

  /** The offset right after this chunk: where to resume with {@link Terminal#output(long)}. */
  public long nextOffset() {
    return offset + bytes.length;
  }

  /** The bytes as UTF-8 text; a character split at either end of the chunk becomes U+FFFD. */
  public String text() {
    return new String(bytes, StandardCharsets.UTF_8);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof TerminalOutput && ((TerminalOutput) o).offset == offset
        && java.util.Arrays.equals(((TerminalOutput) o).bytes, bytes);
  }

  @Override
  public int hashCode() {
    return Long.hashCode(offset) * 31 + java.util.Arrays.hashCode(bytes);
  }

  /** Output may be secret: only its position and length are printed. */
  @Override
  public String toString() {
    return "TerminalOutput{offset=" + offset + ", bytes=" + bytes.length + "}";
  }
}
