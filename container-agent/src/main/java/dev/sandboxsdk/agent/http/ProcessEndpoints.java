package dev.sandboxsdk.agent.http;

import com.sun.net.httpserver.HttpExchange;
import dev.sandboxsdk.agent.AgentConfig;
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
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/** The /api/process/* endpoints for background processes. */
final class ProcessEndpoints {
  private static final int STREAM_CHUNK = 64 * 1024;
  private static final long MAX_GRACE_MS = 10 * 60 * 1000;

  private final ProcessManager processes;
  private final AgentConfig config;

  ProcessEndpoints(ProcessManager processes) {
    this.processes = processes;
    this.config = processes.config();
  }

  /** Registers the background process routes (the fixed paths are reserved process ids). */
  void register(Routes routes) {
    String each = "/api/process/";
    routes.on("POST", "/api/process/start", this::start)
        .on("GET", "/api/process/list", this::list)
        .on("DELETE", "/api/process/kill-all", this::killAll)
        .on("POST", "/api/process/cleanup", this::cleanup)
        .on("DELETE", each, "", Replies::decode, this::kill)
        .on("GET", each, "", Replies::decode, this::get)
        .on("GET", each, "/logs", Replies::decode, this::logs)
        .on("GET", each, "/stream", Replies::decode, this::stream)
        .on("POST", each, "/stdin", Replies::decode, (exchange, id) -> {
          Query.none(exchange);
          stdin(exchange, id);
        })
        .on("POST", each, "/resize", Replies::decode, (exchange, id) -> {
          Query.none(exchange);
          resize(exchange, id);
        });
  }

  void start(HttpExchange exchange) throws IOException {
    Query.none(exchange);
    ExecSpec spec = ExecRequests.parse(Json.read(exchange, config.maxBodyBytes(), processes.outputBudget()), ExecRequests.Kind.START, config);
    ManagedProcess p = processes.startBackground(spec);
    ManagedProcess.Snapshot started = p.snapshot();
    Responses.ok(exchange, new ProcessMessages.Started(p.id(), p.pid(), p.command(), started.status().wireName(),
        ProcessMessages.Pty.of(started.ptyCols(), started.ptyRows())));
  }

  /** POST /api/process/{id}/resize {@code {"cols":..,"rows":..}}: TIOCSWINSZ on the terminal, SIGWINCH to its program. */
  void resize(HttpExchange exchange, String id) throws IOException {
    Json body = Json.read(exchange, config.maxBodyBytes(), processes.outputBudget());
    body.allowOnly(Set.of("cols", "rows"));
    int[] size = ExecRequests.size(body, "");
    ManagedProcess p = processes.require(id);
    if (!p.isTerminal()) {
      throw new AgentException(ErrorCode.NOT_A_TERMINAL, "process '" + id + "' does not run on a terminal;"
          + " start it with \"pty\": {\"cols\": .., \"rows\": ..} to resize it", Map.of("processId", id));
    }
    try {
      p.resize(size[0], size[1]);
    } catch (IllegalStateException e) {
      throw new AgentException(ErrorCode.PROCESS_NOT_RUNNING, "cannot resize the terminal of process '" + id
          + "': it has ended (" + e.getMessage() + ")", Map.of("processId", id));
    } catch (IOException e) {
      throw new AgentException(ErrorCode.INTERNAL_ERROR, "cannot resize the terminal of process '" + id + "': "
          + e.getMessage(), Map.of("processId", id));
    }
    Responses.ok(exchange, new ProcessMessages.Resized(p.id(), size[0], size[1]));
  }

  void list(HttpExchange exchange) throws IOException {
    Query q = Query.parse(exchange.getRequestURI(), Set.of("status"));
    ManagedProcess.Status filter = null;
    String status = q.string("status");
    if (status != null) {
      try {
        filter = ManagedProcess.Status.valueOf(status.toUpperCase(Locale.ROOT));
      } catch (IllegalArgumentException e) {
        throw AgentException.invalid("status", "unknown status '" + status
            + "'; use starting, running, completed, failed, killed or error");
      }
    }
    List<ProcessMessages.ProcessInfo> list = new ArrayList<>();
    for (ManagedProcess.Snapshot s : processes.list(filter)) {
      list.add(ProcessMessages.ProcessInfo.of(s));
    }
    Responses.ok(exchange, new ProcessMessages.ProcessList(list));
  }

