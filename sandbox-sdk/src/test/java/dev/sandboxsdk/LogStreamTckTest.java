package dev.sandboxsdk;

import java.util.concurrent.Flow;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import okhttp3.mockwebserver.RecordedRequest;

/** The Reactive Streams TCK against {@link Sandbox#streamProcessLogs}: process {@code emit-<n>} yields n events. */
public class LogStreamTckTest extends ScriptedAgentTck<LogEvent> {
  private static final Pattern EMIT = Pattern.compile("/api/process/emit-(\\d+)/stream");

  @Override
  long count(RecordedRequest request) {
    Matcher m = EMIT.matcher(request.getRequestUrl().encodedPath());
    return m.matches() ? Long.parseLong(m.group(1)) : -1;
  }

  @Override
  String first(long n) {
    return "{\"type\":\"process_info\",\"processId\":\"emit-" + n
        + "\",\"pid\":4242,\"command\":\"emit\",\"status\":\"running\"}";
  }

  @Override
  String output(long i, long n) {
    return "{\"type\":\"stdout\",\"processId\":\"emit-" + n + "\",\"data\":\"" + i % 10 + "\",\"offset\":" + i
        + ",\"bytes\":1}";
  }

  @Override
  String last(long n) {
    return "{\"type\":\"exit\",\"processId\":\"emit-" + n
        + "\",\"exitCode\":0,\"status\":\"completed\",\"timedOut\":false,\"data\":\"completed\"}";
  }

  @Override
  Flow.Publisher<LogEvent> publisher(long n) {
    return sandbox.streamProcessLogs("emit-" + n);
  }

  @Override
  Flow.Publisher<LogEvent> failingPublisher() {
    return sandbox.streamProcessLogs("fail-with-500");
  }
}
