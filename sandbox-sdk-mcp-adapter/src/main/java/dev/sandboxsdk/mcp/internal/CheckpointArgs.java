package dev.sandboxsdk.mcp.internal;

/**
 * The arguments of the checkpoint tools, one record per tool, bound by {@link ToolHandler#bind} after
 * the schema check ({@code tools.json} is what they mirror). An optional argument is null when
 * absent, or a primitive when the tool's default is Java's ({@code false}, {@code 0}).
 */
final class CheckpointArgs {
  private CheckpointArgs() {
  }

  record Create(String sandboxId, String name) {
  }

  record Listing(String sandboxId) {
  }

  record Restore(String sandboxId, String checkpointId, boolean force) {
  }

  record Delete(String sandboxId, String checkpointId) {
  }
}
