package dev.sandboxsdk;

import java.util.Map;

/** The agent failed (500), is at its process limit (429) or is shutting down (503); often worth a retry later. */
public class SandboxServerException extends SandboxException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception; see {@link SandboxException#SandboxException(String, Throwable, String, int, Map)}. */
  public SandboxServerException(String message, Throwable cause, String code, int httpStatus, Map<String, Object> context) {
    super(message, cause, code, httpStatus, context);
  }
}
