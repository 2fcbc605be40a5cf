package dev.sandboxsdk.agent.checkpoint;

import java.util.List;

/**
 * Wire records of the checkpoint routes ({@link CheckpointRoutes}). Every component is always
 * written (a checkpoint without a name has {@code "name": null}).
 */
final class CheckpointMessages {
  private CheckpointMessages() {
  }

  /** The protocol's Checkpoint object. */
  record CheckpointInfo(String id, String name, long sizeBytes, String createdAt) {
    static CheckpointInfo of(Checkpoint c) {
      return new CheckpointInfo(c.id(), c.name(), c.sizeBytes(), c.createdAt().toString());
    }
  }

  /** POST /api/checkpoints (201) and DELETE /api/checkpoints/{id}. */
  record OneCheckpoint(CheckpointInfo checkpoint) {
  }

  /** GET /api/checkpoints, oldest first. */
  record CheckpointList(List<CheckpointInfo> checkpoints) {
  }

  /** POST /api/checkpoints/{id}/restore: the checkpoint and how many processes the restore killed. */
  record Restored(CheckpointInfo checkpoint, int killedProcesses) {
  }
}
