package dev.sandboxsdk;

import java.util.Map;

/** No process with the given id (it never existed, or its record was cleaned up). */
public class ProcessNotFoundException extends SandboxNotFoundException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception; see {@link SandboxException#SandboxException(String, Throwable, String, int, Map)}. */
  public ProcessNotFoundException(String message, Throwable cause, String code, int httpStatus, Map<String, Object> context) {
    super(message, cause, code, httpStatus, context);
  }
}
