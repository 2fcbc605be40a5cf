package dev.sandboxsdk.contract;

import java.time.Duration;
import java.util.Collection;
import java.util.List;

/**
 * Looks at the processes and workspace files of a sandbox from outside the SDK calls under test,
 * so that {@link SandboxContract} can check what really happened ("the command and its children
 * are gone", "nothing ran before subscribe"). Pids are the sandbox's own pids, as
 * {@code ExecResult.pid()} and {@code SandboxProcess.pid()} report them; paths are as commands in
 * the sandbox see them, relative ones resolved against the workspace.
 *
 * <p>A probe never guesses: when it cannot tell (no /proc, a failed call, output it cannot parse)
 * it throws {@link AssertionError}, so an unanswerable "is it gone?" fails the test instead of
 * passing it. Methods other than {@link #readPid} are called repeatedly while the suite polls, so
 * they must not block for long.
 */
public interface SandboxProbe {
  /** Whether a file or directory exists at {@code path}. */
  boolean exists(String path);

  /**
   * The pid a command wrote to the file at {@code path} ({@code echo $$ > file}), waiting up to
   * {@code timeout} until the file holds a whole line.
   *
   * @throws AssertionError if no pid appeared in time
   */
  long readPid(String path, Duration timeout) throws InterruptedException;

  /** True if the process exists and is neither a zombie nor dead. */
  boolean alive(long pid);

  /** The pids among {@code pids} that are {@linkplain #alive alive}. */
  List<Long> aliveAmong(Collection<Long> pids);

  /** Pids of the live (non-zombie) members of the process group {@code pgid}. */
  List<Long> groupMembers(long pgid);

  /** {@code path} with every symbolic link resolved, as {@code cd path && pwd -P} prints it. */
  String realPath(String path);
}
