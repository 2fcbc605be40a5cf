package dev.sandboxsdk.mcp.internal;

/**
 * The arguments of the session tools, one record per tool, bound by {@link ToolHandler#bind} after
 * the schema check ({@code tools.json} is what they mirror). An optional argument is null when
 * absent.
 */
final class SessionArgs {
  private SessionArgs() {
  }

  record Listing(String sandboxId) {
  }

  record Delete(String session, String sandboxId) {
  }
}
