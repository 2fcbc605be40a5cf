package dev.sandboxsdk.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.LogEvent;
import dev.sandboxsdk.ProcessInfo;
import dev.sandboxsdk.SandboxInvalidRequestException;
import dev.sandboxsdk.SandboxProcess;
import dev.sandboxsdk.SandboxTerminals;
import dev.sandboxsdk.Signal;
import dev.sandboxsdk.StdStream;
import dev.sandboxsdk.Terminal;
import dev.sandboxsdk.TerminalOptions;
import dev.sandboxsdk.TerminalOutput;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Flow;

/**
 * The {@link SandboxTerminals} of a {@link RealSandbox}: a terminal is a process started with
 * {@code pty}, typed input goes through the stdin route in base64 (any bytes), resize through
 * {@code POST /api/process/{id}/resize}, and output through the process's event stream with
 * {@code encoding=base64}, so the bytes arrive exactly as the program wrote them. Stateless and
 * thread-safe.
 */
final class RealTerminals implements SandboxTerminals {
  private final RealSandbox sandbox;
  private final AgentHttp http;

  RealTerminals(RealSandbox sandbox) {
    this.sandbox = sandbox;
    this.http = sandbox.http;
  }

  @Override
  public Terminal open(TerminalOptions options) {
    Objects.requireNonNull(options, "options == null");
    JsonNode n = http.call(http.post(http.url("api", "process", "start"), Wire.terminalBody(options)),
        "terminals().open " + options.command().display());
    return new RealTerminal(Wire.text(n, "processId"), n.path("pid").asLong(0), Wire.text(n, "command"));
  }

  @Override
  public Terminal attach(String id) {
    JsonNode p = http.call(http.get(http.processUrl(id)), "terminals().attach " + id).path("process");
    if (!p.path("pty").isObject()) {
      throw new SandboxInvalidRequestException("process '" + id + "' does not run on a terminal; attach to it with"
          + " attachProcess", null, "NOT_A_TERMINAL", 0, Map.of("processId", id));
    }
    return new RealTerminal(Wire.text(p, "id"), p.path("pid").asLong(0), Wire.text(p, "command"));
  }

  /** A handle holding no connection: every call is a request. Immutable, so thread-safe. */
  private final class RealTerminal implements Terminal {
    private final String id;
    private final long pid;
    private final String command;

    RealTerminal(String id, long pid, String command) {
      this.id = id;
      this.pid = pid;
      this.command = command;
    }

    @Override
    public String id() {
      return id;
    }

    @Override
    public long pid() {
      return pid;
    }

    @Override
    public void write(byte[] bytes) {
      sandbox.processes.writeStdin(id, Objects.requireNonNull(bytes, "bytes == null"), "write to terminal " + id);
    }

    @Override
    public void write(String text) {
      write(Objects.requireNonNull(text, "text == null").getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public void resize(int cols, int rows) {
      Checks.terminalSize(cols, rows, TerminalOptions.MAX_SIZE);
      ObjectNode body = Wire.MAPPER.createObjectNode().put("cols", cols).put("rows", rows);
      http.call(http.post(http.processUrl(id).newBuilder().addPathSegment("resize").build(), body),
          "resize terminal " + id);
    }

    @Override
    public Flow.Publisher<TerminalOutput> output(long fromOffset) {
      if (fromOffset < 0) {
        throw new IllegalArgumentException("fromOffset < 0: " + fromOffset);
      }
      String what = "output of terminal " + id;
      http.processUrl(id); // checks the id now, not on the first request
      return new EventPublisher<>(abort -> new OutputCursor(
          sandbox.processes.openLogStream(id, new LogCursor.Start(fromOffset, -1, -1), true, abort)), http.executor(),
          t -> http.streamError(t, what));
    }

    @Override
    public void kill() {
      sandbox.killProcess(id, Signal.SIGHUP);
    }

    @Override
    public ProcessInfo waitForExit(Duration timeout) {
      return process().waitForExit(timeout);
    }

    @Override
    public SandboxProcess process() {
      return new RealSandboxProcess(sandbox, id, pid, command);
    }

    @Override
    public String toString() {
      return "Terminal{" + id + ", pid " + pid + "}";
    }
  }

  /** The terminal's output events as raw bytes; the info and exit events are not passed on. */
  private static final class OutputCursor implements EventCursor<TerminalOutput> {
    private final EventCursor<LogEvent> events;

    OutputCursor(EventCursor<LogEvent> events) {
      this.events = events;
    }

    @Override
    public TerminalOutput next() throws Exception {
      for (;;) {
        LogEvent e = events.next();
        if (e == null) {
          return null;
        }
        if (e instanceof LogEvent.Output) {
          LogEvent.Output out = (LogEvent.Output) e;
          if (out.stream() == StdStream.STDOUT) { // a terminal has no stderr of its own
            byte[] bytes;
            try {
              bytes = Base64.getDecoder().decode(out.text());
            } catch (IllegalArgumentException bad) {
              throw Wire.malformed("terminal output event", "data is not base64");
            }
            if (bytes.length > 0) {
              return new TerminalOutput(out.offset(), bytes);
            }
          }
        } else if (e instanceof LogEvent.Exit && events.isFinished()) {
          return null;
        }
      }
    }

    @Override
    public boolean isFinished() {
      return events.isFinished();
    }

    @Override
    public void close() {
      events.close();
    }
  }
}
