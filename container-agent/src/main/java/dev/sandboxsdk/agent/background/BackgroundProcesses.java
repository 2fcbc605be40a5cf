package dev.sandboxsdk.agent.background;

import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.process.ExecSpec;
import dev.sandboxsdk.agent.process.ManagedProcess;
import dev.sandboxsdk.agent.process.ManagedProcess.LogChunk;
import dev.sandboxsdk.agent.process.ManagedProcess.StreamName;
import dev.sandboxsdk.agent.process.ProcessManager;
import dev.sandboxsdk.agent.process.Signal;
import dev.sandboxsdk.agent.text.ByteBuf;
import dev.sandboxsdk.agent.text.Utf8Sanitizer;
import java.io.IOException;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;

/**
 * What the background process routes do, without HTTP: look processes up, resize a terminal,
 * read a window of logs as text or base64, write to stdin, kill and clean up. The processes
 * themselves are the {@link ProcessManager}'s.
 */
final class BackgroundProcesses {
  private final ProcessManager processes;

  BackgroundProcesses(ProcessManager processes) {
    this.processes = processes;
  }

  /** One window of both streams' logs, decoded, with where each starts and where a reader continues. */
  record Logs(String[] text, long[] offset, long[] next, boolean truncated, boolean complete) {
  }

  ManagedProcess start(ExecSpec spec) {
    return processes.startBackground(spec);
  }

  /** The process {@code id}, or NOT_FOUND. */
  ManagedProcess require(String id) {
    return processes.require(id);
  }

  /** TIOCSWINSZ on the process's terminal, SIGWINCH to its program. */
  ManagedProcess resize(String id, int cols, int rows) {
    ManagedProcess p = processes.require(id);
    if (!p.isTerminal()) {
      throw new AgentException(ErrorCode.NOT_A_TERMINAL, "process '" + id + "' does not run on a terminal;"
          + " start it with \"pty\": {\"cols\": .., \"rows\": ..} to resize it", Map.of("processId", id));
    }
    try {
      p.resize(cols, rows);
    } catch (IllegalStateException e) {
      throw new AgentException(ErrorCode.PROCESS_NOT_RUNNING, "cannot resize the terminal of process '" + id
          + "': it has ended (" + e.getMessage() + ")", Map.of("processId", id));
    } catch (IOException e) {
      throw new AgentException(ErrorCode.INTERNAL_ERROR, "cannot resize the terminal of process '" + id + "': "
          + e.getMessage(), Map.of("processId", id));
    }
    return p;
  }

  /** Every process, or those in {@code status} (a wire name) unless it is null. */
  List<ManagedProcess.Snapshot> list(String status) {
    ManagedProcess.Status filter = null;
    if (status != null) {
      try {
        filter = ManagedProcess.Status.valueOf(status.toUpperCase(Locale.ROOT));
      } catch (IllegalArgumentException e) {
        throw AgentException.invalid("status", "unknown status '" + status
            + "'; use starting, running, completed, failed, killed or error");
      }
    }
    return processes.list(filter);
  }

  ManagedProcess kill(String id, Signal signal, long graceMs) {
    ManagedProcess p = processes.require(id);
    processes.kill(p, signal, Math.max(1, graceMs));
    return p;
  }

  int killAll() {
    return processes.killAll();
  }

  int cleanup() {
    return processes.cleanupCompleted();
  }

  /**
   * Up to {@code maxBytes} of each stream from its offset ({@link #from}); in UTF-8 a code point cut
   * by the end of what was read is held back (its reader gets it next time), unless the stream is over.
   */
  static Logs logs(ManagedProcess p, ExecSpec.Encoding encoding, long since, int maxBytes,
      Function<String, Long> requested) {
    String[] text = new String[2];
    long[] offset = new long[2];
    long[] next = new long[2];
    boolean truncated = false;
    boolean complete = true;
    for (StreamName stream : StreamName.values()) {
      String name = stream.name().toLowerCase(Locale.ROOT);
      int i = stream.ordinal();
      long from = from(p, stream, name + "Since", requested, since);
      LogChunk chunk = p.readLog(stream, from, maxBytes);
      byte[] data = chunk.data();
      int usable = data.length;
      if (encoding == ExecSpec.Encoding.BASE64) {
        text[i] = Base64.getEncoder().encodeToString(data);
      } else {
        // Hold back a code point cut by the end of what was read, unless the stream is over.
        boolean endOfStream = chunk.eof() && chunk.start() + data.length == chunk.end();
        Utf8Sanitizer sanitizer = new Utf8Sanitizer();
        ByteBuf valid = new ByteBuf(data.length + 16);
        sanitizer.sanitize(data, 0, data.length, endOfStream, valid);
        usable = data.length - sanitizer.pending();
        text[i] = valid.toString();
      }
      offset[i] = chunk.start();
      next[i] = chunk.start() + usable;
      truncated |= chunk.droppedBytes() > 0;
      complete &= chunk.eof() && chunk.start() + usable == chunk.end();
    }
    return new Logs(text, offset, next, truncated, complete);
  }

  /**
   * The offset to read {@code stream} from: the one {@code requested} gives for {@code param}
   * (null when the request has none), which must not lie beyond what the stream produced, or the
   * shared {@code since}, clamped to it (the two streams differ in length).
   */
  static long from(ManagedProcess p, StreamName stream, String param, Function<String, Long> requested, long since) {
    long end = p.logEnd(stream);
    Long offset = requested.apply(param);
    if (offset == null) {
      return Math.min(since, end);
    }
    if (offset > end) {
      throw AgentException.invalid(param, param + "=" + offset + " is beyond the " + stream.name().toLowerCase(Locale.ROOT)
          + " produced so far (" + end + " bytes)");
    }
    return offset;
  }

  /** Writes to the stdin of process {@code id}, which must have been started with a pipe; the bytes written. */
  int writeStdin(String id, StdinWrite write) {
    ManagedProcess p = processes.require(id);
    byte[] bytes = write.bytes();
    boolean eof = write.eof();
    if (!p.spec().stdinPipe()) {
      throw AgentException.invalid("stdin", "process '" + id + "' was not started with \"stdin\": \"pipe\"");
    }
    if (eof && p.isTerminal()) {
      throw AgentException.invalid("eof", "process '" + id + "' runs on a terminal, which has no end of input to"
          + " close; send Ctrl-D (\\u0004) to end a line-reading program's input, or kill it");
    }
    if (p.isFinished()) {
      throw notRunning(id, "it has already exited");
    }
    try {
      return p.writeStdin(bytes, eof);
    } catch (IllegalStateException e) {
      throw notRunning(id, "its stdin is already closed");
    } catch (IOException e) {
      throw notRunning(id, "it closed its stdin (" + e.getMessage() + ")");
    }
  }

  private static AgentException notRunning(String id, String why) {
    return new AgentException(ErrorCode.PROCESS_NOT_RUNNING, "cannot write to the stdin of process '" + id + "': " + why,
        Map.of("processId", id));
  }
}
