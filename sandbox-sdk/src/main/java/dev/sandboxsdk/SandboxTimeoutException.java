package dev.sandboxsdk;

/**
 * A client-side deadline passed: a call took longer than allowed, a stream went silent for
 * longer than the agent's keep-alive interval allows, or a wait ({@link SandboxProcess#waitForExit},
 * {@link SandboxProcess#waitForLog}) ran out of time. A command's own timeout is not an
 * exception: it is reported as {@link ExecResult#timedOut()}.
 */
public class SandboxTimeoutException extends SandboxException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception. */
  public SandboxTimeoutException(String message, Throwable cause) {
    super(message, cause);
  }
}
