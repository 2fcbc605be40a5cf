package dev.sandboxsdk;

/**
 * A page of a background process's retained output (see {@link Sandbox#getProcessLogs}).
 * Offsets count bytes from the start of each stream; pass the {@code next} offsets back in a
 * {@link LogRange} to read on from where this page stopped.
 *
 * @param processId the process
 * @param stdout stdout from {@code stdoutOffset}
 * @param stderr stderr from {@code stderrOffset}
 * @param stdoutOffset offset of the first stdout byte returned; above the requested offset when
 *     those bytes had already left the agent's retained window
 * @param stdoutNextOffset where stdout continues
 * @param stderrOffset offset of the first stderr byte returned
 * @param stderrNextOffset where stderr continues
 * @param truncated whether requested bytes of either stream had already left the window
 * @param complete whether the process has finished and everything it wrote was returned:
 *     nothing more will come
 * @param status the process's status when the page was read
 */
public record ProcessLogs(
    String processId,
    String stdout,
    String stderr,
    long stdoutOffset,
    long stdoutNextOffset,
    long stderrOffset,
    long stderrNextOffset,
    boolean truncated,
    boolean complete,
    ProcessStatus status) {

  /** The range that continues after this page. */
  public LogRange next() {
    return LogRange.from(stdoutNextOffset, stderrNextOffset);
  }

  @Override
  public String toString() {
    return "ProcessLogs{" + processId + ", stdout=[" + stdoutOffset + ".." + stdoutNextOffset + "), stderr=["
        + stderrOffset + ".." + stderrNextOffset + ")" + (truncated ? ", truncated" : "")
        + (complete ? ", complete" : "") + ", status=" + status + "}";
  }
}
