package dev.sandboxsdk;

import java.util.Map;

/** A process ended before what was waited for happened (e.g. {@link SandboxProcess#waitForLog}). */
public class ProcessExitedException extends SandboxException {
  private static final long serialVersionUID = 1L;

  private final transient ProcessInfo info;

  /** Creates the exception. */
  public ProcessExitedException(String message, ProcessInfo info) {
    super(message, null, "PROCESS_EXITED", 0, Map.of());
    this.info = info;
  }

  /** The process as it was when it ended; null if it could not be read. */
  public ProcessInfo info() {
    return info;
  }
}
