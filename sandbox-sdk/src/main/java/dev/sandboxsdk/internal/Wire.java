package dev.sandboxsdk.internal;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.Command;
import dev.sandboxsdk.ExecEvent;
import dev.sandboxsdk.ExecOptions;
import dev.sandboxsdk.ExecResult;
import dev.sandboxsdk.LogEvent;
import dev.sandboxsdk.ProcessInfo;
import dev.sandboxsdk.ProcessLogs;
import dev.sandboxsdk.ProcessOptions;
import dev.sandboxsdk.ProcessStatus;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.Signal;
import dev.sandboxsdk.StdStream;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Translation between protocol v1 JSON (docs/protocol/) and the public records. Reading is
 * lenient about what it does not know (unknown fields are ignored, so newer agents work) and
 * strict about what it needs (a missing required field is a {@link SandboxException}).
 */
public final class Wire {
  /**
   * Jackson refuses strings longer than 20,000,000 chars by default, but an exec answer's stdout
   * may legitimately be up to 256 MiB. What the SDK reads is bounded before Jackson sees it
   * (AgentHttp: answers by the output limits; EventStreams: events at 8 MiB), so strings need no
   * second limit.
   */
  static final ObjectMapper MAPPER = new ObjectMapper(JsonFactory.builder()
      .streamReadConstraints(StreamReadConstraints.builder().maxStringLength(Integer.MAX_VALUE).build())
      .build());

  private Wire() {}

  // ---- requests

  static ObjectNode commandBody(Command command, Map<String, String> env, String cwd, Duration timeout) {
    ObjectNode body = MAPPER.createObjectNode();
    if (command.isShell()) {
      body.put("command", command.shell());
    } else {
      ArrayNode argv = body.putArray("argv");
      command.argv().forEach(argv::add);
    }
    if (!env.isEmpty()) {
      ObjectNode e = body.putObject("env");
      env.forEach(e::put); // null values unset the variable
    }
    if (cwd != null) {
      body.put("cwd", cwd);
    }
    if (timeout != null) {
      body.put("timeoutMs", Math.max(1, timeout.toMillis()));
    }
    return body;
  }

  static ObjectNode execBody(Command command, ExecOptions options, Duration timeout, boolean stream) {
    ObjectNode body = commandBody(command, options.env(), options.cwd(), timeout);
    if (options.stdin() != null) {
      body.put("stdin", options.stdin());
    }
    if (!stream && options.maxOutputBytes() > 0) {
      body.put("maxOutputBytes", options.maxOutputBytes());
    }
    return body;
  }

  static ObjectNode startBody(Command command, ProcessOptions options) {
    ObjectNode body = commandBody(command, options.env(), options.cwd(), options.timeout());
    if (options.processId() != null) {
      body.put("processId", options.processId());
    }
    if (options.autoCleanup()) {
      body.put("autoCleanup", true);
    }
    if (options.stdinPipe()) {
      body.put("stdin", "pipe");
    }
    return body;
  }

  /** The process/start body of a terminal: the command plus {@code pty} (our extension of protocol v1). */
  static ObjectNode terminalBody(dev.sandboxsdk.TerminalOptions options) {
    ObjectNode body = commandBody(options.command(), options.env(), options.cwd(), null);
    if (options.processId() != null) {
      body.put("processId", options.processId());
    }
    body.putObject("pty").put("cols", options.cols()).put("rows", options.rows()).put("term", options.term());
    return body;
  }

  static ObjectNode watchBody(String path, dev.sandboxsdk.WatchOptions options) {
    ObjectNode body = MAPPER.createObjectNode().put("path", path).put("recursive", options.recursive());
    if (!options.include().isEmpty()) {
      options.include().forEach(body.putArray("include")::add);
    }
    if (options.exclude() != null) {
      options.exclude().forEach(body.putArray("exclude")::add);
    }
    return body;
  }

  static byte[] bytes(JsonNode node) {
    try {
      return MAPPER.writeValueAsBytes(node);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot serialise a request", e);
    }
  }

  // ---- responses

  static ExecResult execResult(JsonNode n) {
    return new ExecResult(
        integer(n, "exitCode"),
        text(n, "stdout"),
        text(n, "stderr"),
        text(n, "command"),
        Duration.ofMillis(n.path("duration").asLong(0)),
        n.path("timedOut").asBoolean(false),
        n.path("truncated").asBoolean(false),
        signal(n),
        n.path("pid").asLong(0),
        n.path("stdoutBytes").asLong(-1),
        n.path("stderrBytes").asLong(-1));
  }

  static ProcessInfo processInfo(JsonNode n) {
    List<String> argv = new ArrayList<>();
    n.path("argv").forEach(a -> argv.add(a.asText()));
    JsonNode exit = n.get("exitCode");
    return new ProcessInfo(
        text(n, "id"),
        n.path("pid").asLong(0),
        text(n, "command"),
        argv,
        status(n, "status"),
        instant(n, "startTime"),
        n.hasNonNull("endTime") ? instant(n, "endTime") : null,
        exit != null && exit.isIntegralNumber() ? exit.asInt() : null,
        signal(n),
        n.path("timedOut").asBoolean(false),
        n.path("stdoutBytes").asLong(0),
        n.path("stderrBytes").asLong(0));
  }

  static ProcessLogs processLogs(JsonNode n) {
    return new ProcessLogs(
        text(n, "processId"),
        text(n, "stdout"),
        text(n, "stderr"),
        n.path("stdoutOffset").asLong(0),
        n.path("stdoutNextOffset").asLong(0),
        n.path("stderrOffset").asLong(0),
        n.path("stderrNextOffset").asLong(0),
        n.path("truncated").asBoolean(false),
        n.path("complete").asBoolean(false),
        status(n, "status"));
  }

