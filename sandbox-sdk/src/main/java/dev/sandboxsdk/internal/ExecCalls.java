package dev.sandboxsdk.internal;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sandboxsdk.Command;
import dev.sandboxsdk.ExecEvent;
import dev.sandboxsdk.ExecOptions;
import dev.sandboxsdk.ExecResult;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.StdStream;
import java.io.IOException;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Flow;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.HttpUrl;
import okhttp3.Request;
import okhttp3.Response;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code exec}, {@code execAsync} and {@code execStream} of a {@link RealSandbox}: the plain
 * {@code POST /api/execute} call, the event stream of {@code POST /api/execute/stream} (also
 * behind an exec with an output listener), and killing an exec at once when it is cancelled or
 * interrupted. Thread-safe: it has no mutable state of its own.
 */
final class ExecCalls {
  // Logs under RealSandbox's name, as before this class was split from it, so that logging
  // configurations keep working.
  private static final Logger log = LoggerFactory.getLogger(RealSandbox.class);
  /** The agent's documented default, for when its published limits were not fetched. */
  private static final long AGENT_DEFAULT_MAX_OUTPUT_BYTES = 16L << 20;

  private final AgentHttp http;
  private final EventStreams streams;
  private final HttpUrl executeUrl;
  private final HttpUrl executeStreamUrl;
  private final Duration execTimeout;
  /** The session every command of this instance runs in, or null for none. */
  private final String sessionId;

  ExecCalls(AgentHttp http, EventStreams streams, Duration execTimeout) {
    this(http, streams, execTimeout, null);
  }

  private ExecCalls(AgentHttp http, EventStreams streams, Duration execTimeout, String sessionId) {
    this.http = http;
    this.streams = streams;
    this.executeUrl = http.url("api", "execute");
    this.executeStreamUrl = http.url("api", "execute", "stream");
    this.execTimeout = execTimeout;
    this.sessionId = sessionId;
  }

  /** The same calls, each run in session {@code id}. */
  ExecCalls inSession(String id) {
    return new ExecCalls(http, streams, execTimeout, Objects.requireNonNull(id, "id == null"));
  }

  private com.fasterxml.jackson.databind.node.ObjectNode body(Command command, ExecOptions options, Duration timeout,
      boolean stream) {
    com.fasterxml.jackson.databind.node.ObjectNode body = Wire.execBody(command, options, timeout, stream);
    if (sessionId != null) {
      body.put("sessionId", sessionId);
    }
    return body;
  }

  ExecResult exec(Command command, ExecOptions options) {
    Objects.requireNonNull(command, "command == null");
    Objects.requireNonNull(options, "options == null");
    http.ensureOpen();
    if (options.onOutput() != null) {
      return execCollecting(command, options, null);
    }
    http.activity.begin();
    try {
      Duration timeout = timeoutOf(options);
      Call call = execCall(command, options, timeout);
      return Wire.execResult(executeExec(call, "exec " + command.display(), execAnswerLimit(options)));
    } finally {
      http.activity.end();
    }
  }

  CompletableFuture<ExecResult> execAsync(Command command, ExecOptions options) {
    Objects.requireNonNull(command, "command == null");
    Objects.requireNonNull(options, "options == null");
    http.ensureOpen();
    if (options.onOutput() != null) {
      CancellableFuture<ExecResult> future = new CancellableFuture<>();
      http.activity.begin();
      try {
        http.executor().execute(() -> {
          try {
            future.complete(execCollecting(command, options, future));
          } catch (Throwable t) {
            future.completeExceptionally(t);
          } finally {
            http.activity.end();
          }
        });
      } catch (RuntimeException e) {
        http.activity.end();
        throw new SandboxException("cannot start execAsync: " + e, e);
      }
      return future;
    }
    Duration timeout = timeoutOf(options);
    Call call = execCall(command, options, timeout);
    String what = "exec " + command.display();
    CancellableFuture<ExecResult> future = new CancellableFuture<>();
    future.onCancel(() -> {
      call.cancel();
      killExecSoon(call.request().header(EXEC_ID_HEADER));
    });
    http.activity.begin();
    http.calls.add(call);
    call.enqueue(new Callback() {
      @Override
      public void onFailure(Call c, IOException e) {
        finish(c);
        future.completeExceptionally(http.ioError(e, what));
      }

      @Override
      public void onResponse(Call c, Response response) {
        try (response) {
          http.readExecBodyWithWindow(response);
          future.complete(Wire.execResult(http.readJson(c, response, what, execAnswerLimit(options))));
        } catch (IOException e) {
          future.completeExceptionally(ErrorMapper.fromIo(e, what));
        } catch (Throwable t) {
          future.completeExceptionally(t);
        } finally {
          finish(c);
        }
      }

      private void finish(Call c) {
        http.calls.remove(c);
        http.activity.end();
      }
    });
    return future;
  }

