package dev.sandboxsdk;

import java.time.Instant;
import java.util.List;
import java.util.Objects;

/**
 * A snapshot of a background process, as the agent reported it.
 *
 * @param id the process id used to address it
 * @param pid its pid in the sandbox, which is also its process group id
 * @param command the command as run (argv commands rendered with shell quoting)
 * @param argv the argv, for processes started with {@link Command#of}; empty for shell commands
 * @param status where it is in its life
 * @param startTime when it was spawned
 * @param endTime when it was found finished; null while running
 * @param exitCode its exit status once finished (128+N for signal N, 124 after a timeout); null while running
 * @param signal the signal the agent killed it with, if it died of it; otherwise null
 * @param timedOut whether its timeout expired
 * @param stdoutBytes bytes it has written to stdout so far (not only what is retained)
 * @param stderrBytes bytes it has written to stderr so far
 */
public record ProcessInfo(
    String id,
    long pid,
    String command,
    List<String> argv,
    ProcessStatus status,
    Instant startTime,
    Instant endTime,
    Integer exitCode,
    Signal signal,
    boolean timedOut,
    long stdoutBytes,
    long stderrBytes) {

  /** Checks and copies. */
  public ProcessInfo {
    Objects.requireNonNull(id, "id == null");
    Objects.requireNonNull(command, "command == null");
    Objects.requireNonNull(status, "status == null");
    Objects.requireNonNull(startTime, "startTime == null");
    argv = List.copyOf(Objects.requireNonNull(argv, "argv == null"));
  }

  /** Whether the process is still running. */
  public boolean isRunning() {
    return !status.isTerminal();
  }
}
