package dev.sandboxsdk;

import static dev.sandboxsdk.Fixtures.errorResponse;
import static dev.sandboxsdk.Fixtures.eventStream;
import static dev.sandboxsdk.Fixtures.sse;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import okhttp3.mockwebserver.Dispatcher;
import okhttp3.mockwebserver.MockResponse;
import okhttp3.mockwebserver.RecordedRequest;
import okhttp3.mockwebserver.SocketPolicy;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class LogStreamTest extends MockAgentTest {
  private static final String INFO = "{\"type\":\"process_info\",\"processId\":\"p1\",\"pid\":77,\"command\":\"build\","
      + "\"status\":\"running\"}";
  private static final String EXIT = "{\"type\":\"exit\",\"processId\":\"p1\",\"exitCode\":0,\"status\":\"completed\","
      + "\"timedOut\":false,\"data\":\"completed with exit code 0\"}";
  private static final LogEvent.Info INFO_EVENT = new LogEvent.Info("p1", 77, "build", ProcessStatus.RUNNING);
  private static final LogEvent.Exit EXIT_EVENT = new LogEvent.Exit(0, ProcessStatus.COMPLETED, false, null);

  private final RecordingSubscriber<LogEvent> subscriber = new RecordingSubscriber<>();

  @AfterEach
  void noUnexpectedSignals() {
    subscriber.assertExhausted();
  }

  private static String output(String stream, String text, long offset) {
    return "{\"type\":\"" + stream + "\",\"processId\":\"p1\",\"data\":\"" + text + "\",\"offset\":" + offset
        + ",\"bytes\":" + text.replace("\\n", "\n").length() + "}";
  }

  /** A stream cut before its exit event, as when the connection drops. */
  private static MockResponse dropped(String body) {
    return eventStream(body).setSocketPolicy(SocketPolicy.DISCONNECT_AT_END);
  }

  @Test
  void publishesTheGoldenProcessStream() throws Exception {
    server.enqueue(eventStream(Fixtures.sseFromJsonl("process-stream-events.jsonl")));

    sandbox.streamProcessLogs("fixture-1").subscribe(subscriber);
    subscriber.request(Long.MAX_VALUE);

    assertThat(subscriber.takeAllUntilComplete()).containsExactly(
        new LogEvent.Info("fixture-1", 10774, "sh -c 'echo line 1; sleep 0.5; echo line 2; echo warn >&2; exit 1'",
            ProcessStatus.RUNNING),
        new LogEvent.Output(StdStream.STDOUT, "line 1\n", 0, 7),
        new LogEvent.Output(StdStream.STDOUT, "line 2\n", 7, 7),
        new LogEvent.Output(StdStream.STDERR, "warn\n", 0, 5),
        new LogEvent.Exit(1, ProcessStatus.FAILED, false, null));
    RecordedRequest request = server.takeRequest();
    assertThat(request.getMethod()).isEqualTo("GET");
    assertThat(request.getRequestUrl().encodedPath()).isEqualTo("/api/process/fixture-1/stream");
    assertThat(request.getRequestUrl().queryParameter("since")).isEqualTo("0");
    assertThat(request.getHeader("Authorization")).isEqualTo("Bearer t");
    assertThat(request.getHeader("Accept")).isEqualTo("text/event-stream");
  }

  @Test
  void aTruncatedEventBecomesTruncated() {
    server.enqueue(eventStream(Fixtures.sseFromJsonl("process-stream-truncated-events.jsonl")));

    sandbox.streamProcessLogs("windowed").subscribe(subscriber);
    subscriber.request(Long.MAX_VALUE);

    List<LogEvent> events = subscriber.takeAllUntilComplete();
    assertThat(events).hasSize(4);
    assertThat(events.subList(1, 4)).containsExactly(
        new LogEvent.Truncated(StdStream.STDOUT, 17, 17),
        new LogEvent.Output(StdStream.STDOUT, "ghij\nKLMNOPQRST\n", 17, 16),
        new LogEvent.Exit(124, ProcessStatus.KILLED, true, Signal.SIGTERM));
  }

  @Test
  void theRangeFromTheBeginningIsSentAsSinceZero() throws Exception {
    server.enqueue(eventStream(sse(INFO, EXIT)));

    sandbox.streamProcessLogs("p1", LogRange.all()).subscribe(subscriber);
    subscriber.request(Long.MAX_VALUE);
    subscriber.takeAllUntilComplete();

    RecordedRequest request = server.takeRequest();
    assertThat(request.getRequestUrl().queryParameter("since")).isEqualTo("0");
    assertThat(request.getRequestUrl().queryParameterNames()).doesNotContain("stdoutSince", "stderrSince");
  }

  @Test
  void aLogRangeIsSentAsPerStreamOffsetsAndResumesFromThem() throws Exception {
    server.enqueue(dropped(sse(INFO, output("stdout", "line 3\\n", 14))));
    server.enqueue(eventStream(sse(INFO, output("stderr", "done\\n", 5), EXIT)));

    sandbox.streamProcessLogs("p1", LogRange.from(14, 5).withMaxBytes(3)).subscribe(subscriber);
    subscriber.request(Long.MAX_VALUE);

    assertThat(subscriber.takeAllUntilComplete()).containsExactly(INFO_EVENT,
        new LogEvent.Output(StdStream.STDOUT, "line 3\n", 14, 7),
        new LogEvent.Output(StdStream.STDERR, "done\n", 5, 5),
        EXIT_EVENT);
    RecordedRequest first = server.takeRequest();
    assertThat(first.getRequestUrl().queryParameter("stdoutSince")).isEqualTo("14");
    assertThat(first.getRequestUrl().queryParameter("stderrSince")).isEqualTo("5");
    // the agent refuses maxBytes on streams with a 400
    assertThat(first.getRequestUrl().queryParameterNames()).doesNotContain("maxBytes");
    RecordedRequest resume = server.takeRequest();
    assertThat(resume.getRequestUrl().queryParameter("stdoutSince")).isEqualTo("21");
    assertThat(resume.getRequestUrl().queryParameter("stderrSince")).isEqualTo("5");
  }

  @Test
  void sendsNothingUntilTheFirstRequest() throws Exception {
    server.enqueue(eventStream(sse(INFO, EXIT)));

    sandbox.streamProcessLogs("p1").subscribe(subscriber);
    subscriber.subscription();
    Thread.sleep(300);

    assertThat(server.getRequestCount()).isZero();
    subscriber.request(1);
    assertThat(subscriber.takeNext()).isEqualTo(INFO_EVENT);
    subscriber.request(1);
    assertThat(subscriber.takeNext()).isEqualTo(EXIT_EVENT);
    subscriber.takeComplete();
  }

  @Test
  void ignoresKeepAlivesAndUnknownEventTypes() {
    server.enqueue(eventStream(": keep-alive\r\n\r\ndata: " + INFO + "\r\n\r\n"
        + "data: {\"type\":\"resource_usage\",\"cpu\":3}\n\n"
        + ": keep-alive\n\n"
        + "data: " + output("stdout", "hi\\n", 0) + "\n\n"
        + "data: " + EXIT + "\n\n"));

    sandbox.streamProcessLogs("p1").subscribe(subscriber);
    subscriber.request(Long.MAX_VALUE);

    assertThat(subscriber.takeAllUntilComplete()).containsExactly(INFO_EVENT,
        new LogEvent.Output(StdStream.STDOUT, "hi\n", 0, 3), EXIT_EVENT);
  }

  @Test
  void resumesAfterADroppedConnectionFromTheLastOffsetOfEachStream() throws Exception {
    server.enqueue(dropped(sse(INFO,
        output("stdout", "line 1\\n", 0),
        output("stderr", "warn\\n", 0),
        output("stdout", "line 2\\n", 7))));
    server.enqueue(eventStream(sse(INFO,
        output("stdout", "line 3\\n", 14),
        output("stderr", "done\\n", 5),
        EXIT)));

    sandbox.streamProcessLogs("p1").subscribe(subscriber);
    subscriber.request(Long.MAX_VALUE);

    List<LogEvent> events = subscriber.takeAllUntilComplete();
    assertThat(events).containsExactly(
        INFO_EVENT,
        new LogEvent.Output(StdStream.STDOUT, "line 1\n", 0, 7),
        new LogEvent.Output(StdStream.STDERR, "warn\n", 0, 5),
        new LogEvent.Output(StdStream.STDOUT, "line 2\n", 7, 7),
        new LogEvent.Output(StdStream.STDOUT, "line 3\n", 14, 7),
        new LogEvent.Output(StdStream.STDERR, "done\n", 5, 5),
        EXIT_EVENT);
    assertThat(server.takeRequest().getRequestUrl().queryParameterNames()).doesNotContain("stdoutSince");
    RecordedRequest resume = server.takeRequest();
    assertThat(resume.getRequestUrl().encodedPath()).isEqualTo("/api/process/p1/stream");
    assertThat(resume.getRequestUrl().queryParameter("stdoutSince")).isEqualTo("14");
    assertThat(resume.getRequestUrl().queryParameter("stderrSince")).isEqualTo("5");
  }

  @Test
  void resumingSkipsOutputTheAgentRepeats() {
    server.enqueue(dropped(sse(INFO, output("stdout", "abc", 0))));
    server.enqueue(eventStream(sse(INFO, output("stdout", "abc", 0), output("stdout", "def", 3), EXIT)));

    sandbox.streamProcessLogs("p1").subscribe(subscriber);
    subscriber.request(Long.MAX_VALUE);

    StringBuilder stdout = new StringBuilder();
    for (LogEvent e : subscriber.takeAllUntilComplete()) {
      if (e instanceof LogEvent.Output out) {
        stdout.append(out.text());
      }
    }
    assertThat(stdout.toString()).isEqualTo("abcdef");
  }

  @Test
  void resumesAfterATruncatedEventFromWhereTheDataContinues() throws Exception {
    server.enqueue(dropped(sse(INFO,
        "{\"type\":\"truncated\",\"processId\":\"p1\",\"stream\":\"stdout\",\"droppedBytes\":17,\"offset\":17}")));
    server.enqueue(eventStream(sse(INFO, EXIT)));

    sandbox.streamProcessLogs("p1").subscribe(subscriber);
    subscriber.request(Long.MAX_VALUE);

    assertThat(subscriber.takeAllUntilComplete()).containsExactly(INFO_EVENT,
        new LogEvent.Truncated(StdStream.STDOUT, 17, 17), EXIT_EVENT);
    server.takeRequest();
    assertThat(server.takeRequest().getRequestUrl().queryParameter("stdoutSince")).isEqualTo("17");
  }

  @Test
  void aSilentStreamIsResumedLikeADroppedOne() throws Exception {
    AtomicInteger connections = new AtomicInteger();
    try (RawHttpServer raw = new RawHttpServer((request, exchange) -> {
          exchange.startEventStream();
          if (connections.incrementAndGet() == 1) {
            exchange.write(sse(INFO, output("stdout", "abc", 0)));
            exchange.awaitHangUp(); // silent: no keep-alive
          } else {
            exchange.write(sse(INFO, output("stdout", "def", 3), EXIT));
          }
          return false;
        });
        Sandbox client = Sandbox.builder().baseUrl(raw.url()).token("t")
            .streamIdleTimeout(Duration.ofMillis(400)).build()) {
      client.streamProcessLogs("p1").subscribe(subscriber);
      subscriber.request(Long.MAX_VALUE);

      assertThat(subscriber.takeAllUntilComplete()).containsExactly(INFO_EVENT,
          new LogEvent.Output(StdStream.STDOUT, "abc", 0, 3),
          new LogEvent.Output(StdStream.STDOUT, "def", 3, 3),
          EXIT_EVENT);
      raw.requests.poll(1, SECONDS);
      assertThat(raw.requests.poll(1, SECONDS).target()).contains("stdoutSince=3");
    }
  }

  @Test
  void givesUpWithConnectionExceptionAfterFiveFailedReconnects() throws Exception {
    AtomicInteger requests = new AtomicInteger();
    server.setDispatcher(new Dispatcher() {
      @Override
      public MockResponse dispatch(RecordedRequest request) {
        if (requests.incrementAndGet() == 1) {
          return dropped(sse(INFO, output("stdout", "abc", 0)));
        }
        return dropped(""); // accepted, then cut before any event
      }
    });

    sandbox.streamProcessLogs("p1").subscribe(subscriber);
    subscriber.request(Long.MAX_VALUE);

    assertThat(subscriber.takeNext(2)).containsExactly(INFO_EVENT, new LogEvent.Output(StdStream.STDOUT, "abc", 0, 3));
    SandboxConnectionException e = subscriber.takeError(SandboxConnectionException.class, Duration.ofSeconds(15));
    assertThat(e).hasMessageContaining("5 reconnects failed");
    assertThat(requests).as("the first request and five reconnects").hasValue(6);
    subscriber.expectNoSignal(Duration.ofMillis(200));
    assertThat(requests).hasValue(6);
    for (int i = 0; i < 6; i++) {
      RecordedRequest r = server.takeRequest(1, TimeUnit.SECONDS);
      if (i > 0) {
        assertThat(r.getRequestUrl().queryParameter("stdoutSince")).isEqualTo("3");
      }
    }
  }

  @Test
  void aReconnectThatFailsBeforeAnswerIsRetriedLikeADroppedStream() throws Exception {
    // The connection drops, and the first reconnect attempts fail too (the agent is briefly
    // unreachable): the publisher promises "a few" reconnects with backoff, not exactly one.
    AtomicInteger requests = new AtomicInteger();
    server.setDispatcher(new Dispatcher() {
      @Override
      public MockResponse dispatch(RecordedRequest request) {
        int n = requests.incrementAndGet();
        if (n == 1) {
          return dropped(sse(INFO, output("stdout", "abc", 0)));
        }
        if (n <= 3) {
          return new MockResponse().setSocketPolicy(SocketPolicy.DISCONNECT_AFTER_REQUEST);
        }
        return eventStream(sse(INFO, output("stdout", "def", 3), EXIT));
      }
    });

    sandbox.streamProcessLogs("p1").subscribe(subscriber);
    subscriber.request(Long.MAX_VALUE);

    assertThat(subscriber.takeAllUntilComplete()).containsExactly(INFO_EVENT,
        new LogEvent.Output(StdStream.STDOUT, "abc", 0, 3),
        new LogEvent.Output(StdStream.STDOUT, "def", 3, 3),
        EXIT_EVENT);
  }

  @Test
  void processNotFoundFailsAtOnceWithoutRetrying() throws Exception {
    server.enqueue(Fixtures.json(404, Fixtures.read("error-response.json")));

    sandbox.streamProcessLogs("no-such-id").subscribe(subscriber);
    subscriber.request(1);

    ProcessNotFoundException e = subscriber.takeError(ProcessNotFoundException.class);
    assertThat(e.context()).containsEntry("processId", "no-such-id");
    Thread.sleep(300);
    assertThat(server.getRequestCount()).isEqualTo(1);
  }

  @Test
  void anOffsetBeyondTheStreamIsAnInvalidRequest() {
    server.enqueue(errorResponse(400, "VALIDATION_FAILED", "stdoutSince=99 is beyond the stdout produced so far",
        "{\"field\":\"stdoutSince\"}"));

    sandbox.streamProcessLogs("p1", LogRange.from(99, 0)).subscribe(subscriber);
    subscriber.request(1);

    subscriber.takeError(SandboxInvalidRequestException.class);
  }

  @Test
  void anErrorEventFailsWithoutRetrying() throws Exception {
    server.enqueue(eventStream(sse(INFO, "{\"type\":\"error\",\"code\":\"INTERNAL_ERROR\","
        + "\"message\":\"the agent failed while streaming: java.lang.IllegalStateException\"}")));

    sandbox.streamProcessLogs("p1").subscribe(subscriber);
    subscriber.request(Long.MAX_VALUE);

    assertThat(subscriber.takeNext()).isEqualTo(INFO_EVENT);
    assertThat(subscriber.takeError(SandboxServerException.class).code()).isEqualTo("INTERNAL_ERROR");
    Thread.sleep(300);
    assertThat(server.getRequestCount()).isEqualTo(1);
  }

  @Test
  void malformedEventDataFailsWithoutRetrying() throws Exception {
    server.enqueue(eventStream(sse(INFO, "{\"type\":\"stdout\",\"data\":\"x\"}")));

    sandbox.streamProcessLogs("p1").subscribe(subscriber);
    subscriber.request(Long.MAX_VALUE);

    assertThat(subscriber.takeNext()).isEqualTo(INFO_EVENT);
    subscriber.takeError(SandboxException.class);
    Thread.sleep(300);
    assertThat(server.getRequestCount()).isEqualTo(1);
  }

  @Test
  void respectsDemand() {
    StringBuilder body = new StringBuilder(sse(INFO));
    for (int i = 0; i < 50; i++) {
      body.append(sse(output("stdout", "x", i)));
    }
    body.append(sse(EXIT));
    server.enqueue(eventStream(body.toString()));

    sandbox.streamProcessLogs("p1").subscribe(subscriber);
    subscriber.request(1);

    assertThat(subscriber.takeNext()).isEqualTo(INFO_EVENT);
    subscriber.expectNoSignal(Duration.ofMillis(300));
    subscriber.request(Long.MAX_VALUE);
    assertThat(subscriber.takeAllUntilComplete()).hasSize(51);
  }

  @Test
  void cancelClosesTheConnectionAndLeavesTheProcessAlone() throws Exception {
    try (RawHttpServer raw = new RawHttpServer((request, exchange) -> {
          exchange.startEventStream();
          exchange.write(sse(INFO, output("stdout", "tick\\n", 0)));
          exchange.awaitHangUp();
          return false;
        });
        Sandbox client = Fixtures.client(raw.url())) {
      client.streamProcessLogs("p1").subscribe(subscriber);
      subscriber.request(Long.MAX_VALUE);
      assertThat(subscriber.takeNext(2)).hasSize(2);

      subscriber.cancel();

      assertThat(raw.hungUp.await(5, SECONDS)).isTrue();
      subscriber.expectNoSignal(Duration.ofMillis(500));
      assertThat(raw.requests.poll()).as("the stream request").isNotNull();
      assertThat(raw.requests).as("no reconnect and no kill after cancel").isEmpty();
      assertThat(raw.connections).hasValue(1);
    }
  }

  @Test
  void aSecondSubscriberGetsIllegalStateException() {
    Flow.Publisher<LogEvent> publisher = sandbox.streamProcessLogs("p1");
    publisher.subscribe(subscriber);
    subscriber.subscription();

    RecordingSubscriber<LogEvent> second = new RecordingSubscriber<>();
    publisher.subscribe(second);

    second.takeError(IllegalStateException.class);
    second.assertExhausted();
    subscriber.cancel();
  }

  @Test
  void aNonPositiveRequestSignalsIllegalArgumentException() {
    sandbox.streamProcessLogs("p1").subscribe(subscriber);
    subscriber.request(0);

    subscriber.takeError(IllegalArgumentException.class);
    assertThat(server.getRequestCount()).isZero();
  }

  @Test
  void argumentsAreValidatedAtOnce() {
    assertThatThrownBy(() -> sandbox.streamProcessLogs("")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> sandbox.streamProcessLogs(null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> sandbox.streamProcessLogs("p1", LogRange.from(-1, 0)))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
