package dev.sandboxsdk;

/**
 * Receives a command's output while {@link Sandbox#exec} runs it (see
 * {@link ExecOptions.Builder#onOutput}).
 *
 * <p>Called one chunk at a time, in the order the agent read the output, on the thread that
 * called {@code exec} (for {@code execAsync}, on an SDK thread); a chunk never splits a UTF-8
 * code point. It must not block for long: the command is paced by how fast
 * output is consumed. An exception thrown here aborts the exec (the command is killed) and is
 * rethrown from {@code exec}, wrapped in a {@link SandboxException}.
 */
@FunctionalInterface
public interface OutputListener {
  /** Called with each chunk of output as it arrives. */
  void onOutput(StdStream stream, String text);
}