  private Call execCall(Command command, ExecOptions options, Duration timeout) {
    Request request = http.post(executeUrl, body(command, options, timeout, false)).newBuilder()
        .header(EXEC_ID_HEADER, newExecId()).build();
    Call call = http.execClient().newCall(request);
    if (timeout != null) {
      // The agent enforces the timeout; this deadline only guards against an agent that never answers.
      call.timeout().timeout(timeout.toMillis() + 60_000, TimeUnit.MILLISECONDS);
    }
    return call;
  }

  /** exec with an output listener: runs over the event stream and collects the output. */
  private ExecResult execCollecting(Command command, ExecOptions options, CancellableFuture<?> future) {
    // The agent's documented default for a plain exec; an agent started with another
    // --max-output-bytes publishes it in /api/version, which this path does not fetch (yet).
    int max = options.maxOutputBytes() > 0 ? options.maxOutputBytes() : 16 << 20;
    OutputCollector stdout = new OutputCollector(max);
    OutputCollector stderr = new OutputCollector(max);
    Abort abort = new Abort();
    if (future != null) {
      future.onCancel(abort::abort);
    }
    EventCursor<ExecEvent> opened = openExecStream(command, options, abort);
    // A blocking exec waits for events interruptibly, so that an interrupt kills the command at
    // once rather than at the next keep-alive; execAsync's thread is cancelled through the abort.
    EventCursor<ExecEvent> cursor = future == null ? new InterruptibleCursor<>(opened, http.executor()) : opened;
    abort.onAbort(cursor::close);
    String what = "exec " + command.display();
    try {
      return collect(command, options, cursor, stdout, stderr, what);
    } catch (RuntimeException | Error e) {
      abort.abort(); // a listener that threw, a broken stream, an interrupt: kill the command now
      throw e;
    }
  }

  private ExecResult collect(Command command, ExecOptions options, EventCursor<ExecEvent> cursor,
      OutputCollector stdout, OutputCollector stderr, String what) {
    try (cursor) {
      ExecEvent.Start start = null;
      for (;;) {
        ExecEvent e;
        try {
          e = cursor.next();
        } catch (RuntimeException ex) {
          throw ex;
        } catch (InterruptedException ex) {
          Thread.currentThread().interrupt();
          throw new SandboxException(what + ": interrupted", ex); // the caller aborts: the command is killed
        } catch (Exception ex) {
          Throwable mapped = http.streamError(ex, what);
          throw mapped instanceof RuntimeException ? (RuntimeException) mapped : new SandboxException(what, ex);
        }
        if (e instanceof ExecEvent.Start) {
          start = (ExecEvent.Start) e;
        } else if (e instanceof ExecEvent.Stdout) {
          ExecEvent.Stdout out = (ExecEvent.Stdout) e;
          stdout.add(out.text(), out.bytes());
          notify(options, StdStream.STDOUT, out.text(), cursor);
        } else if (e instanceof ExecEvent.Stderr) {
          ExecEvent.Stderr err = (ExecEvent.Stderr) e;
          stderr.add(err.text(), err.bytes());
          notify(options, StdStream.STDERR, err.text(), cursor);
        } else if (e instanceof ExecEvent.Complete) {
          ExecEvent.Complete done = (ExecEvent.Complete) e;
          return new ExecResult(done.exitCode(), stdout.text(), stderr.text(),
              start != null ? start.command() : command.display(), done.duration(), done.timedOut(),
              stdout.truncated() || stderr.truncated(), done.signal(), start != null ? start.pid() : 0,
              stdout.written(), stderr.written());
        }
      }
    }
  }

  private static void notify(ExecOptions options, StdStream stream, String text, EventCursor<ExecEvent> cursor) {
    try {
      options.onOutput().onOutput(stream, text);
    } catch (RuntimeException | Error e) {
      cursor.close(); // hangs up: the agent kills the command
      throw new SandboxException("the onOutput listener threw " + e + "; the command was stopped", e);
    }
  }

  Flow.Publisher<ExecEvent> execStream(Command command, ExecOptions options) {
    Objects.requireNonNull(command, "command == null");
    Objects.requireNonNull(options, "options == null");
    String what = "execStream " + command.display();
    return new EventPublisher<>(abort -> openExecStream(command, options, abort), http.executor(),
        t -> http.streamError(t, what));
  }

