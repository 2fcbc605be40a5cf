package dev.sandboxsdk;

import java.time.Duration;
import java.util.Objects;

/**
 * The outcome of a finished command. A non-zero exit code is data, not an exception; call
 * {@link #requireSuccess()} to opt into an exception. The constructor is public so tests can
 * fake a {@link Sandbox}.
 *
 * @param exitCode the exit status; 128+N if the command died of signal N; 124 after a timeout
 * @param stdout the captured standard output (at most {@code maxOutputBytes} of it)
 * @param stderr the captured standard error
 * @param command the command as the agent ran it (argv commands are rendered with shell quoting)
 * @param duration from spawn until exit and drained output
 * @param timedOut whether the timeout expired and the agent killed the command
 * @param truncated whether either stream exceeded {@code maxOutputBytes} and was cut
 * @param signal the signal the agent killed the command with, when it died of it; otherwise null
 * @param pid the process id (and process group id) the command had in the sandbox
 * @param stdoutBytes how many bytes the command wrote to stdout in all, kept or not (so with
 *     {@code truncated}, how much {@code maxOutputBytes} left out); -1 if the agent did not say
 * @param stderrBytes the same for stderr
 */
public record ExecResult(
    int exitCode,
    String stdout,
    String stderr,
    String command,
    Duration duration,
    boolean timedOut,
    boolean truncated,
    Signal signal,
    long pid,
    long stdoutBytes,
    long stderrBytes) {

  /** Checks that the required components are present. */
  public ExecResult {
    Objects.requireNonNull(stdout, "stdout == null");
    Objects.requireNonNull(stderr, "stderr == null");
    Objects.requireNonNull(command, "command == null");
    Objects.requireNonNull(duration, "duration == null");
  }

  /** A result whose byte counts are unknown (-1), the shape of this record before it had them. */
  public ExecResult(int exitCode, String stdout, String stderr, String command, Duration duration, boolean timedOut,
      boolean truncated, Signal signal, long pid) {
    this(exitCode, stdout, stderr, command, duration, timedOut, truncated, signal, pid, -1, -1);
  }

  /** Whether the command exited with status 0. */
  public boolean isSuccess() {
    return exitCode == 0;
  }

  /**
   * Returns this result if the command exited with 0.
   *
   * @throws CommandFailedException if it did not (including a timeout)
   */
  public ExecResult requireSuccess() {
    if (!isSuccess()) {
      throw new CommandFailedException(this);
    }
    return this;
  }

  /** Output is not printed, only its size. */
  @Override
  public String toString() {
    return "ExecResult{exitCode=" + exitCode + ", command=" + command + ", duration=" + duration.toMillis()
        + "ms, stdout=" + stdout.length() + " chars, stderr=" + stderr.length() + " chars"
        + (timedOut ? ", timedOut" : "") + (truncated ? ", truncated" : "")
        + (signal != null ? ", signal=" + signal : "") + ", pid=" + pid + "}";
  }
}