  /** An execute/stream event, or null for a type this SDK does not know (skipped). */
  static ExecEvent execEvent(JsonNode n) {
    switch (n.path("type").asText()) {
      case "start":
        return new ExecEvent.Start(text(n, "command"), n.path("pid").asLong(0));
      case "stdout":
        return new ExecEvent.Stdout(text(n, "data"), longValue(n, "offset"), longValue(n, "bytes"));
      case "stderr":
        return new ExecEvent.Stderr(text(n, "data"), longValue(n, "offset"), longValue(n, "bytes"));
      case "complete":
        return new ExecEvent.Complete(integer(n, "exitCode"), n.path("timedOut").asBoolean(false), signal(n),
            Duration.ofMillis(n.path("duration").asLong(0)));
      case "error":
        throw ErrorMapper.streamError(n);
      default:
        return null;
    }
  }

  /**
   * Reads execute/stream events from their JSON bytes for one stream: output events through
   * {@link OutputEventParser}, the rest (and anything unusual) as a tree by {@link #execEvent}.
   */
  static SseCursor.Mapper<ExecEvent> execEventReader() {
    OutputEventParser output = new OutputEventParser();
    return (json, from, to) -> {
      if (output.parse(json, from, to)) {
        return output.stderr
            ? new ExecEvent.Stderr(output.text, output.offset, output.bytes)
            : new ExecEvent.Stdout(output.text, output.offset, output.bytes);
      }
      return execEvent(parse(json, from, to, "event"));
    };
  }

  /** Like {@link #execEventReader()}, for process stream events. */
  static SseCursor.Mapper<LogEvent> logEventReader() {
    OutputEventParser output = new OutputEventParser();
    return (json, from, to) -> {
      if (output.parse(json, from, to)) {
        return new LogEvent.Output(output.stderr ? StdStream.STDERR : StdStream.STDOUT, output.text, output.offset,
            output.bytes);
      }
      return logEvent(parse(json, from, to, "event"));
    };
  }

  /** A process stream event, or null for a type this SDK does not know (skipped). */
  static LogEvent logEvent(JsonNode n) {
    switch (n.path("type").asText()) {
      case "process_info":
        return new LogEvent.Info(text(n, "processId"), n.path("pid").asLong(0), n.path("command").asText(""),
            status(n, "status"));
      case "stdout":
        return new LogEvent.Output(StdStream.STDOUT, text(n, "data"), longValue(n, "offset"), longValue(n, "bytes"));
      case "stderr":
        return new LogEvent.Output(StdStream.STDERR, text(n, "data"), longValue(n, "offset"), longValue(n, "bytes"));
      case "truncated":
        return new LogEvent.Truncated(stream(text(n, "stream")), longValue(n, "droppedBytes"), longValue(n, "offset"));
      case "exit":
        return new LogEvent.Exit(integer(n, "exitCode"), status(n, "status"), n.path("timedOut").asBoolean(false),
            signal(n));
      case "error":
        throw ErrorMapper.streamError(n);
      default:
        return null;
    }
  }

  static JsonNode parse(byte[] body, String what) {
    return parse(body, 0, body.length, what);
  }

  static JsonNode parse(byte[] body, int from, int to, String what) {
    try {
      JsonNode n = MAPPER.readTree(body, from, to - from);
      if (n == null || !n.isObject()) {
        throw malformed(what, "not a JSON object");
      }
      return n;
    } catch (JsonProcessingException e) {
      throw malformed(what, e.getOriginalMessage());
    } catch (java.io.IOException e) {
      throw malformed(what, "unreadable JSON");
    }
  }

  // ---- fields

  static String text(JsonNode n, String field) {
    JsonNode v = n.get(field);
    if (v == null || !v.isTextual()) {
      throw malformed("response", "field '" + field + "' is missing or not a string");
    }
    return v.asText();
  }

  static int integer(JsonNode n, String field) {
    JsonNode v = n.get(field);
    if (v == null || !v.isIntegralNumber()) {
      throw malformed("response", "field '" + field + "' is missing or not an integer");
    }
    return v.asInt();
  }

  static long longValue(JsonNode n, String field) {
    JsonNode v = n.get(field);
    if (v == null || !v.isIntegralNumber()) {
      throw malformed("response", "field '" + field + "' is missing or not an integer");
    }
    return v.asLong();
  }

  private static ProcessStatus status(JsonNode n, String field) {
    try {
      return ProcessStatus.fromWire(text(n, field));
    } catch (IllegalArgumentException e) {
      throw malformed("response", e.getMessage());
    }
  }

  private static Signal signal(JsonNode n) {
    JsonNode s = n.get("signal");
    return s == null || !s.isTextual() ? null : Signal.parse(s.asText()).orElse(null);
  }

  static Instant instant(JsonNode n, String field) {
    try {
      return Instant.parse(text(n, field));
    } catch (DateTimeParseException e) {
      throw malformed("response", "field '" + field + "' is not an ISO-8601 instant");
    }
  }

  private static StdStream stream(String name) {
    for (StdStream s : StdStream.values()) {
      if (s.wireName().equals(name)) {
        return s;
      }
    }
    throw malformed("event", "unknown stream '" + name + "'");
  }

  static SandboxException malformed(String what, String detail) {
    return new SandboxException("the agent sent a malformed " + what + ": " + detail
        + " (is the URL really a sandbox agent speaking protocol v1?)", null);
  }
}
