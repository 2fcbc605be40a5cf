package dev.sandboxsdk;

import java.util.Objects;

/**
 * An event of {@link Sandbox#streamProcessLogs}: one {@link Info}, then {@link Output} (with
 * {@link Truncated} where retained output was lost), then one {@link Exit}.
 *
 * <p>This interface is deliberately not sealed: new event types may be added in later versions.
 */
public interface LogEvent {

  /**
   * Sent first: the process being streamed. After a reconnect it is not repeated.
   *
   * @param processId the process
   * @param pid its pid
   * @param command the command as run
   * @param status its status when the stream started
   */
  record Info(String processId, long pid, String command, ProcessStatus status) implements LogEvent {
    public Info {
      Objects.requireNonNull(processId, "processId == null");
      Objects.requireNonNull(status, "status == null");
    }
  }

  /**
   * A chunk of output.
   *
   * @param stream which stream
   * @param text the text; never splits a UTF-8 code point
   * @param offset bytes of that stream before this chunk; resume from {@code offset + bytes}
   * @param bytes raw bytes of the stream this chunk covers
   */
  record Output(StdStream stream, String text, long offset, long bytes) implements LogEvent {
    public Output {
      Objects.requireNonNull(stream, "stream == null");
      Objects.requireNonNull(text, "text == null");
    }

    /** The offset right after this chunk. */
    public long nextOffset() {
      return offset + bytes;
    }
  }

  /**
   * Output was lost: the requested offset had already left the agent's retained window.
   *
   * @param stream which stream
   * @param droppedBytes bytes that will never be seen
   * @param offset where the data continues
   */
  record Truncated(StdStream stream, long droppedBytes, long offset) implements LogEvent {
    public Truncated {
      Objects.requireNonNull(stream, "stream == null");
    }
  }

  /**
   * The process has ended and everything was delivered. Always the last event.
   *
   * @param exitCode its exit status (128+N for signal N; 124 after a timeout)
   * @param status its final status
   * @param timedOut whether its timeout expired
   * @param signal the signal the agent killed it with, if it died of it; otherwise null
   */
  record Exit(int exitCode, ProcessStatus status, boolean timedOut, Signal signal) implements LogEvent {
    public Exit {
      Objects.requireNonNull(status, "status == null");
    }
  }
}
