package dev.sandboxsdk;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * How a run in a {@link CodeContext} went. An error in the code is {@link #error()}, not an
 * exception.
 *
 * @param stdout what the code printed to standard output (bounded: see {@link #truncated()})
 * @param stderr what it printed to standard error, with what its subprocesses wrote to either
 * @param outputs rich outputs in order: the last expression's value ({@link CodeOutput#isMainResult()})
 *     and the figures the code left open
 * @param error the error the code raised, or null
 * @param executionCount how many runs the context has had, this one included
 * @param duration how long the run took in the sandbox
 * @param interrupted whether the run was interrupted ({@link CodeContext#interrupt()}, a timeout or a disconnect)
 * @param timedOut whether the run's timeout passed
 * @param restarted whether the interpreter was restarted during or before the run, losing the context's state
 * @param truncated whether stdout and stderr went over the run's output limit (the text then ends with a marker)
 */
public record CodeResult(String stdout, String stderr, List<CodeOutput> outputs, CodeError error,
    int executionCount, Duration duration, boolean interrupted, boolean timedOut, boolean restarted,
    boolean truncated) {
  public CodeResult {
    Objects.requireNonNull(stdout, "stdout == null");
    Objects.requireNonNull(stderr, "stderr == null");
    outputs = List.copyOf(outputs);
    Objects.requireNonNull(duration, "duration == null");
  }

  /** The value of the code's last expression, if it had one (and it was not None/undefined). */
  public Optional<CodeOutput> value() {
    return outputs.stream().filter(CodeOutput::isMainResult).findFirst();
  }

  /** Whether the code ran to its end without an error. */
  public boolean isSuccess() {
    return error == null;
  }
}
