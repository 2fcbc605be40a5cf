package dev.sandboxsdk;

import java.time.Duration;
import java.util.concurrent.Flow;

/**
 * A program running on a pseudo-terminal in the sandbox, started by
 * {@link SandboxTerminals#open(TerminalOptions)}: it has a controlling terminal of the given size,
 * so shells prompt and do job control, Ctrl-C interrupts, and full-screen programs ({@code vi},
 * {@code top}) draw. It is a background process like any other (listed, killed with its group,
 * its output kept in the agent's retained window); this handle adds typing, resizing and raw
 * output.
 *
 * <pre>{@code
 * try (Sandbox sandbox = LocalSandbox.start()) {
 *   Terminal term = sandbox.terminals().open(TerminalOptions.builder().cols(120).rows(40).build());
 *   term.output().subscribe(subscriberThatPrints);     // raw bytes, escape sequences included
 *   term.write("ls --color=auto\r");                    // what a user types; \r is Enter
 *   term.resize(100, 30);                               // the program gets SIGWINCH
 *   term.write("exit\r");
 *   term.waitForExit(Duration.ofSeconds(10));
 * }
 * }</pre>
 *
 * <p>Thread-safe. The handle holds no connection: {@link SandboxTerminals#attach(String)} gives
 * another client (or a reconnecting one) an equal handle, and {@link #output(long)} resumes the
 * output at any offset still retained.
 */
public interface Terminal {

  /** The terminal's process id, as in {@link Sandbox#listProcesses()}. */
  String id();

  /** The operating-system pid of the terminal's first process (the session leader). */
  long pid();

  /**
   * Sends bytes as if typed: {@code \r} is Enter, byte 3 Ctrl-C, byte 4 Ctrl-D, ESC {@code [A} the
   * up arrow. Writes from one thread arrive in order.
   *
   * @throws SandboxException with code {@code PROCESS_NOT_RUNNING} if the terminal has ended, or
   *     if the program has not read its input for 10 s and the terminal's input queue is full
   */
  void write(byte[] bytes);

  /** Sends text as UTF-8; see {@link #write(byte[])}. */
  void write(String text);

  /**
   * Changes the terminal's size; the program in the foreground receives SIGWINCH and sees the new
   * size (e.g. in {@code stty size}).
   *
   * @throws IllegalArgumentException unless both are 1 to 1000
   * @throws SandboxException with code {@code PROCESS_NOT_RUNNING} if the terminal has ended
   */
  void resize(int cols, int rows);

  /**
   * The output from the oldest byte the agent still retains, then live as it comes; completes
   * once the terminal's programs have all exited and everything was delivered. Lazy,
   * single-subscriber and demand-driven like every publisher of this SDK; a dropped connection
   * is resumed where it stopped.
   */
  default Flow.Publisher<TerminalOutput> output() {
    return output(0);
  }

  /**
   * The output from byte {@code fromOffset} (clamped to what is retained and produced), then
   * live; see {@link #output()}. Use the {@link TerminalOutput#nextOffset()} of the last chunk
   * seen to reattach without repeating or losing anything that is still retained.
   *
   * @throws IllegalArgumentException if {@code fromOffset} is negative
   */
  Flow.Publisher<TerminalOutput> output(long fromOffset);

  /**
   * Hangs up: sends SIGHUP, what closing a terminal window sends, to the terminal's process
   * group and to the jobs its shell started in groups of their own, then SIGKILL to whatever is
   * left after the agent's grace period. Returns once the signal is sent; killing an ended
   * terminal succeeds.
   */
  void kill();

  /**
   * Waits until the terminal's programs have exited and returns the final state (exit code,
   * status).
   *
   * @throws SandboxTimeoutException if it is still running after {@code timeout}
   */
  ProcessInfo waitForExit(Duration timeout);

  /** The terminal as a {@link SandboxProcess}: status, logs, waits, signals. */
  SandboxProcess process();
}
