package dev.sandboxsdk;

import java.util.Map;

/**
 * Something the request named does not exist: a process ({@link ProcessNotFoundException}), a file
 * ({@link SandboxFileNotFoundException}), a program ({@code COMMAND_NOT_FOUND}) or a route.
 */
public class SandboxNotFoundException extends SandboxException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception; see {@link SandboxException#SandboxException(String, Throwable, String, int, Map)}. */
  public SandboxNotFoundException(String message, Throwable cause, String code, int httpStatus, Map<String, Object> context) {
    super(message, cause, code, httpStatus, context);
  }
}
