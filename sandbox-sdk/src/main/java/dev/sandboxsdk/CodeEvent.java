package dev.sandboxsdk;

import java.time.Duration;
import java.util.Objects;

/**
 * An event of {@link CodeContext#runStream}: any number of {@link Stdout}, {@link Stderr}, {@link
 * Result} and at most one {@link Error}, then one {@link Complete}.
 *
 * <p>This interface is deliberately not sealed: new event types may be added in later versions,
 * so a {@code switch} over events needs a default branch that ignores what it does not know.
 */
public interface CodeEvent {

  /** Text the code printed to standard output. */
  record Stdout(String text) implements CodeEvent {
    public Stdout {
      Objects.requireNonNull(text, "text == null");
    }
  }

  /** Text the code (or a subprocess) wrote to standard error or to the file descriptors directly. */
  record Stderr(String text) implements CodeEvent {
    public Stderr {
      Objects.requireNonNull(text, "text == null");
    }
  }

  /** A rich output: the last expression's value or a figure. */
  record Result(CodeOutput output) implements CodeEvent {
    public Result {
      Objects.requireNonNull(output, "output == null");
    }
  }

  /** The error the code raised; the run still ends with {@link Complete}. */
  record Error(CodeError error) implements CodeEvent {
    public Error {
      Objects.requireNonNull(error, "error == null");
    }
  }

  /** The run ended; the fields are those of {@link CodeResult}. */
  record Complete(int executionCount, Duration duration, boolean interrupted, boolean timedOut, boolean restarted,
      boolean truncated) implements CodeEvent {
    public Complete {
      Objects.requireNonNull(duration, "duration == null");
    }
  }
}
