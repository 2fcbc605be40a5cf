package dev.sandboxsdk.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.Command;
import dev.sandboxsdk.LogEvent;
import dev.sandboxsdk.LogRange;
import dev.sandboxsdk.ProcessInfo;
import dev.sandboxsdk.ProcessLogs;
import dev.sandboxsdk.ProcessNotFoundException;
import dev.sandboxsdk.ProcessOptions;
import dev.sandboxsdk.SandboxProcess;
import dev.sandboxsdk.Signal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.Flow;
import okhttp3.HttpUrl;

/**
 * The background processes of a {@link RealSandbox} over {@code /api/process}: starting, listing,
 * attaching, killing and cleaning up processes, their logs (fetched, or streamed from an offset
 * with resumption) and writing to their stdin. Thread-safe: it has no mutable state of its own.
 */
final class ProcessCalls {
  /** The agent's documented default, for when its published limits were not fetched. */
  private static final long AGENT_DEFAULT_LOG_WINDOW_BYTES = 1L << 20;
  private static final int LOG_STREAM_RETRIES = 5;

  private final RealSandbox sandbox;
  private final AgentHttp http;
  private final EventStreams streams;

  ProcessCalls(RealSandbox sandbox, AgentHttp http, EventStreams streams) {
    this.sandbox = sandbox;
    this.http = http;
    this.streams = streams;
  }

  SandboxProcess startProcess(Command command, ProcessOptions options) {
    Objects.requireNonNull(command, "command == null");
    Objects.requireNonNull(options, "options == null");
    JsonNode n = http.call(http.post(http.url("api", "process", "start"), Wire.startBody(command, options)),
        "startProcess " + command.display());
    return new RealSandboxProcess(sandbox, Wire.text(n, "processId"), n.path("pid").asLong(0), Wire.text(n, "command"));
  }

  List<ProcessInfo> listProcesses() {
    return list(http.url("api", "process", "list"));
  }

  private List<ProcessInfo> list(HttpUrl url) {
    JsonNode n = http.call(http.get(url), "listProcesses");
    List<ProcessInfo> out = new ArrayList<>();
    for (JsonNode p : n.path("processes")) {
      out.add(Wire.processInfo(p));
    }
    return List.copyOf(out);
  }

  Optional<ProcessInfo> getProcess(String processId) {
    try {
      return Optional.of(processInfo(processId));
    } catch (ProcessNotFoundException e) {
      return Optional.empty();
    }
  }

  ProcessInfo processInfo(String processId) {
    JsonNode n = http.call(http.get(http.processUrl(processId)), "getProcess " + processId);
    return Wire.processInfo(n.path("process"));
  }

  SandboxProcess attachProcess(String processId) {
    ProcessInfo info = processInfo(processId);
    return new RealSandboxProcess(sandbox, info.id(), info.pid(), info.command());
  }

  void killProcess(String processId, Signal signal) {
    Objects.requireNonNull(signal, "signal == null");
    HttpUrl url = http.processUrl(processId).newBuilder().addQueryParameter("signal", signal.name()).build();
    http.call(http.delete(url), "killProcess " + processId);
  }

  int killAllProcesses() {
    // The agent answers only once everything is gone: up to its grace period plus 7 s.
    JsonNode n = http.call(http.readingAtLeast(Duration.ofMinutes(2)), http.delete(http.url("api", "process", "kill-all")),
        "killAllProcesses");
    return n.path("cleanedCount").asInt(0);
  }

  int cleanupCompletedProcesses() {
    JsonNode n = http.call(http.post(http.url("api", "process", "cleanup"), Wire.MAPPER.createObjectNode()),
        "cleanupCompletedProcesses");
    return n.path("cleanedCount").asInt(0);
  }

  // ---- logs

