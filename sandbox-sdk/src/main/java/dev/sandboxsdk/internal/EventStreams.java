package dev.sandboxsdk.internal;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sandboxsdk.SandboxTimeoutException;
import java.io.IOException;
import java.time.Duration;
import java.util.function.Function;
import java.util.function.Predicate;
import okhttp3.Call;
import okhttp3.Request;
import okhttp3.Response;

/**
 * Opens the agent's server-sent event streams for a {@link RealSandbox} (exec output, process
 * logs, file and port watches): sends the request over {@link AgentHttp}, checks the answer, and
 * returns an {@link SseCursor} that reads with the stream liveness window and that closing the
 * sandbox closes. Thread-safe: it has no mutable state of its own.
 */
final class EventStreams {
  private static final long MAX_EVENT_LINE_BYTES = 8L << 20;

  private final AgentHttp http;

  EventStreams(AgentHttp http) {
    this.http = http;
  }

  <T> SseCursor<T> openStream(Request request, String what, Function<JsonNode, T> mapper, Predicate<T> isFinal,
      Abort abort) {
    return openEventStream(request, what, (json, from, to) -> mapper.apply(Wire.parse(json, from, to, "event")), isFinal,
        abort);
  }

  /** Like {@link #openStream}, for a mapper that reads each event's JSON bytes itself. */
  <T> SseCursor<T> openEventStream(Request request, String what, SseCursor.Mapper<T> mapper, Predicate<T> isFinal,
      Abort abort) {
    return openEventStream(request, what, mapper, isFinal, abort, false);
  }

  /**
   * @param startsCommand whether the agent answers only once it has started a command, which a
   *     loaded agent may queue: the wait for the answer then gets {@code readTimeout} if longer
   *     than the window (a log stream's answer comes at once, and keeps the window)
   */
  <T> SseCursor<T> openEventStream(Request request, String what, SseCursor.Mapper<T> mapper, Predicate<T> isFinal,
      Abort abort, boolean startsCommand) {
    http.ensureOpen();
    request = request.newBuilder().header("Accept", "text/event-stream").build();
    Duration idle = http.streamIdleTimeout();
    // Streams wait exactly the liveness window, shorter or longer than readTimeout; the IdleWatch
    // keeps it instead of okio's per-read timeout (see there why).
    Call call = http.withReadTimeout(Duration.ZERO).newCall(request);
    IdleWatch watch = new IdleWatch(idle.toNanos(), startsCommand ? http.readTimeout().toNanos() : idle.toNanos(),
        call::cancel);
    http.activity.begin();
    http.calls.add(call);
    abort.onAbort(call::cancel);
    Response response = null;
    SseCursor<T> cursor = null;
    watch.beforeRead();
    try {
      response = call.execute();
      String restarted = http.restartNote(response);
      if (!response.isSuccessful()) {
        throw ErrorMapper.fromResponse(response.code(), AgentHttp.boundedBytes(response.body()), restarted);
      }
      String type = response.header("Content-Type", "");
      if (!type.startsWith("text/event-stream")) {
        throw Wire.malformed("answer to " + what, "expected text/event-stream, got '" + type + "'");
      }
      SseCursor<T>[] self = new SseCursor[1];
      Response r = response;
      watch.afterRead();
      self[0] = new SseCursor<>(call, r, MAX_EVENT_LINE_BYTES, mapper, isFinal, what, idle, watch, () -> {
        http.calls.remove(call);
        http.untrack(self[0]);
        http.activity.end();
      });
      cursor = self[0];
      return http.track(cursor);
    } catch (IOException | RuntimeException e) {
      if (cursor != null) {
        cursor.close(); // its close action releases the call and the activity, once
      } else {
        watch.close();
        http.calls.remove(call);
        http.activity.end();
        if (response != null) {
          response.close();
        }
      }
      if (e instanceof IOException && watch.expired() && !http.isClosed()) {
        throw new SandboxTimeoutException(what + ": the agent did not answer within "
            + idle.toMillis() + " ms (the stream's liveness window)", e);
      }
      if (e instanceof IOException) {
        throw http.ioError((IOException) e, what);
      }
      throw (RuntimeException) e;
    }
  }
}
