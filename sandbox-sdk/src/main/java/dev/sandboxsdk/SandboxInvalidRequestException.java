package dev.sandboxsdk;

import java.util.Map;

/**
 * The agent refused the request as invalid (HTTP 400, 405, 409 or 413; 403 as the subclass
 * {@link SandboxPermissionException}); {@link #context()} often names the field.
 */
public class SandboxInvalidRequestException extends SandboxException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception; see {@link SandboxException#SandboxException(String, Throwable, String, int, Map)}. */
  public SandboxInvalidRequestException(String message, Throwable cause, String code, int httpStatus, Map<String, Object> context) {
    super(message, cause, code, httpStatus, context);
  }
}