  private EventCursor<ExecEvent> openExecStream(Command command, ExecOptions options, Abort abort) {
    http.ensureOpen();
    String execId = newExecId();
    Request request = http.post(executeStreamUrl, body(command, options, timeoutOf(options), true))
        .newBuilder().header(EXEC_ID_HEADER, execId).build();
    AtomicReference<EventCursor<ExecEvent>> opened = new AtomicReference<>();
    abort.onAbort(() -> {
      EventCursor<ExecEvent> c = opened.get();
      if (c == null || !c.isFinished()) { // after the complete event there is nothing left to kill
        killExecSoon(execId);
      }
    });
    EventCursor<ExecEvent> cursor = streams.openEventStream(request, "execStream " + command.display(),
        Wire.execEventReader(), e -> e instanceof ExecEvent.Complete, abort, true);
    opened.set(cursor);
    return cursor;
  }

  // ---- killing an exec at once

  /**
   * The request header naming an exec, so that a cancel can kill it by {@code DELETE
   * /api/execute/{id}} at once instead of waiting for the agent to notice the closed connection
   * (docs/protocol/exec.md, "DELETE /api/execute/{id}").
   */
  static final String EXEC_ID_HEADER = "X-Sandbox-Exec-Id";

  /** How long a kill request may take; it is best effort, the hang-up is the fallback. */
  private static final long KILL_TIMEOUT_MS = 5_000;

  /**
   * A fresh exec id: 128 random bits in hex, so that ids of different clients do not collide.
   * Not {@code UUID.randomUUID()}: its SecureRandom is seeded on first use, which can cost
   * hundreds of milliseconds on a loaded machine, and the id needs no secrecy (the kill route
   * requires the token like every other).
   */
  static String newExecId() {
    ThreadLocalRandom random = ThreadLocalRandom.current();
    return String.format("%016x%016x", random.nextLong(), random.nextLong());
  }

  /**
   * Asks the agent to kill the exec {@code execId} now, without waiting for the answer. Best
   * effort: the exec may have finished (404), the agent may predate the route (404) or be
   * unreachable; then the closed connection still ends the command once the agent notices it.
   */
  void killExecSoon(String execId) {
    if (execId == null) {
      return;
    }
    try {
      Call kill = http.client.newCall(http.delete(http.url("api", "execute", execId)));
      kill.timeout().timeout(KILL_TIMEOUT_MS, TimeUnit.MILLISECONDS);
      kill.enqueue(new Callback() {
        @Override
        public void onFailure(Call c, IOException e) {
          log.debug("kill of exec {} failed: {}", execId, e.toString());
        }

        @Override
        public void onResponse(Call c, Response response) {
          response.close();
          log.debug("kill of exec {}: HTTP {}", execId, response.code());
        }
      });
    } catch (RuntimeException e) {
      log.debug("kill of exec {} not sent: {}", execId, e.toString());
    }
  }

  /**
   * Runs an exec call and waits for its answer interruptibly: a blocking socket read does not
   * notice an interrupt, so the call runs on the dispatcher and this thread waits on a future. An
   * interrupt cancels the call, kills the exec at once and restores the flag.
   */
  private JsonNode executeExec(Call call, String what, long maxAnswerBytes) {
    CompletableFuture<JsonNode> answer = new CompletableFuture<>();
    http.calls.add(call);
    try {
      call.enqueue(new Callback() {
        @Override
        public void onFailure(Call c, IOException e) {
          answer.completeExceptionally(http.ioError(e, what));
        }

        @Override
        public void onResponse(Call c, Response response) {
          try (response) {
            http.readExecBodyWithWindow(response);
            answer.complete(http.readJson(c, response, what, maxAnswerBytes));
          } catch (IOException e) {
            answer.completeExceptionally(ErrorMapper.fromIo(e, what));
          } catch (Throwable t) {
            answer.completeExceptionally(t);
          }
        }
      });
      return answer.get();
    } catch (InterruptedException e) {
      call.cancel();
      killExecSoon(call.request().header(EXEC_ID_HEADER));
      Thread.currentThread().interrupt();
      throw new SandboxException(what + ": interrupted", e);
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof RuntimeException) {
        throw (RuntimeException) cause;
      }
      if (cause instanceof Error) {
        throw (Error) cause;
      }
      throw new SandboxException(what + ": " + cause, cause);
    } finally {
      http.calls.remove(call);
    }
  }

  // ---- plumbing

  private Duration timeoutOf(ExecOptions options) {
    return options.timeout() != null ? options.timeout() : execTimeout;
  }

  /**
   * The most an exec answer can be: both streams at the output limit, every byte a control
   * character. The limit is the call's {@code maxOutputBytes}, else the agent's published default
   * if it was fetched, else its documented default.
   */
  private long execAnswerLimit(ExecOptions options) {
    return AgentHttp.answerLimit(options.maxOutputBytes() > 0 ? options.maxOutputBytes()
        : http.publishedLimit("defaultMaxOutputBytes", AGENT_DEFAULT_MAX_OUTPUT_BYTES));
  }
}
