package dev.sandboxsdk;

/**
 * Which part of a process's retained output {@link Sandbox#getProcessLogs(String, LogRange)}
 * returns, from a byte offset per stream, at most {@code maxBytes} per stream; also where
 * {@link Sandbox#streamProcessLogs(String, LogRange)} starts (there {@code maxBytes} does not apply).
 *
 * @param stdoutFrom stdout offset to start at (0 = the beginning)
 * @param stderrFrom stderr offset to start at
 * @param maxBytes most raw bytes returned per stream; 0 means no limit
 */
public record LogRange(long stdoutFrom, long stderrFrom, int maxBytes) {

  private static final LogRange ALL = new LogRange(0, 0, 0);

  /** Validates. */
  public LogRange {
    if (stdoutFrom < 0 || stderrFrom < 0) {
      throw new IllegalArgumentException("offsets must be >= 0: " + stdoutFrom + ", " + stderrFrom);
    }
    if (maxBytes < 0) {
      throw new IllegalArgumentException("maxBytes < 0: " + maxBytes);
    }
  }

  /** Everything retained. */
  public static LogRange all() {
    return ALL;
  }

  /** From these offsets on, without a size limit. */
  public static LogRange from(long stdoutFrom, long stderrFrom) {
    return new LogRange(stdoutFrom, stderrFrom, 0);
  }

  /** The same range with at most {@code maxBytes} per stream. */
  public LogRange withMaxBytes(int maxBytes) {
    return new LogRange(stdoutFrom, stderrFrom, maxBytes);
  }
}
