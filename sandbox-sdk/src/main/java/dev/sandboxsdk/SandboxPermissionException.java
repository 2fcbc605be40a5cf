package dev.sandboxsdk;

import java.util.Map;

/**
 * The agent refused an operation as not allowed (HTTP 403): a path outside the workspace (also
 * through a symbolic link), a file the file system does not let the sandbox user touch
 * ({@code PERMISSION_DENIED}), or a read-only file system ({@code READ_ONLY}). A kind of
 * {@link SandboxInvalidRequestException}: retrying the same request does not help.
 */
public class SandboxPermissionException extends SandboxInvalidRequestException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception; see {@link SandboxException#SandboxException(String, Throwable, String, int, Map)}. */
  public SandboxPermissionException(String message, Throwable cause, String code, int httpStatus,
      Map<String, Object> context) {
    super(message, cause, code, httpStatus, context);
  }
}
