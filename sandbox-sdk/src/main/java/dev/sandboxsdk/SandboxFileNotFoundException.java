package dev.sandboxsdk;

import java.util.Map;

/**
 * No file or directory at the given path in the sandbox (agent code {@code FILE_NOT_FOUND}), or
 * the parent directory of a destination does not exist. {@link #context()} has the {@code path}
 * the agent was given.
 */
public class SandboxFileNotFoundException extends SandboxNotFoundException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception; see {@link SandboxException#SandboxException(String, Throwable, String, int, Map)}. */
  public SandboxFileNotFoundException(String message, Throwable cause, String code, int httpStatus,
      Map<String, Object> context) {
    super(message, cause, code, httpStatus, context);
  }
}
