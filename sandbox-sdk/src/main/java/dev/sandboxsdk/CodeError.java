package dev.sandboxsdk;

import java.util.List;
import java.util.Objects;

/**
 * An error raised by code in a {@link CodeContext}: data in its {@link CodeResult}, never an
 * exception of the call.
 *
 * @param name the error's type, e.g. {@code ZeroDivisionError}, {@code TypeError}, or {@code
 *     KeyboardInterrupt} for an interrupted run; {@code TimeoutError} or {@code
 *     InterpreterRestarted} when the interpreter had to be restarted
 * @param message the error's message
 * @param traceback the traceback's lines (Python) or the stack's lines (JavaScript)
 */
public record CodeError(String name, String message, List<String> traceback) {
  public CodeError {
    Objects.requireNonNull(name, "name == null");
    Objects.requireNonNull(message, "message == null");
    traceback = List.copyOf(traceback);
  }
}
