package dev.sandboxsdk.agent.background;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonInclude.Include;
import dev.sandboxsdk.agent.process.ManagedProcess;
import java.util.List;

/**
 * Wire records of the background process routes (/api/process/*). Components are written in
 * declaration order; a component marked {@code NON_NULL} is left out when null, every other one
 * is always written (a null exit code as {@code null}). The stdout and stderr events are written
 * by {@code OutputEvents} (agent.exec), not by records (the hot path).
 */
final class ProcessMessages {
  private ProcessMessages() {
  }

  /** A terminal's size. */
  record Pty(int cols, int rows) {
    static Pty of(Integer cols, Integer rows) {
      return cols == null ? null : new Pty(cols, rows);
    }
  }

  /** The protocol's ProcessInfo object. */
  record ProcessInfo(String id, long pid, String command, @JsonInclude(Include.NON_NULL) List<String> argv,
      String status, String startTime, @JsonInclude(Include.NON_NULL) String endTime,
      @JsonInclude(Include.NON_NULL) Integer exitCode, @JsonInclude(Include.NON_NULL) String signal,
      @JsonInclude(Include.NON_NULL) Boolean timedOut, long stdoutBytes, long stderrBytes,
      @JsonInclude(Include.NON_NULL) Pty pty) {
    static ProcessInfo of(ManagedProcess.Snapshot s) {
      return new ProcessInfo(s.id(), s.pid(), s.command(), s.argv(), s.status().wireName(), s.startTime().toString(),
          s.endTime() == null ? null : s.endTime().toString(), s.exitCode(),
          s.signal() == null ? null : s.signal().name(), s.status().isTerminal() ? s.timedOut() : null,
          s.stdoutBytes(), s.stderrBytes(), Pty.of(s.ptyCols(), s.ptyRows()));
    }
  }

  /** POST /api/process/start. */
  record Started(String processId, long pid, String command, String status, @JsonInclude(Include.NON_NULL) Pty pty) {
  }

  /** POST /api/process/{id}/resize. */
  record Resized(String processId, int cols, int rows) {
  }

  /** GET /api/process/list. */
  record ProcessList(List<ProcessInfo> processes) {
  }

  /** GET /api/process/{id}. */
  record OneProcess(ProcessInfo process) {
  }

  /** DELETE /api/process/{id}. */
  record Killed(String processId, String signal, String status) {
  }

  /** DELETE /api/process/kill-all and POST /api/process/cleanup. */
  record Cleaned(int cleanedCount) {
  }

  /** GET /api/process/{id}/logs: each stream's text, where it starts and where a reader continues. */
  record Logs(String processId, String stdout, long stdoutOffset, long stdoutNextOffset, String stderr,
      long stderrOffset, long stderrNextOffset, boolean truncated, boolean complete, String status,
      @JsonInclude(Include.NON_NULL) String encoding) {
  }

  /** POST /api/process/{id}/stdin. */
  record StdinWritten(String processId, int bytesWritten, boolean eof) {
  }

  /** The first event of process/{id}/stream. */
  record InfoEvent(String type, String processId, long pid, String command, String status) {
    InfoEvent(String processId, long pid, String command, String status) {
      this("process_info", processId, pid, command, status);
    }
  }

  /** The window moved past the reader: {@code droppedBytes} of {@code stream} are lost, output resumes at {@code offset}. */
  record TruncatedEvent(String type, String processId, String stream, long droppedBytes, long offset) {
    TruncatedEvent(String processId, String stream, long droppedBytes, long offset) {
      this("truncated", processId, stream, droppedBytes, offset);
    }
  }

  /** The last event of process/{id}/stream. */
  record ExitEvent(String type, String processId, Integer exitCode, String status, boolean timedOut,
      @JsonInclude(Include.NON_NULL) String signal, String data) {
    ExitEvent(String processId, Integer exitCode, String status, boolean timedOut, String signal, String data) {
      this("exit", processId, exitCode, status, timedOut, signal, data);
    }
  }
}
