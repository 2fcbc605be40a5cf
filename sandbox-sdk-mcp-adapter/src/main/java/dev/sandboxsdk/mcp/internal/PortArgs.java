package dev.sandboxsdk.mcp.internal;

/**
 * The arguments of the port tools, one record per tool, bound by {@link ToolHandler#bind} after
 * the schema check ({@code tools.json} is what they mirror). An optional argument is null when
 * absent, or a primitive when the tool's default is Java's ({@code false}, {@code 0}).
 */
final class PortArgs {
  private PortArgs() {
  }

  record WaitFor(int port, String mode, String path, Integer statusMin, Integer statusMax, String processId,
      Double timeoutSeconds, String sandboxId) {
  }

  record Expose(int port, String name, String sandboxId) {
  }

  record Unexpose(int port, String sandboxId) {
  }

  record Listing(String sandboxId) {
  }
}
