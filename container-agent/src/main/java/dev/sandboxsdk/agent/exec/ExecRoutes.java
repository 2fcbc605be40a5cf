package dev.sandboxsdk.agent.exec;

import com.sun.net.httpserver.HttpExchange;
import dev.sandboxsdk.agent.AgentConfig;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.http.Json;
import dev.sandboxsdk.agent.http.Query;
import dev.sandboxsdk.agent.http.Replies;
import dev.sandboxsdk.agent.http.Responses;
import dev.sandboxsdk.agent.http.Routes;
import dev.sandboxsdk.agent.http.SseWriter;
import dev.sandboxsdk.agent.process.ExecSpec;
import dev.sandboxsdk.agent.process.ManagedProcess;
import dev.sandboxsdk.agent.process.ProcessManager;
import dev.sandboxsdk.agent.session.Sessions;
import dev.sandboxsdk.agent.text.ByteBuf;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * POST /api/execute (buffered, bounded), POST /api/execute/stream (SSE, paced by the reader) and
 * DELETE /api/execute/{id}: the request is parsed by {@link ExecRequests}, the command spawned by
 * the {@link ProcessManager}, its output kept by {@link ExecOutput} or encoded by {@link
 * OutputEvents}; this class writes the answer and watches the client.
 */
public final class ExecRoutes {
  private static final Logger log = LoggerFactory.getLogger(ExecRoutes.class);

  private final ProcessManager processes;
  private final AgentConfig config;
  private final Sessions sessions;

  /** {@code sessions}: where a request's {@code sessionId} is looked up. */
  public ExecRoutes(ProcessManager processes, Sessions sessions) {
    this.processes = processes;
    this.config = processes.config();
    this.sessions = sessions;
  }

  /** Registers the exec routes: buffered, streamed, and killing a running exec by its id. */
  public void register(Routes routes) {
    routes.on("POST", "/api/execute", exchange -> {
      Query.none(exchange);
      execute(exchange);
    }).on("POST", "/api/execute/stream", exchange -> {
      Query.none(exchange);
      executeStream(exchange);
    }).on("DELETE", "/api/execute/", "", Replies::decode, (exchange, id) -> {
      Query.none(exchange);
      kill(exchange, id);
    });
  }

  void execute(HttpExchange exchange) throws IOException {
    ExecSpec spec = ExecRequests.parse(Json.read(exchange, config.maxBodyBytes(), processes.outputBudget()), ExecRequests.Kind.EXECUTE, config);
    // A session's command holds it until the process has ended (commands in one session take turns).
    try (Sessions.Run run = sessions.enter(spec)) {
      execute(exchange, run);
    }
  }

  private void execute(HttpExchange exchange, Sessions.Run run) throws IOException {
    ExecSpec spec = run.spec();
    ExecOutput[] buffers = ExecOutput.open(spec.maxOutputBytes(), processes.outputBudget()); // or 503
    ExecOutput stdout = buffers[0];
    ExecOutput stderr = buffers[1];
    try {
      ManagedProcess p = processes.spawnForeground(spec, ManagedProcess.Kind.EXEC, execId(exchange));
      run.stopWith(() -> processes.killForDisconnect(p));
      OutputStream heartbeat;
      try {
        p.startPumps(stdout, stderr);
        heartbeat = awaitWithHeartbeats(exchange, p);
      } catch (RuntimeException | Error e) { // its caller gets an error, not its result: it must not run on
        processes.killForDisconnect(p);
        throw e;
      }
      // The result is what the command wrote; a child it left behind may write on, and must not
      // change the body between measuring its length and writing it.
      stdout.seal();
      stderr.seal();
      if (heartbeat == null) {
        respond(exchange, spec, p, stdout, stderr);
      } else {
        respondAfterHeartbeats(heartbeat, spec, p, stdout, stderr);
      }
    } finally {
      stdout.release();
      stderr.release();
    }
  }

  /**
   * Writes the result with a {@code Content-Length} measured first. Anything that fails before the
   * headers (an OutOfMemoryError included) becomes an error response; a failure after them leaves
   * the body short of its length, and the server then closes the connection, so the client sees
   * a broken response, never a complete-looking one.
   */
  private void respond(HttpExchange exchange, ExecSpec spec, ManagedProcess p, ExecOutput stdout, ExecOutput stderr)
      throws IOException {
    ResultFrame result = new ResultFrame(spec, p, stdout, stderr);
    long length = result.length();
    ByteBuf frame = new ByteBuf(FRAME_BYTES);
    exchange.getResponseHeaders().set("Content-Type", Responses.JSON_CONTENT_TYPE);
    exchange.sendResponseHeaders(200, length);
    OutputStream body = exchange.getResponseBody();
    result.writeTo(body, frame);
    body.close();
  }

