package dev.sandboxsdk.agent;

/** The error codes of wire protocol v1, each with the HTTP status it travels with. */
public enum ErrorCode {
  VALIDATION_FAILED(400),
  INVALID_COMMAND(400),
  UNAUTHORIZED(401),
  PROCESS_NOT_FOUND(404),
  COMMAND_NOT_FOUND(404),
  NOT_FOUND(404),
  METHOD_NOT_ALLOWED(405),
  PROCESS_ALREADY_EXISTS(409),
  PROCESS_NOT_RUNNING(409),
  PAYLOAD_TOO_LARGE(413),
  TOO_MANY_PROCESSES(429),
  INTERNAL_ERROR(500),
  /** The agent's output budget is in use; retry later (docs/protocol.md, "Memory"). */
  OUTPUT_BUDGET_EXHAUSTED(503),
  SHUTTING_DOWN(503);

  private final int httpStatus;

  ErrorCode(int httpStatus) {
    this.httpStatus = httpStatus;
  }

  public int httpStatus() {
    return httpStatus;
  }
}
