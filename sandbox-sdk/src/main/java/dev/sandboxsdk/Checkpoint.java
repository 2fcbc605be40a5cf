package dev.sandboxsdk;

import java.time.Instant;
import java.util.Objects;

/**
 * A checkpoint of a sandbox's workspace, made by {@link SandboxCheckpoints#create(String)}: every file,
 * directory (empty ones too), symbolic link (as a link), hard link, FIFO, mode and modification
 * time under the workspace, as it was when the checkpoint was made. {@link SandboxCheckpoints#restore(String)}
 * puts the workspace back to exactly that. It is kept by the sandbox's agent, outside the
 * workspace, where commands cannot read or change it (docs/user-guide.md, "Checkpoints").
 *
 * @param id the agent's id for it ({@code ckpt_} and 16 hex digits); pass it to restore or delete
 * @param name the name it was given
 * @param sizeBytes the size of the stored archive
 * @param createdAt when it was made (the agent's clock)
 */
public record Checkpoint(String id, String name, long sizeBytes, Instant createdAt) {
  /** Checks that nothing is null. */
  public Checkpoint {
    Objects.requireNonNull(id, "id == null");
    Objects.requireNonNull(name, "name == null");
    Objects.requireNonNull(createdAt, "createdAt == null");
  }
}
