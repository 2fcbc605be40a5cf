package dev.sandboxsdk.agent.http;

import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import dev.sandboxsdk.agent.AgentConfig;
import dev.sandboxsdk.agent.process.ExecSpec;
import dev.sandboxsdk.agent.process.ManagedProcess;
import dev.sandboxsdk.agent.process.ProcessManager;
import dev.sandboxsdk.agent.text.ByteBuf;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** POST /api/execute (buffered, bounded) and POST /api/execute/stream (SSE, paced by the reader). */
final class ExecEndpoints {
  private static final Logger log = LoggerFactory.getLogger(ExecEndpoints.class);

  private final ProcessManager processes;
  private final AgentConfig config;

  ExecEndpoints(ProcessManager processes) {
    this.processes = processes;
    this.config = processes.config();
  }

  void execute(HttpExchange exchange) throws IOException {
    ExecSpec spec = ExecRequests.parse(Json.read(exchange, config.maxBodyBytes()), ExecRequests.Kind.EXECUTE, config);
    ManagedProcess p = processes.spawnForeground(spec, ManagedProcess.Kind.EXEC);
    BoundedCollector stdout = new BoundedCollector(spec.maxOutputBytes());
    BoundedCollector stderr = new BoundedCollector(spec.maxOutputBytes());
    p.startPumps(stdout, stderr);
    OutputStream heartbeat = awaitWithHeartbeats(exchange, p);
    ManagedProcess.Snapshot s = p.snapshot();
    ObjectNode body = Json.object();
    body.put("success", s.exitCode() == 0);
    body.put("exitCode", s.exitCode());
    body.put("stdout", stdout.text(spec.encoding()));
    body.put("stderr", stderr.text(spec.encoding()));
    body.put("command", s.command());
    body.put("duration", s.durationMs());
    body.put("timedOut", s.timedOut());
    body.put("truncated", stdout.truncated() || stderr.truncated());
    if (s.signal() != null) {
      body.put("signal", s.signal().name());
    }
    body.put("pid", s.pid());
    if (spec.encoding() == ExecSpec.Encoding.BASE64) {
      body.put("encoding", "base64");
    }
    if (heartbeat == null) {
      Responses.ok(exchange, body);
    } else {
      heartbeat.write(Json.MAPPER.writeValueAsBytes(Responses.stamp(body)));
      heartbeat.close();
    }
  }

