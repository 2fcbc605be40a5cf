package dev.sandboxsdk;

import java.time.Duration;
import java.util.Objects;

/**
 * An event of {@link Sandbox#execStream}: one {@link Start}, any number of {@link Stdout} and
 * {@link Stderr}, then one {@link Complete}.
 *
 * <p>This interface is deliberately not sealed: new event types may be added in later versions,
 * so a {@code switch} over events needs a default branch that ignores what it does not know.
 */
public interface ExecEvent {

  /** The command was spawned. */
  record Start(String command, long pid) implements ExecEvent {
    public Start {
      Objects.requireNonNull(command, "command == null");
    }
  }

  /**
   * A chunk of standard output.
   *
   * @param text the text; never splits a UTF-8 code point (invalid bytes became U+FFFD)
   * @param offset bytes of stdout before this chunk
   * @param bytes raw bytes of stdout this chunk covers (not necessarily {@code text}'s UTF-8 length)
   */
  record Stdout(String text, long offset, long bytes) implements ExecEvent {
    public Stdout {
      Objects.requireNonNull(text, "text == null");
    }
  }

  /**
   * A chunk of standard error; like {@link Stdout}.
   *
   * @param text the text
   * @param offset bytes of stderr before this chunk
   * @param bytes raw bytes of stderr this chunk covers
   */
  record Stderr(String text, long offset, long bytes) implements ExecEvent {
    public Stderr {
      Objects.requireNonNull(text, "text == null");
    }
  }

  /**
   * The command finished and all its output was delivered. Always the last event.
   *
   * @param exitCode exit status; 128+N for signal N; 124 after a timeout
   * @param timedOut whether the timeout expired
   * @param signal the signal the agent killed it with, if it died of it; otherwise null
   * @param duration from spawn until exit and drained output
   */
  record Complete(int exitCode, boolean timedOut, Signal signal, Duration duration) implements ExecEvent {
    public Complete {
      Objects.requireNonNull(duration, "duration == null");
    }

    /** Whether the command exited with status 0. */
    public boolean isSuccess() {
      return exitCode == 0;
    }
  }
}
