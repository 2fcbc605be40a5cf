package dev.sandboxsdk;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.regex.Pattern;

/**
 * A handle to a background process started by {@link Sandbox#startProcess}.
 *
 * <p>The process lives in the sandbox, independent of this handle and of any connection: it is
 * not {@code AutoCloseable}, and dropping the handle does nothing to it. End it with
 * {@link #kill()}. Handles are thread-safe; each method that says so makes a call to the agent.
 */
public interface SandboxProcess {

  /** The process id used to address it. */
  String id();

  /** Its pid in the sandbox, which is also its process group id. */
  long pid();

  /** The command as the agent ran it. */
  String command();

  /**
   * Fetches the current state from the agent.
   *
   * @throws ProcessNotFoundException if its record was cleaned up
   * @throws SandboxException for any other failure
   */
  ProcessInfo info();

  /** Fetches the current status (see {@link #info()}). */
  default ProcessStatus status() {
    return info().status();
  }

  /** Whether the process is still running, as the agent sees it now (see {@link #info()}). */
  default boolean isAlive() {
    return !status().isTerminal();
  }

  /** Kills the process group with SIGTERM, then SIGKILL after the agent's grace period. */
  default void kill() {
    kill(Signal.SIGTERM);
  }

  /**
   * Sends {@code signal} to the process group, then SIGKILL after the agent's grace period.
   * Returns once the signal is sent; use {@link #waitForExit()} to wait for the end. Killing a
   * process that already ended succeeds.
   */
  void kill(Signal signal);

  /** Its retained output (see {@link Sandbox#getProcessLogs(String)}). */
  ProcessLogs logs();

  /** Its output as events, from the beginning (see {@link Sandbox#streamProcessLogs(String)}). */
  Flow.Publisher<LogEvent> streamLogs();

  /**
   * Blocks until the process has ended and returns its final state.
   *
   * @throws SandboxException if the agent cannot be reached or the process record disappears
   */
  ProcessInfo waitForExit();

  /**
   * Blocks until the process has ended, at most {@code timeout}.
   *
   * @throws SandboxTimeoutException if it is still running after {@code timeout} (it keeps running)
   */
  ProcessInfo waitForExit(Duration timeout);

  /**
   * Blocks until a line of stdout or stderr matches {@code pattern} (with {@link java.util.regex.Matcher#find()}).
   * Output already written counts, as far as the agent still retains it.
   *
   * @throws ProcessExitedException if the process ends without such a line
   */
  LogMatch waitForLog(Pattern pattern);

  /**
   * Like {@link #waitForLog(Pattern)}, at most {@code timeout}.
   *
   * @throws SandboxTimeoutException if no line matched in time (the process keeps running)
   * @throws ProcessExitedException if the process ends without such a line
   */
  LogMatch waitForLog(Pattern pattern, Duration timeout);

  /**
   * A future completed with the final state once the process ends. Cancelling the future stops
   * waiting; it does not kill the process.
   */
  CompletableFuture<ProcessInfo> onExit();

  /**
   * Writes text (UTF-8) to the process's standard input. Needs {@link ProcessOptions#stdinPipe()}.
   *
   * @throws SandboxInvalidRequestException if the process has no stdin pipe or it was closed
   */
  void writeStdin(String text);

  /** Closes the process's standard input (it sees end of file). */
  void closeStdin();

  /** Waits until an HTTP server answers {@code GET /} on {@code port}; see {@link #waitForPort(int, PortWaitOptions)}. */
  default void waitForPort(int port) {
    waitForPort(port, PortWaitOptions.defaults());
  }

  /**
   * Like {@link SandboxPorts#waitFor(int, PortWaitOptions)}, but fails fast when this process
   * ends first: within milliseconds of its exit, not after the next check.
   *
   * <pre>{@code
   * SandboxProcess web = sandbox.startProcess("python3 -m http.server 8000");
   * web.waitForPort(8000);                          // ready, or ProcessExitedException
   * }</pre>
   *
   * @throws ProcessExitedException if the process ended before the port was ready; its
   *     {@link ProcessExitedException#info()} has the exit code
   * @throws SandboxTimeoutException if {@code options.timeout()} passed first
   */
  void waitForPort(int port, PortWaitOptions options);
}
