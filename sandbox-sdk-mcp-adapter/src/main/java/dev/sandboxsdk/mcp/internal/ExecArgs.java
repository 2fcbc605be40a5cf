package dev.sandboxsdk.mcp.internal;

import java.util.List;
import java.util.Map;

/**
 * The arguments of the exec tools, one record per tool, bound by {@link ToolHandler#bind} after
 * the schema check ({@code tools.json} is what they mirror). An optional argument is null when
 * absent, or a primitive when the tool's default is Java's ({@code false}, {@code 0}).
 */
final class ExecArgs {
  private ExecArgs() {
  }

  /** What {@code exec} and {@code runCode} share. */
  sealed interface Run permits Exec, RunCode {
    String sandboxId();

    String cwd();

    Map<String, String> env();

    Double timeoutSeconds();

    Integer maxOutputBytes();
  }

  record Exec(String command, List<String> argv, String sandboxId, String cwd, Map<String, String> env,
      String stdin, Double timeoutSeconds, Integer maxOutputBytes, String session) implements Run {
  }

  /** {@code context}: the name of a code context to run in (created on first use), or null for a fresh process. */
  record RunCode(String code, String language, String sandboxId, String cwd, Map<String, String> env,
      Double timeoutSeconds, Integer maxOutputBytes, String context) implements Run {
  }
}
