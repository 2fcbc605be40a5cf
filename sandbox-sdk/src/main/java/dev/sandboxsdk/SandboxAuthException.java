package dev.sandboxsdk;

import java.util.Map;

/** The agent refused the bearer token (HTTP 401): it was missing or wrong. */
public class SandboxAuthException extends SandboxException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception; see {@link SandboxException#SandboxException(String, Throwable, String, int, Map)}. */
  public SandboxAuthException(String message, Throwable cause, String code, int httpStatus, Map<String, Object> context) {
    super(message, cause, code, httpStatus, context);
  }
}
