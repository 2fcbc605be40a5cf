package dev.sandboxsdk;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;

/**
 * A shell session ({@link SandboxSessions}): commands run in it see the directory, variables,
 * functions, aliases and options the commands before them left. {@link #close()} deletes it.
 *
 * <p>The exec methods behave as {@link Sandbox}'s ({@link ExecOptions} included); a command's
 * {@link ExecOptions#cwd()} and {@link ExecOptions#env()} apply on top of the session's state and
 * stay in it, as a {@code cd} and an {@code export} at the start of the command would. An argv
 * command ({@link Command#of}) runs quoted, never interpreted by the shell.
 *
 * <p><b>Threading.</b> Thread-safe; commands of one session run one at a time (see {@link
 * SandboxSessions}).
 */
public interface Session extends AutoCloseable {
  /** The session's id. */
  String id();

  /** Runs a shell command line in the session; see {@link #exec(Command, ExecOptions)}. */
  default ExecResult exec(String command) {
    return exec(Command.shell(command), ExecOptions.defaults());
  }

  /**
   * Runs a command in the session and waits for it, as {@link Sandbox#exec(Command, ExecOptions)}.
   *
   * @throws SandboxNotFoundException ({@code SESSION_NOT_FOUND}) if the session was deleted
   * @throws SandboxConflictException ({@code SESSION_BUSY}) if a command of the session still ran
   *     after 30 s of waiting
   */
  ExecResult exec(Command command, ExecOptions options);

  /** Runs a command in the session asynchronously, as {@link Sandbox#execAsync(Command, ExecOptions)}. */
  CompletableFuture<ExecResult> execAsync(Command command, ExecOptions options);

  /** Streams a shell command line's output; see {@link #execStream(Command, ExecOptions)}. */
  default Flow.Publisher<ExecEvent> execStream(String command) {
    return execStream(Command.shell(command), ExecOptions.defaults());
  }

  /** Streams a command's output in the session, as {@link Sandbox#execStream(Command, ExecOptions)}. */
  Flow.Publisher<ExecEvent> execStream(Command command, ExecOptions options);

  /**
   * What the agent knows of the session now.
   *
   * @throws SandboxNotFoundException ({@code SESSION_NOT_FOUND}) if it was deleted
   */
  SessionInfo info();

  /**
   * Deletes the session (see {@link SandboxSessions#delete}).
   *
   * @throws SandboxNotFoundException ({@code SESSION_NOT_FOUND}) if it was deleted already
   */
  void delete();

  /** Deletes the session if it still exists; idempotent, and quiet once the sandbox is closed. */
  @Override
  void close();
}