  void get(HttpExchange exchange, String id) throws IOException {
    Query.none(exchange);
    Responses.ok(exchange, new ProcessMessages.OneProcess(ProcessMessages.ProcessInfo.of(processes.require(id).snapshot())));
  }

  void kill(HttpExchange exchange, String id) throws IOException {
    Query q = Query.parse(exchange.getRequestURI(), Set.of("signal", "graceMs"));
    Signal signal = q.string("signal") == null ? Signal.SIGTERM : Signal.parse(q.string("signal"), "signal");
    long graceMs = q.integer("graceMs", 0, MAX_GRACE_MS, config.graceMs());
    ManagedProcess p = processes.require(id);
    processes.kill(p, signal, Math.max(1, graceMs));
    Responses.ok(exchange, new ProcessMessages.Killed(p.id(), signal.name(), p.snapshot().status().wireName()));
  }

  void killAll(HttpExchange exchange) throws IOException {
    Query.none(exchange);
    Responses.ok(exchange, new ProcessMessages.Cleaned(processes.killAll()));
  }

  void cleanup(HttpExchange exchange) throws IOException {
    Query.none(exchange);
    Responses.ok(exchange, new ProcessMessages.Cleaned(processes.cleanupCompleted()));
  }

  void logs(HttpExchange exchange, String id) throws IOException {
    Query q = Query.parse(exchange.getRequestURI(), Set.of("since", "stdoutSince", "stderrSince", "maxBytes", "encoding"));
    ManagedProcess p = processes.require(id);
    ExecSpec.Encoding encoding = encoding(q, p);
    long since = q.integer("since", 0, Long.MAX_VALUE, 0);
    int maxBytes = (int) q.integer("maxBytes", 1, Integer.MAX_VALUE - 8, Integer.MAX_VALUE - 8);
    String[] text = new String[2];
    long[] offset = new long[2];
    long[] next = new long[2];
    boolean truncated = false;
    boolean complete = true;
    for (StreamName stream : StreamName.values()) {
      String name = stream.name().toLowerCase(Locale.ROOT);
      int i = stream.ordinal();
      long from = checkedOffset(q, name + "Since", since, p, stream);
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
    int out = StreamName.STDOUT.ordinal();
    int err = StreamName.STDERR.ordinal();
    Responses.ok(exchange, new ProcessMessages.Logs(p.id(), text[out], offset[out], next[out], text[err], offset[err],
        next[err], truncated, complete, p.snapshot().status().wireName(),
        encoding == ExecSpec.Encoding.BASE64 ? "base64" : null));
  }

  /** The {@code encoding} query parameter, or the one the process was started with. */
  private static ExecSpec.Encoding encoding(Query q, ManagedProcess p) {
    String requested = q.string("encoding");
    return requested == null ? p.spec().encoding() : ExecRequests.encoding(requested, "encoding");
  }

  /**
   * The offset to read {@code stream} from: its own parameter, validated strictly, or the shared
   * {@code since}, clamped to what the stream has produced (the two streams differ in length).
   */
  private static long checkedOffset(Query q, String param, long since, ManagedProcess p, StreamName stream) {
    long end = p.logEnd(stream);
    if (q.string(param) == null) {
      return Math.min(since, end);
    }
    long offset = q.integer(param, 0, Long.MAX_VALUE, 0);
    if (offset > end) {
      throw AgentException.invalid(param, param + "=" + offset + " is beyond the " + stream.name().toLowerCase(Locale.ROOT)
          + " produced so far (" + end + " bytes)");
    }
    return offset;
  }

  void stream(HttpExchange exchange, String id) throws IOException {
    Query q = Query.parse(exchange.getRequestURI(), Set.of("since", "stdoutSince", "stderrSince", "encoding"));
    ManagedProcess p = processes.require(id);
    ExecSpec.Encoding encoding = encoding(q, p);
    long since = q.integer("since", 0, Long.MAX_VALUE, 0);
    long stdoutFrom = checkedOffset(q, "stdoutSince", since, p, StreamName.STDOUT);
    long stderrFrom = checkedOffset(q, "stderrSince", since, p, StreamName.STDERR);

    SseWriter sse = SseWriter.open(exchange);
    try {
      sse.send(new ProcessMessages.InfoEvent(p.id(), p.pid(), p.command(), p.snapshot().status().wireName()));
      OutputEvents out = new OutputEvents("stdout", p.id(), encoding, stdoutFrom);
      OutputEvents err = new OutputEvents("stderr", p.id(), encoding, stderrFrom);
      ByteBuf frame = new ByteBuf(96 * 1024);
      long keepAliveNanos = TimeUnit.MILLISECONDS.toNanos(config.keepAliveMs());
      while (true) {
        LogChunk o = p.readLog(StreamName.STDOUT, out.position(), STREAM_CHUNK);
        LogChunk e = p.readLog(StreamName.STDERR, err.position(), STREAM_CHUNK);
        boolean sent = relay(p.id(), o, "stdout", out, sse, frame) | relay(p.id(), e, "stderr", err, sse, frame);
        if (sent) {
          continue;
        }
        if (o.finished() && e.finished()) {
          break;
        }
        if (!p.awaitOutput(out.position(), err.position(), sse.nanosUntilKeepAlive(keepAliveNanos))
            && !sse.keepAliveIfIdle(keepAliveNanos)) {
          return; // the client went away; the background process carries on
        }
      }
      if (out.flush(frame)) {
        sse.send(frame);
      }
      if (err.flush(frame)) {
        sse.send(frame);
      }
      ManagedProcess.Snapshot s = p.snapshot();
      String signal = s.signal() == null ? null : s.signal().name();
      sse.send(new ProcessMessages.ExitEvent(p.id(), s.exitCode(), s.status().wireName(), s.timedOut(), signal,
          s.status().wireName() + " with exit code " + s.exitCode() + (signal != null ? " (" + signal + ")" : "")));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (IOException e) {
      // the client went away mid-stream; nothing else to do for a background process
    } catch (RuntimeException e) {
      sse.sendInternalError(e);
      throw e;
    } finally {
      sse.close();
    }
  }

  /** Sends a truncated marker if the window moved past the reader, then the chunk's data. */
  private static boolean relay(String processId, LogChunk chunk, String stream, OutputEvents events, SseWriter sse, ByteBuf frame)
      throws IOException {
    boolean sent = false;
    if (chunk.droppedBytes() > 0) {
      sse.send(new ProcessMessages.TruncatedEvent(processId, stream, chunk.droppedBytes(), chunk.start()));
      events.jumpTo(chunk.start());
      sent = true;
    }
    byte[] data = chunk.data();
    if (data.length > 0 && events.encode(data, 0, data.length, false, frame)) {
      sse.send(frame);
      sent = true;
    }
    return sent || data.length > 0;
  }

  void stdin(HttpExchange exchange, String id) throws IOException {
    StdinWrite write = StdinWrite.parse(Json.read(exchange, config.maxBodyBytes(), processes.outputBudget()));
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
    int written;
    try {
      written = p.writeStdin(bytes, eof);
    } catch (IllegalStateException e) {
      throw notRunning(id, "its stdin is already closed");
    } catch (IOException e) {
      throw notRunning(id, "it closed its stdin (" + e.getMessage() + ")");
    }
    Responses.ok(exchange, new ProcessMessages.StdinWritten(p.id(), written, eof));
  }

  /** The body of POST /api/process/{id}/stdin, decoded: the bytes to write and whether to close stdin after them. */
  record StdinWrite(byte[] bytes, boolean eof) {
    static StdinWrite parse(Json body) {
      body.allowOnly(Set.of("data", "eof", "encoding"));
      String data = body.string("data");
      boolean eof = Boolean.TRUE.equals(body.bool("eof"));
      if (data == null && !eof) {
        throw AgentException.invalid("data", "give 'data' to write and/or 'eof': true to close stdin");
      }
      ExecSpec.Encoding encoding = ExecRequests.encoding(body.string("encoding"), "encoding");
      if (data == null) {
        return new StdinWrite(new byte[0], eof);
      }
      if (encoding == ExecSpec.Encoding.BASE64) {
        try {
          return new StdinWrite(Base64.getDecoder().decode(data), eof);
        } catch (IllegalArgumentException e) {
          throw AgentException.invalid("data", "'data' is not valid base64: " + e.getMessage());
        }
      }
      return new StdinWrite(data.getBytes(StandardCharsets.UTF_8), eof);
    }
  }

  private static AgentException notRunning(String id, String why) {
    return new AgentException(ErrorCode.PROCESS_NOT_RUNNING, "cannot write to the stdin of process '" + id + "': " + why,
        Map.of("processId", id));
  }
}