  /**
   * Waits for a buffered exec. A command still running after the keep-alive interval gets its
   * 200 headers and then one space per interval: leading whitespace is valid JSON, it keeps idle
   * proxies from closing the call, and a failed write is how the agent learns that the client
   * hung up, which kills the command (the JDK server gives no other signal).
   *
   * @return the open body stream if headers were sent, else null
   */
  private OutputStream awaitWithHeartbeats(HttpExchange exchange, ManagedProcess p) throws IOException {
    OutputStream body = null;
    boolean disconnected = false;
    while (true) {
      try {
        p.finished().get(config.keepAliveMs(), TimeUnit.MILLISECONDS);
        return body;
      } catch (TimeoutException e) {
        if (disconnected) {
          continue;
        }
        try {
          if (body == null) {
            exchange.getResponseHeaders().set("Content-Type", Responses.JSON_CONTENT_TYPE);
            exchange.sendResponseHeaders(200, 0);
            body = exchange.getResponseBody();
          }
          body.write(' ');
          body.flush();
        } catch (IOException io) {
          log.debug("client of {} hung up: {}", p.id(), io.toString());
          processes.killForDisconnect(p);
          disconnected = true;
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        processes.killForDisconnect(p);
        awaitUninterruptibly(p);
        throw new IOException("interrupted");
      } catch (ExecutionException e) {
        throw new IllegalStateException(e);
      }
    }
  }

  void executeStream(HttpExchange exchange) throws IOException {
    ExecSpec spec = ExecRequests.parse(Json.read(exchange, config.maxBodyBytes()), ExecRequests.Kind.EXECUTE_STREAM, config);
    ManagedProcess p = processes.spawnForeground(spec, ManagedProcess.Kind.STREAM);
    SseWriter sse;
    try {
      sse = SseWriter.open(exchange);
      ObjectNode start = Json.object();
      start.put("type", "start");
      start.put("command", p.command());
      start.put("pid", p.pid());
      start.put("processId", p.id());
      sse.send(start);
    } catch (IOException e) {
      processes.killForDisconnect(p);
      p.startPumps(null, null);
      throw e;
    }
    try {
      relayUntilComplete(p, spec, sse);
    } catch (RuntimeException e) {
      processes.killForDisconnect(p);
      sse.sendInternalError(e); // before the close below, also when the final flush failed
      throw e;
    } finally {
      sse.close();
    }
  }

  private void relayUntilComplete(ManagedProcess p, ExecSpec spec, SseWriter sse) {
    StreamSink out = new StreamSink(new OutputEvents("stdout", null, spec.encoding(), 0), sse, p);
    StreamSink err = new StreamSink(new OutputEvents("stderr", null, spec.encoding(), 0), sse, p);
    p.startPumps(out, err);
    long keepAliveNanos = TimeUnit.MILLISECONDS.toNanos(config.keepAliveMs());
    while (true) {
      try {
        p.finished().get(sse.nanosUntilKeepAlive(keepAliveNanos), TimeUnit.NANOSECONDS);
        break;
      } catch (TimeoutException e) {
        if (!sse.keepAliveIfIdle(keepAliveNanos)) {
          processes.killForDisconnect(p);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        processes.killForDisconnect(p);
        awaitUninterruptibly(p);
        break;
      } catch (ExecutionException e) {
        throw new IllegalStateException(e);
      }
    }
    RuntimeException failed = out.failure != null ? out.failure : err.failure;
    if (failed != null) {
      throw failed;
    }
    try {
      out.flush();
      err.flush();
      ManagedProcess.Snapshot s = p.snapshot();
      ObjectNode complete = Json.object();
      complete.put("type", "complete");
      complete.put("exitCode", s.exitCode());
      complete.put("timedOut", s.timedOut());
      if (s.signal() != null) {
        complete.put("signal", s.signal().name());
      }
      complete.put("duration", s.durationMs());
      sse.send(complete);
    } catch (IOException e) {
      log.debug("client of {} left before complete: {}", p.id(), e.toString());
    }
  }

  static void awaitUninterruptibly(ManagedProcess p) {
    boolean interrupted = false;
    while (true) {
      try {
        p.finished().get();
        break;
      } catch (InterruptedException e) {
        interrupted = true;
      } catch (ExecutionException e) {
        throw new IllegalStateException(e);
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  /** Sends output as events; a broken connection kills the process (the stream owns it). */
  private final class StreamSink implements ManagedProcess.OutputSink {
    private final OutputEvents events;
    private final SseWriter sse;
    private final ManagedProcess process;
    private final ByteBuf frame = new ByteBuf(96 * 1024);

    StreamSink(OutputEvents events, SseWriter sse, ManagedProcess process) {
      this.events = events;
      this.sse = sse;
      this.process = process;
    }

    /** Set when this sink failed for a reason other than the client leaving. */
    private volatile RuntimeException failure;

    @Override
    public synchronized void write(byte[] bytes, int off, int len) throws IOException {
      try {
        if (events.encode(bytes, off, len, false, frame)) {
          sse.send(frame);
        }
      } catch (IOException e) {
        processes.killForDisconnect(process);
        throw e;
      } catch (RuntimeException e) {
        // Output would be lost: stop the process and end the stream with an error, not complete.
        failure = e;
        processes.killForDisconnect(process);
        throw e;
      }
    }

    synchronized void flush() throws IOException {
      if (events.flush(frame)) {
        sse.send(frame);
      }
    }
  }

  /** Keeps up to {@code limit} bytes of a stream and counts the rest; never blocks the process. */
  private static final class BoundedCollector implements ManagedProcess.OutputSink {
    private final int limit;
    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    private boolean truncated;

    BoundedCollector(int limit) {
      this.limit = limit;
    }

    @Override
    public synchronized void write(byte[] b, int off, int len) {
      int room = limit - bytes.size();
      if (len > room) {
        truncated = true;
      }
      if (room > 0) {
        bytes.write(b, off, Math.min(room, len));
      }
    }

    synchronized boolean truncated() {
      return truncated;
    }

    synchronized String text(ExecSpec.Encoding encoding) {
      byte[] data = bytes.toByteArray();
      // new String(UTF_8) replaces malformed input with U+FFFD, as the streams do.
      return encoding == ExecSpec.Encoding.BASE64
          ? Base64.getEncoder().encodeToString(data)
          : new String(data, StandardCharsets.UTF_8);
    }
  }
}
