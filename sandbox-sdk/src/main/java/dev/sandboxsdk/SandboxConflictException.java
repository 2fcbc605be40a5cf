package dev.sandboxsdk;

import java.util.Map;

/**
 * The request conflicts with the sandbox's current state (HTTP 409): e.g. a restore while
 * processes run ({@code PROCESSES_RUNNING}), another checkpoint operation in progress
 * ({@code CHECKPOINT_BUSY}), a process id or exposed port that is taken. {@link #code()} says
 * which; the same request may succeed once the state changes.
 */
public class SandboxConflictException extends SandboxInvalidRequestException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception; see {@link SandboxException#SandboxException(String, Throwable, String, int, Map)}. */
  public SandboxConflictException(String message, Throwable cause, String code, int httpStatus, Map<String, Object> context) {
    super(message, cause, code, httpStatus, context);
  }
}
