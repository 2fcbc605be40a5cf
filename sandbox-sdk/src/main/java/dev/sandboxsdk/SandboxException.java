package dev.sandboxsdk;

import java.util.Map;

/**
 * The root of every exception the SDK throws for a failed operation. Unchecked.
 *
 * <p>Subclasses say what a caller can do next:
 * <ul>
 *   <li>{@link SandboxConnectionException}: the agent could not be reached or the connection
 *       broke (usually worth a retry);
 *   <li>{@link SandboxTimeoutException}: a client-side deadline passed;
 *   <li>{@link SandboxAuthException}: the token was missing or wrong;
 *   <li>{@link SandboxNotFoundException} (and {@link ProcessNotFoundException},
 *       {@link SandboxFileNotFoundException}): no such process, file, program or route;
 *   <li>{@link SandboxInvalidRequestException}: the agent refused the request as invalid (and
 *       {@link SandboxPermissionException}: as not allowed, such as a path outside the workspace);
 *   <li>{@link SandboxServerException}: the agent failed, is overloaded or shutting down;
 *   <li>{@link CommandFailedException}: only from {@link ExecResult#requireSuccess()};
 *   <li>{@link ProcessExitedException}: a process ended before what was waited for happened.
 * </ul>
 *
 * <p>A non-zero exit code is not an exception: it is in {@link ExecResult#exitCode()}.
 */
public class SandboxException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final String code;
  private final int httpStatus;
  private final transient Map<String, Object> context;

  /** An exception without an agent error code. */
  public SandboxException(String message, Throwable cause) {
    this(message, cause, null, 0, Map.of());
  }

  /**
   * An exception, with the agent's error details when there are any.
   *
   * @param message what went wrong and what to do about it
   * @param cause the underlying exception, or null
   * @param code the agent's error code (e.g. {@code "PROCESS_NOT_FOUND"}), or null
   * @param httpStatus the HTTP status of the agent's answer, or 0
   * @param context the agent's error context (e.g. the offending field), possibly empty
   */
  public SandboxException(String message, Throwable cause, String code, int httpStatus, Map<String, Object> context) {
    super(message, cause);
    this.code = code;
    this.httpStatus = httpStatus;
    this.context = context == null ? Map.of() : Map.copyOf(context);
  }

  /** The agent's error code, such as {@code "VALIDATION_FAILED"}; null if the agent did not answer. */
  public String code() {
    return code;
  }

  /** The HTTP status of the agent's answer; 0 if there was none. */
  public int httpStatus() {
    return httpStatus;
  }

  /** Details the agent gave, such as {@code field} or {@code processId}; empty if none. */
  public Map<String, Object> context() {
    return context == null ? Map.of() : context;
  }
}