  ProcessLogs getProcessLogs(String processId, LogRange range) {
    Objects.requireNonNull(range, "range == null");
    HttpUrl.Builder url = http.processUrl(processId).newBuilder().addPathSegment("logs")
        .addQueryParameter("stdoutSince", Long.toString(range.stdoutFrom()))
        .addQueryParameter("stderrSince", Long.toString(range.stderrFrom()));
    if (range.maxBytes() > 0) {
      url.addQueryParameter("maxBytes", Integer.toString(range.maxBytes()));
    }
    long perStream = range.maxBytes() > 0 ? range.maxBytes()
        : http.publishedLimit("logWindowBytes", AGENT_DEFAULT_LOG_WINDOW_BYTES);
    return Wire.processLogs(http.call(http.client, http.get(url.build()), "getProcessLogs " + processId,
        AgentHttp.answerLimit(perStream)));
  }

  Flow.Publisher<LogEvent> streamProcessLogs(String processId, LogRange from) {
    Objects.requireNonNull(from, "from == null");
    if (from.stdoutFrom() == 0 && from.stderrFrom() == 0) {
      // From the beginning: the shared 'since' says that with one parameter (0 is never beyond a stream).
      return logPublisher(processId, new LogCursor.Start(0, -1, -1));
    }
    return logPublisher(processId, new LogCursor.Start(0, from.stdoutFrom(), from.stderrFrom()));
  }

  private Flow.Publisher<LogEvent> logPublisher(String processId, LogCursor.Start start) {
    AgentHttp.checkId(processId);
    String what = "streamProcessLogs " + processId;
    return new EventPublisher<>(abort -> openLogStream(processId, start, abort), http.executor(),
        t -> http.streamError(t, what));
  }

  EventCursor<LogEvent> openLogStream(String processId, long fromOffset, Abort abort) {
    return openLogStream(processId, new LogCursor.Start(fromOffset, -1, -1), abort);
  }

  private EventCursor<LogEvent> openLogStream(String processId, LogCursor.Start start, Abort abort) {
    return openLogStream(processId, start, false, abort);
  }

  /**
   * A resuming cursor over a process's events; also used by waits of {@link RealSandboxProcess}.
   * With {@code base64}, the text of every output event is the base64 of its raw bytes.
   */
  EventCursor<LogEvent> openLogStream(String processId, LogCursor.Start start, boolean base64, Abort abort) {
    http.ensureOpen();
    LogCursor[] self = new LogCursor[1];
    self[0] = new LogCursor((since, stdoutSince, stderrSince) -> {
      HttpUrl.Builder url = http.processUrl(processId).newBuilder().addPathSegment("stream")
          .addQueryParameter("since", Long.toString(since));
      if (stdoutSince >= 0) {
        url.addQueryParameter("stdoutSince", Long.toString(stdoutSince));
      }
      if (stderrSince >= 0) {
        url.addQueryParameter("stderrSince", Long.toString(stderrSince));
      }
      if (base64) {
        url.addQueryParameter("encoding", "base64");
      }
      return streams.openEventStream(http.get(url.build()), "streamProcessLogs " + processId, Wire.logEventReader(),
          e -> e instanceof LogEvent.Exit, abort);
    }, start, LOG_STREAM_RETRIES, 100, () -> http.untrack(self[0]));
    abort.onAbort(self[0]::close);
    return http.track(self[0]);
  }

  // ---- stdin

  void writeStdin(String processId, String data, boolean eof) {
    ObjectNode body = Wire.MAPPER.createObjectNode().put("data", data);
    if (eof) {
      body.put("eof", true);
    }
    postStdin(processId, body, "writeStdin " + processId);
  }

  /** Raw bytes to a process's stdin (a terminal's input), base64 on the wire. */
  void writeStdin(String processId, byte[] bytes, String what) {
    postStdin(processId, Wire.MAPPER.createObjectNode().put("data", Base64.getEncoder().encodeToString(bytes))
        .put("encoding", "base64"), what);
  }

  private void postStdin(String processId, ObjectNode body, String what) {
    http.call(http.post(http.processUrl(processId).newBuilder().addPathSegment("stdin").build(), body), what);
  }
}
