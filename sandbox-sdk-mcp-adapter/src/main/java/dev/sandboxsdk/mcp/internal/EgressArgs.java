package dev.sandboxsdk.mcp.internal;

import java.util.List;

/**
 * The arguments of the egress tools, one record per tool, bound by {@link ToolHandler#bind} after
 * the schema check ({@code tools.json} is what they mirror). An optional argument is null when
 * absent.
 */
final class EgressArgs {
  private EgressArgs() {
  }

  record Get(String sandboxId) {
  }

  record Update(String sandboxId, String mode, List<String> rules) {
  }

  record Listing(String sandboxId, Long since, Integer limit) {
  }
}
