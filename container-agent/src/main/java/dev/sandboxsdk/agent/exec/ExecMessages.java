package dev.sandboxsdk.agent.exec;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonInclude.Include;

/**
 * Wire records of the exec routes (POST /api/execute, /api/execute/stream, DELETE
 * /api/execute/{id}). Components are written in declaration order; a component marked
 * {@code NON_NULL} is left out when null, every other one is always written (a null exit code
 * as {@code null}). The stdout and stderr events are not records: {@link OutputEvents} writes
 * them straight into a reused buffer, as they are the hot path.
 */
final class ExecMessages {
  private ExecMessages() {
  }

  /**
   * The fields of a buffered exec result after its output, {@code "command"} to {@code "pid"}:
   * {@code ExecRoutes} writes {@code success}, {@code exitCode}, {@code stdout} and
   * {@code stderr} from the buffers ahead of them.
   *
   * @param stdoutBytes what was written in all, so a client that asked for a small maxOutputBytes
   *     knows how much it lost
   * @param truncatedReason why output was cut: the request's own cap ({@code maxOutputBytes}) or
   *     the agent's memory budget ({@code outputBudget}); only when truncated
   */
  record ResultTail(String command, long duration, boolean timedOut, boolean truncated, long stdoutBytes,
      long stderrBytes, @JsonInclude(Include.NON_NULL) String truncatedReason,
      @JsonInclude(Include.NON_NULL) String signal, long pid, @JsonInclude(Include.NON_NULL) String encoding) {
  }

  /** DELETE /api/execute/{id}. */
  record Killed(String processId, String signal) {
  }

  /** The first event of execute/stream. */
  record StartEvent(String type, String command, long pid, String processId) {
    StartEvent(String command, long pid, String processId) {
      this("start", command, pid, processId);
    }
  }

  /** The last event of execute/stream when the command ended. */
  record CompleteEvent(String type, Integer exitCode, boolean timedOut, @JsonInclude(Include.NON_NULL) String signal,
      long duration) {
    CompleteEvent(Integer exitCode, boolean timedOut, String signal, long duration) {
      this("complete", exitCode, timedOut, signal, duration);
    }
  }
}
