package dev.sandboxsdk.mcp.internal;

import java.util.Map;

/**
 * The tools of one capability of a sandbox (files; later ports, git), in a class of its own so
 * that {@link SandboxTools} only dispatches. Each tool is also defined in {@code tools.json};
 * {@code McpServerTest} checks that the two agree.
 */
interface ToolGroup {
  /** Adds this group's tools, by name, to {@code tools}. */
  void register(Map<String, ToolHandler> tools);
}
