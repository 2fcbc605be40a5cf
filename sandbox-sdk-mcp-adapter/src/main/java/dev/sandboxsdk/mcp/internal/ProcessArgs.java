package dev.sandboxsdk.mcp.internal;

import java.util.List;
import java.util.Map;

/**
 * The arguments of the process tools, one record per tool, bound by {@link ToolHandler#bind} after
 * the schema check ({@code tools.json} is what they mirror). An optional argument is null when
 * absent, or a primitive when the tool's default is Java's ({@code false}, {@code 0}).
 */
final class ProcessArgs {
  private ProcessArgs() {
  }

  record Start(String command, List<String> argv, String sandboxId, String processId, String cwd,
      Map<String, String> env, Double timeoutSeconds) {
  }

  record Listing(String sandboxId, String status) {
  }

  record Get(String processId, String sandboxId) {
  }

  record Kill(String processId, String sandboxId, String signal) {
  }

  record KillAll(String sandboxId) {
  }

  /** {@code getProcessLogs} and {@code streamProcessLogs} (which alone has {@code timeoutSeconds}). */
  sealed interface Page permits Logs, StreamLogs {
    String processId();

    String sandboxId();

    long stdoutOffset();

    long stderrOffset();

    Integer maxBytes();
  }

  record Logs(String processId, String sandboxId, long stdoutOffset, long stderrOffset, Integer maxBytes)
      implements Page {
  }

  record StreamLogs(String processId, String sandboxId, long stdoutOffset, long stderrOffset,
      Double timeoutSeconds, Integer maxBytes) implements Page {
  }

  record Cleanup(String sandboxId) {
  }
}
