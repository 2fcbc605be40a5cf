package dev.sandboxsdk.mcp.internal;

/**
 * The arguments of the sandbox lifecycle tools, one record per tool, bound by {@link ToolHandler#bind} after
 * the schema check ({@code tools.json} is what they mirror). An optional argument is null when
 * absent, or a primitive when the tool's default is Java's ({@code false}, {@code 0}).
 */
final class LifecycleArgs {
  private LifecycleArgs() {
  }

  record Get(String sandboxId, Boolean keepAlive, Integer idleTimeoutSeconds, boolean persistent,
      String repository, String branch) {
  }

  record Listing() {
  }

  record Shutdown(String sandboxId, boolean force) {
  }

  record Wake(String sandboxId) {
  }

  record Destroy(String sandboxId, boolean force) {
  }
}
