package dev.sandboxsdk;

import java.util.concurrent.Flow;
import okhttp3.mockwebserver.RecordedRequest;

/** The Reactive Streams TCK against {@link Sandbox#execStream}: {@code emit <n>} yields n events. */
public class ExecStreamTckTest extends ScriptedAgentTck<ExecEvent> {

  @Override
  long count(RecordedRequest request) {
    var argv = Fixtures.body(request).path("argv");
    return argv.path(0).asText().equals("emit") ? Long.parseLong(argv.path(1).asText()) : -1;
  }

  @Override
  String first(long n) {
    return "{\"type\":\"start\",\"command\":\"emit " + n + "\",\"pid\":4242,\"processId\":\"exec_1\"}";
  }

  @Override
  String output(long i, long n) {
    return "{\"type\":\"stdout\",\"data\":\"" + i % 10 + "\",\"offset\":" + i + ",\"bytes\":1}";
  }

  @Override
  String last(long n) {
    return "{\"type\":\"complete\",\"exitCode\":0,\"timedOut\":false,\"duration\":1}";
  }

  @Override
  Flow.Publisher<ExecEvent> publisher(long n) {
    return sandbox.execStream(Command.of("emit", Long.toString(n)), ExecOptions.defaults());
  }

  @Override
  Flow.Publisher<ExecEvent> failingPublisher() {
    return sandbox.execStream(Command.of("fail-with-500"), ExecOptions.defaults());
  }
}
