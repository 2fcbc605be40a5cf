package dev.sandboxsdk.mcp.internal;

import java.util.List;

/**
 * The arguments of the file watch tools, one record per tool, bound by {@link ToolHandler#bind} after
 * the schema check ({@code tools.json} is what they mirror). An optional argument is null when
 * absent, or a primitive when the tool's default is Java's ({@code false}, {@code 0}).
 */
final class WatchArgs {
  private WatchArgs() {
  }

  record Watch(String path, Boolean recursive, List<String> include, List<String> exclude, Double seconds,
      Integer maxEvents, String sandboxId) {
  }
}
