package dev.sandboxsdk.agent.background;

import com.sun.net.httpserver.HttpExchange;
import dev.sandboxsdk.agent.AgentConfig;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.exec.ExecRequests;
import dev.sandboxsdk.agent.exec.OutputEvents;
import dev.sandboxsdk.agent.http.Json;
import dev.sandboxsdk.agent.http.Query;
import dev.sandboxsdk.agent.http.Replies;
import dev.sandboxsdk.agent.http.Responses;
import dev.sandboxsdk.agent.http.Routes;
import dev.sandboxsdk.agent.http.SseWriter;
import dev.sandboxsdk.agent.process.ExecSpec;
import dev.sandboxsdk.agent.process.ManagedProcess;
import dev.sandboxsdk.agent.process.ManagedProcess.LogChunk;
import dev.sandboxsdk.agent.process.ManagedProcess.StreamName;
import dev.sandboxsdk.agent.process.ProcessManager;
import dev.sandboxsdk.agent.process.Signal;
import dev.sandboxsdk.agent.text.ByteBuf;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * The /api/process/* routes of background processes and terminals: each parses its request, asks
 * {@link BackgroundProcesses}, and writes the answer (or relays the logs as an event stream).
 */
public final class ProcessRoutes {
  private static final int STREAM_CHUNK = 64 * 1024;
  private static final long MAX_GRACE_MS = 10 * 60 * 1000;

  private final ProcessManager processes;
  private final AgentConfig config;
  private final BackgroundProcesses background;

  public ProcessRoutes(ProcessManager processes) {
    this.processes = processes;
    this.config = processes.config();
    this.background = new BackgroundProcesses(processes);
  }

  /** Registers the background process routes (the fixed paths are reserved process ids). */
  public void register(Routes routes) {
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

  private Json body(HttpExchange exchange) throws IOException {
    return Json.read(exchange, config.maxBodyBytes(), processes.outputBudget());
  }

  void start(HttpExchange exchange) throws IOException {
    Query.none(exchange);
    ExecSpec spec = ExecRequests.parse(body(exchange), ExecRequests.Kind.START, config);
    ManagedProcess p = background.start(spec);
    ManagedProcess.Snapshot started = p.snapshot();
    Responses.ok(exchange, new ProcessMessages.Started(p.id(), p.pid(), p.command(), started.status().wireName(),
        ProcessMessages.Pty.of(started.ptyCols(), started.ptyRows())));
  }

  /** POST /api/process/{id}/resize {@code {"cols":..,"rows":..}}: TIOCSWINSZ on the terminal, SIGWINCH to its program. */
  void resize(HttpExchange exchange, String id) throws IOException {
    Json body = body(exchange);
    body.allowOnly(Set.of("cols", "rows"));
    int[] size = ExecRequests.size(body, "");
    ManagedProcess p = background.resize(id, size[0], size[1]);
    Responses.ok(exchange, new ProcessMessages.Resized(p.id(), size[0], size[1]));
  }

  void list(HttpExchange exchange) throws IOException {
    Query q = Query.parse(exchange.getRequestURI(), Set.of("status"));
    List<ProcessMessages.ProcessInfo> list = new ArrayList<>();
    for (ManagedProcess.Snapshot s : background.list(q.string("status"))) {
      list.add(ProcessMessages.ProcessInfo.of(s));
    }
    Responses.ok(exchange, new ProcessMessages.ProcessList(list));
  }

  void get(HttpExchange exchange, String id) throws IOException {
    Query.none(exchange);
    Responses.ok(exchange, new ProcessMessages.OneProcess(ProcessMessages.ProcessInfo.of(background.require(id).snapshot())));
  }

  void kill(HttpExchange exchange, String id) throws IOException {
    Query q = Query.parse(exchange.getRequestURI(), Set.of("signal", "graceMs"));
    Signal signal = q.string("signal") == null ? Signal.SIGTERM : Signal.parse(q.string("signal"), "signal");
    long graceMs = q.integer("graceMs", 0, MAX_GRACE_MS, config.graceMs());
    ManagedProcess p = background.kill(id, signal, graceMs);
    Responses.ok(exchange, new ProcessMessages.Killed(p.id(), signal.name(), p.snapshot().status().wireName()));
  }

  void killAll(HttpExchange exchange) throws IOException {
    Query.none(exchange);
    Responses.ok(exchange, new ProcessMessages.Cleaned(background.killAll()));
  }

  void cleanup(HttpExchange exchange) throws IOException {
    Query.none(exchange);
    Responses.ok(exchange, new ProcessMessages.Cleaned(background.cleanup()));
  }

  void logs(HttpExchange exchange, String id) throws IOException {
    Query q = Query.parse(exchange.getRequestURI(), Set.of("since", "stdoutSince", "stderrSince", "maxBytes", "encoding"));
    ManagedProcess p = background.require(id);
    ExecSpec.Encoding encoding = encoding(q, p);
    long since = q.integer("since", 0, Long.MAX_VALUE, 0);
    int maxBytes = (int) q.integer("maxBytes", 1, Integer.MAX_VALUE - 8, Integer.MAX_VALUE - 8);
    BackgroundProcesses.Logs logs = BackgroundProcesses.logs(p, encoding, since, maxBytes, offsets(q));
    int out = StreamName.STDOUT.ordinal();
    int err = StreamName.STDERR.ordinal();
    Responses.ok(exchange, new ProcessMessages.Logs(p.id(), logs.text()[out], logs.offset()[out], logs.next()[out],
        logs.text()[err], logs.offset()[err], logs.next()[err], logs.truncated(), logs.complete(),
        p.snapshot().status().wireName(), encoding == ExecSpec.Encoding.BASE64 ? "base64" : null));
  }

  /** The {@code encoding} query parameter, or the one the process was started with. */
  private static ExecSpec.Encoding encoding(Query q, ManagedProcess p) {
    String requested = q.string("encoding");
    return requested == null ? p.spec().encoding() : ExecRequests.encoding(requested, "encoding");
  }

  /** A stream's own offset parameter ({@code stdoutSince}, {@code stderrSince}), validated strictly, or null. */
  private static Function<String, Long> offsets(Query q) {
    return param -> q.string(param) == null ? null : q.integer(param, 0, Long.MAX_VALUE, 0);
  }

  void stream(HttpExchange exchange, String id) throws IOException {
    Query q = Query.parse(exchange.getRequestURI(), Set.of("since", "stdoutSince", "stderrSince", "encoding"));
    ManagedProcess p = background.require(id);
    ExecSpec.Encoding encoding = encoding(q, p);
    long since = q.integer("since", 0, Long.MAX_VALUE, 0);
    long stdoutFrom = BackgroundProcesses.from(p, StreamName.STDOUT, "stdoutSince", offsets(q), since);
    long stderrFrom = BackgroundProcesses.from(p, StreamName.STDERR, "stderrSince", offsets(q), since);

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
    StdinWrite write = stdinWrite(body(exchange));
    int written = background.writeStdin(id, write);
    Responses.ok(exchange, new ProcessMessages.StdinWritten(id, written, write.eof()));
  }

  /**
   * The body of POST /api/process/{id}/stdin, decoded: the bytes to write and whether to close
   * stdin after them.
   *
   * @throws AgentException VALIDATION_FAILED naming the field at fault
   */
  public static StdinWrite stdinWrite(Json body) {
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