  /**
   * The headers (200, chunked) and some spaces are out. If the result cannot be produced, what
   * follows the spaces is the protocol's error object instead, which is still valid JSON; a
   * failure once the result has started leaves the body cut short (invalid JSON).
   */
  private void respondAfterHeartbeats(OutputStream body, ExecSpec spec, ManagedProcess p, ExecOutput stdout,
      ExecOutput stderr) throws IOException {
    ResultFrame result;
    ByteBuf frame;
    try {
      result = new ResultFrame(spec, p, stdout, stderr);
      frame = new ByteBuf(FRAME_BYTES);
    } catch (RuntimeException | OutOfMemoryError e) {
      log.error("cannot build the result of {}", p.id(), e);
      body.write(Responses.errorBody(new AgentException(ErrorCode.INTERNAL_ERROR,
          "internal error: " + e.getClass().getSimpleName() + " while writing the result")));
      body.close();
      return;
    }
    result.writeTo(body, frame);
    body.close();
  }

  /** Initial size of the frame output is escaped into; it grows to at most about 100 KiB. */
  private static final int FRAME_BYTES = 32 * 1024;

  /**
   * The result object of an exec, written in place: {@code {"success":..,"exitCode":..,"stdout":}
   * from the buffers, {@code "stderr"} likewise, then the small fields, serialized by Jackson.
   */
  private static final class ResultFrame {
    private final ExecSpec.Encoding encoding;
    private final ExecOutput stdout;
    private final ExecOutput stderr;
    private final byte[] head;
    private final byte[] middle = ",\"stderr\":".getBytes(StandardCharsets.US_ASCII);
    private final byte[] tail;

    ResultFrame(ExecSpec spec, ManagedProcess p, ExecOutput stdout, ExecOutput stderr) throws IOException {
      this.encoding = spec.encoding();
      this.stdout = stdout;
      this.stderr = stderr;
      ManagedProcess.Snapshot s = p.snapshot();
      this.head = ("{\"success\":" + (s.exitCode() == 0) + ",\"exitCode\":" + s.exitCode() + ",\"stdout\":")
          .getBytes(StandardCharsets.US_ASCII);
      boolean truncated = stdout.truncated() || stderr.truncated();
      String truncatedReason = !truncated ? null
          : stdout.budgetExhausted() || stderr.budgetExhausted() ? "outputBudget" : "maxOutputBytes";
      ExecMessages.ResultTail rest = new ExecMessages.ResultTail(s.command(), s.durationMs(), s.timedOut(), truncated,
          stdout.written(), stderr.written(), truncatedReason, s.signal() == null ? null : s.signal().name(), s.pid(),
          encoding == ExecSpec.Encoding.BASE64 ? "base64" : null);
      byte[] json = Responses.stamped(rest, false);
      json[0] = ','; // {"command":...} continues the object the head opened
      this.tail = json;
    }

    long length() {
      return head.length + stdout.jsonLength(encoding) + middle.length + stderr.jsonLength(encoding) + tail.length;
    }

    void writeTo(OutputStream out, ByteBuf frame) throws IOException {
      out.write(head);
      stdout.writeJson(encoding, out, frame);
      out.write(middle);
      stderr.writeJson(encoding, out, frame);
      out.write(tail);
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

  /** The id the client chose for its exec ({@code X-Sandbox-Exec-Id}), or null to generate one. */
  private static String execId(HttpExchange exchange) {
    return exchange.getRequestHeaders().getFirst(ProcessManager.EXEC_ID_HEADER);
  }

  /**
   * DELETE /api/execute/{id}: terminates a running exec now, instead of when a keep-alive write
   * finds its client gone. Answers right after the SIGTERM (for an exec still being spawned: once
   * its kill is due the moment it has started); 404 if no exec of that id is running.
   */
  void kill(HttpExchange exchange, String id) throws IOException {
    processes.killExec(id);
    Responses.ok(exchange, new ExecMessages.Killed(id, "SIGTERM"));
  }

  void executeStream(HttpExchange exchange) throws IOException {
    ExecSpec parsed = ExecRequests.parse(Json.read(exchange, config.maxBodyBytes(), processes.outputBudget()), ExecRequests.Kind.EXECUTE_STREAM, config);
    try (Sessions.Run run = sessions.enter(parsed)) {
      executeStream(exchange, run);
    }
  }

  private void executeStream(HttpExchange exchange, Sessions.Run run) throws IOException {
    ExecSpec spec = run.spec();
    ManagedProcess p = processes.spawnForeground(spec, ManagedProcess.Kind.STREAM, execId(exchange));
    run.stopWith(() -> processes.killForDisconnect(p));
    SseWriter sse;
    try {
      sse = SseWriter.open(exchange);
      sse.send(new ExecMessages.StartEvent(p.command(), p.pid(), p.id()));
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
      sse.send(new ExecMessages.CompleteEvent(s.exitCode(), s.timedOut(), s.signal() == null ? null : s.signal().name(),
          s.durationMs()));
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
}
