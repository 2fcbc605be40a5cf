package dev.sandboxsdk;

import java.util.concurrent.Flow;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import okhttp3.mockwebserver.RecordedRequest;

/**
 * The Reactive Streams TCK against {@link SandboxFiles#watch}: watching {@code emit-<n>} yields n
 * events ({@code watching}, then changes), then {@code stopped}, which ends the stream without
 * being an element.
 */
public class WatchStreamTckTest extends ScriptedAgentTck<FileEvent> {
  private static final Pattern EMIT = Pattern.compile("emit-(\\d+)");

  @Override
  long count(RecordedRequest request) {
    if (!request.getRequestUrl().encodedPath().equals("/api/watch")) {
      return -1;
    }
    Matcher m = EMIT.matcher(Fixtures.body(request).path("path").asText());
    return m.matches() ? Long.parseLong(m.group(1)) : -1;
  }

  @Override
  String first(long n) {
    return "{\"type\":\"watching\",\"path\":\"/ws/emit-" + n + "\",\"watchId\":\"watch-1\",\"recursive\":true,"
        + "\"directories\":1,\"timestamp\":\"2026-11-25T06:57:42.705Z\"}";
  }

  @Override
  String output(long i, long n) {
    return "{\"type\":\"event\",\"eventType\":\"modify\",\"path\":\"/ws/emit-" + n + "/f" + i
        + "\",\"isDirectory\":false,\"timestamp\":\"2026-11-25T06:57:43.611Z\"}";
  }

  /** The last element, then the {@code stopped} that ends the stream. */
  @Override
  String last(long n) {
    return output(n, n) + "\n\ndata: {\"type\":\"stopped\",\"reason\":\"the watched directory was deleted\"}";
  }

  @Override
  Flow.Publisher<FileEvent> publisher(long n) {
    return sandbox.files().watch("emit-" + n);
  }

  @Override
  Flow.Publisher<FileEvent> failingPublisher() {
    return sandbox.files().watch("fail-with-500");
  }
}
