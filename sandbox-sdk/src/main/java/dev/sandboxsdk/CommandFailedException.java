package dev.sandboxsdk;

import java.util.Map;

/** Thrown by {@link ExecResult#requireSuccess()} when a command did not exit with 0. */
public class CommandFailedException extends SandboxException {
  private static final long serialVersionUID = 1L;

  private final transient ExecResult result;

  /** Creates the exception for a result with a non-zero exit code. */
  public CommandFailedException(ExecResult result) {
    super(message(result), null, "COMMAND_FAILED", 0, Map.of());
    this.result = result;
  }

  private static String message(ExecResult r) {
    String why = r.timedOut() ? "timed out" : "exited with " + r.exitCode();
    String err = r.stderr().strip();
    if (err.length() > 500) {
      err = "..." + err.substring(err.length() - 500);
    }
    return "command " + r.command() + " " + why + (err.isEmpty() ? "" : ": " + err);
  }

  /** The result of the failed command, with its output. */
  public ExecResult result() {
    return result;
  }
}
