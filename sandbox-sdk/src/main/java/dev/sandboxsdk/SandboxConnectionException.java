package dev.sandboxsdk;

/**
 * The agent could not be reached, or the connection broke before the answer was complete
 * (including a stream that ended without its final event). Usually worth a retry.
 */
public class SandboxConnectionException extends SandboxException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception. */
  public SandboxConnectionException(String message, Throwable cause) {
    super(message, cause);
  }
}
