package dev.sandboxsdk;

import java.util.List;

/**
 * Checkpoints of a sandbox's workspace ({@link Sandbox#checkpoints()}): make one, list them, put
 * the workspace back to one, delete one.
 *
 * <pre>{@code
 * Checkpoint base = sandbox.checkpoints().create("after-install");
 * sandbox.exec("rm -rf node_modules");
 * sandbox.checkpoints().restore(base.id());
 * }</pre>
 *
 * <p><b>Errors.</b> Every method throws unchecked exceptions: the ones each method names, plus
 * the connection, timeout and auth exceptions of every {@link Sandbox} call.
 *
 * <p><b>Threading.</b> Thread-safe: any number of threads may use the view at once, but the agent
 * runs one checkpoint, restore or delete at a time and refuses the others meanwhile with
 * {@link SandboxConflictException} ({@code CHECKPOINT_BUSY}). Each call blocks the calling thread
 * until the agent answered; a checkpoint or restore of a large workspace takes as long as tar
 * does. The view costs nothing to get. After the sandbox is closed every method throws
 * {@link IllegalStateException}.
 */
public interface SandboxCheckpoints {

  /**
   * Makes a checkpoint of the whole workspace: every file's contents, mode and modification time,
   * directories (empty ones too), symbolic links as links, hard links and FIFOs. The agent keeps
   * it outside the workspace, where commands cannot read or change it. Files that commands write
   * meanwhile are taken as tar reads them: each file is whole, but files written during the
   * checkpoint may be from before or after (stop writers first for an exact copy). Blocks until
   * the checkpoint is stored; it streams to disk, so its size is bounded by the disk, not memory.
   *
   * @param name 1 to 64 of {@code A-Z a-z 0-9 . _ -}; names need not be unique
   * @throws IllegalArgumentException if the name is not valid
   * @throws SandboxServerException with code {@code NO_SPACE} if the disk is full (nothing is
   *     kept), or {@code FILESYSTEM_ERROR}
   * @throws SandboxPermissionException if the sandbox's user cannot read a file of the workspace
   * @throws SandboxConflictException if another checkpoint, restore or delete is in progress
   *     ({@code CHECKPOINT_BUSY})
   */
  Checkpoint create(String name);

  /** Every checkpoint of this sandbox, oldest first. */
  List<Checkpoint> list();

  /**
   * Puts the workspace back to the checkpoint, exactly: what was changed comes back, what was
   * added since is gone. Refused while processes run; see {@link #restore(String, boolean)}.
   *
   * @throws SandboxConflictException with code {@code PROCESSES_RUNNING} while a process runs
   * @throws SandboxNotFoundException with code {@code CHECKPOINT_NOT_FOUND} for an unknown id
   */
  default void restore(String checkpointId) {
    restore(checkpointId, false);
  }

  /**
   * Puts the workspace back to the checkpoint: empties it, then extracts the checkpoint. While
   * it runs no command may start ({@code CHECKPOINT_BUSY}).
   *
   * @param force whether to kill every process first (background processes, running execs, and
   *     what they started: SIGTERM, SIGKILL after the grace period); without it a restore while
   *     any process runs fails with {@code PROCESSES_RUNNING} and changes nothing
   * @throws SandboxConflictException with code {@code PROCESSES_RUNNING} or {@code CHECKPOINT_BUSY}
   * @throws SandboxNotFoundException with code {@code CHECKPOINT_NOT_FOUND} for an unknown id
   * @throws SandboxServerException if the workspace could not be emptied or the checkpoint not
   *     extracted (e.g. {@code NO_SPACE}): the workspace may then hold part of it; restore again
   */
  void restore(String checkpointId, boolean force);

  /**
   * Deletes a checkpoint and frees its disk space.
   *
   * @throws SandboxNotFoundException with code {@code CHECKPOINT_NOT_FOUND} for an unknown id
   */
  void delete(String checkpointId);
}
