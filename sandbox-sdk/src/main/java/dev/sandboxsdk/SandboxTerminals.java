package dev.sandboxsdk;

/**
 * Terminals of a sandbox ({@link Sandbox#terminals()}): run a command on a pseudo-terminal and
 * get a {@link Terminal} handle to type into it, resize it and read its output.
 *
 * <pre>{@code
 * Terminal term = sandbox.terminals().open(TerminalOptions.defaults());   // a login shell, 80 x 24
 * term.write("echo $TERM\r");
 * }</pre>
 *
 * <p><b>Threading.</b> Thread-safe: any number of threads may use the view at once. Each call
 * blocks the calling thread until the agent answered. The view costs nothing to get. After the
 * sandbox is closed every method throws {@link IllegalStateException}.
 */
public interface SandboxTerminals {

  /**
   * Starts a command on a pseudo-terminal and returns at once; see {@link Terminal}. The terminal
   * is a background process: it outlives every connection and this handle, and is listed by
   * {@link Sandbox#listProcesses()} under {@link Terminal#id()}.
   *
   * @throws SandboxInvalidRequestException if the process id is taken or an option is invalid
   * @throws SandboxServerException with code {@code TERMINAL_UNAVAILABLE} if the agent cannot run
   *     commands on a terminal (an agent started with {@code --spawn jdk})
   * @throws SandboxException for any other failure
   */
  Terminal open(TerminalOptions options);

  /**
   * A handle to an existing terminal, e.g. one another client opened, running or ended (as long as
   * it is listed).
   *
   * @throws ProcessNotFoundException if there is no process with this id
   * @throws SandboxInvalidRequestException with code {@code NOT_A_TERMINAL} if the process does not
   *     run on a terminal
   */
  Terminal attach(String id);
}
