package dev.sandboxsdk.mcp.internal;

/**
 * The arguments of the git tools, one record per tool, bound by {@link ToolHandler#bind} after
 * the schema check ({@code tools.json} is what they mirror). An optional argument is null when
 * absent, or a primitive when the tool's default is Java's ({@code false}, {@code 0}).
 */
final class GitArgs {
  private GitArgs() {
  }

  record Checkout(String repoUrl, String branch, Integer depth, String targetDir, String username,
      String passwordEnv, Double timeoutSeconds, String sandboxId) {
  }
}
