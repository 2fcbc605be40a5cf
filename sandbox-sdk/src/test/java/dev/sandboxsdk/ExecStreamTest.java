package dev.sandboxsdk;

import static dev.sandboxsdk.Fixtures.body;
import static dev.sandboxsdk.Fixtures.errorResponse;
import static dev.sandboxsdk.Fixtures.eventStream;
import static dev.sandboxsdk.Fixtures.parse;
import static dev.sandboxsdk.Fixtures.sse;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.params.provider.Arguments.arguments;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Flow;
import java.util.stream.Stream;
import okhttp3.mockwebserver.RecordedRequest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

class ExecStreamTest extends MockAgentTest {
  private static final String START = "{\"type\":\"start\",\"command\":\"make\",\"pid\":42,\"processId\":\"exec_1\"}";
  private static final String COMPLETE = "{\"type\":\"complete\",\"exitCode\":0,\"timedOut\":false,\"duration\":12}";

  private final RecordingSubscriber<ExecEvent> subscriber = new RecordingSubscriber<>();

  @AfterEach
  void noUnexpectedSignals() {
    subscriber.assertExhausted();
  }

  private static String stdout(String text, long offset) {
    return "{\"type\":\"stdout\",\"data\":\"" + text + "\",\"offset\":" + offset + ",\"bytes\":" + text.length() + "}";
  }

  @Test
  void publishesTheGoldenStreamInOrderAndSkipsKeepAlives() throws Exception {
    // The raw capture: a keep-alive comment, a code point split across reads, an invalid byte.
    server.enqueue(eventStream(Fixtures.read("exec-stream.sse")));

    sandbox.execStream("sleep 2.5; printf ...").subscribe(subscriber);
    subscriber.request(Long.MAX_VALUE);

    List<ExecEvent> events = subscriber.takeAllUntilComplete();
    assertThat(events).containsExactly(
        new ExecEvent.Start("sleep 2.5; printf \"a\\303\"; sleep 0.2; printf \"\\251\\377\\n\"", 11144),
        new ExecEvent.Stdout("a", 0, 1),
        new ExecEvent.Stdout("é\uFFFD\n", 1, 4),
        new ExecEvent.Complete(0, false, null, Duration.ofMillis(2710)));
  }

  @Test
  void publishesStdoutAndStderrInTheOrderTheAgentSentThem() {
    server.enqueue(eventStream(Fixtures.sseFromJsonl("exec-stream-events.jsonl")));

    sandbox.execStream("x").subscribe(subscriber);
    subscriber.request(Long.MAX_VALUE);

    List<ExecEvent> events = subscriber.takeAllUntilComplete();
    assertThat(events).hasSize(5);
    assertThat(events.get(0)).isInstanceOf(ExecEvent.Start.class);
    assertThat(events.subList(1, 5)).containsExactly(
        new ExecEvent.Stderr("err\n", 0, 4),
        new ExecEvent.Stdout("one\n", 0, 4),
        new ExecEvent.Stdout("café\n", 4, 6),
        new ExecEvent.Complete(2, false, null, Duration.ofMillis(307)));
    assertThat(((ExecEvent.Complete) events.get(4)).isSuccess()).isFalse();
  }

  @Test
  void postsTheCommandToExecuteStreamWithoutMaxOutputBytes() throws Exception {
    server.enqueue(eventStream(sse(START, COMPLETE)));

    sandbox.execStream(Command.of("cat"), ExecOptions.builder().stdin("from stdin\n").maxOutputBytes(5)
        .timeout(Duration.ofSeconds(3)).env("A", "1").cwd("sub").build()).subscribe(subscriber);
    subscriber.request(10);
    subscriber.takeAllUntilComplete();

    RecordedRequest request = server.takeRequest();
    assertThat(request.getMethod()).isEqualTo("POST");
    assertThat(request.getPath()).isEqualTo("/api/execute/stream");
    assertThat(request.getHeader("Authorization")).isEqualTo("Bearer t");
    assertThat(request.getHeader("Accept")).isEqualTo("text/event-stream");
    assertThat(body(request)).isEqualTo(parse(
        "{\"argv\":[\"cat\"],\"stdin\":\"from stdin\\n\",\"timeoutMs\":3000,\"env\":{\"A\":\"1\"},\"cwd\":\"sub\"}"));
  }

  @Test
  void usesTheBuildersExecTimeoutByDefault() throws Exception {
    server.enqueue(eventStream(sse(START, COMPLETE)));
    try (Sandbox patient = Sandbox.builder().baseUrl(URI.create(server.url("/").toString())).token("t")
        .streamIdleTimeout(Duration.ofSeconds(2)).execTimeout(Duration.ofMinutes(1)).build()) {
      patient.execStream("make").subscribe(subscriber);
      subscriber.request(10);
      subscriber.takeAllUntilComplete();
    }

    assertThat(body(server.takeRequest()).get("timeoutMs").asLong()).isEqualTo(60_000);
  }

  @Test
  void ignoresCommentsUnknownEventTypesAndOtherFields() {
    server.enqueue(eventStream(": keep-alive\n\n"
        + "event: message\nid: 7\nretry: 100\ndata: " + START + "\n\n"
        + ": keep-alive\n\n"
        + "data: {\"type\":\"progress\",\"percent\":50}\n\n"
        + "data: " + stdout("hi", 0) + "\n\n"
        + "data: {\"type\":\"stdout\",\"data\":\"x\",\"offset\":2,\"bytes\":1,\"someFutureField\":[1,2]}\n\n"
        + "data: " + COMPLETE + "\n\n"));

    sandbox.execStream("make").subscribe(subscriber);
    subscriber.request(Long.MAX_VALUE);

    assertThat(subscriber.takeAllUntilComplete()).containsExactly(
        new ExecEvent.Start("make", 42),
        new ExecEvent.Stdout("hi", 0, 2),
        new ExecEvent.Stdout("x", 2, 1),
        new ExecEvent.Complete(0, false, null, Duration.ofMillis(12)));
  }

  @Test
  void acceptsCrlfLineEndings() {
    server.enqueue(eventStream(": keep-alive\r\n\r\ndata: " + START + "\r\n\r\ndata: " + stdout("hi", 0)
        + "\r\n\r\ndata: " + COMPLETE + "\r\n\r\n"));

    sandbox.execStream("make").subscribe(subscriber);
    subscriber.request(Long.MAX_VALUE);

    assertThat(subscriber.takeAllUntilComplete()).containsExactly(
        new ExecEvent.Start("make", 42),
        new ExecEvent.Stdout("hi", 0, 2),
        new ExecEvent.Complete(0, false, null, Duration.ofMillis(12)));
  }

  @Test
  void toleratesAStreamWithoutStart() {
    server.enqueue(eventStream(sse(stdout("hi", 0), COMPLETE)));

    sandbox.execStream("make").subscribe(subscriber);
    subscriber.request(Long.MAX_VALUE);

    assertThat(subscriber.takeAllUntilComplete()).containsExactly(
        new ExecEvent.Stdout("hi", 0, 2), new ExecEvent.Complete(0, false, null, Duration.ofMillis(12)));
  }

  @Test
  void reportsAnAgentTimeoutInComplete() {
    server.enqueue(eventStream(sse(START, stdout("tick\\n", 0),
        "{\"type\":\"complete\",\"exitCode\":124,\"timedOut\":true,\"signal\":\"SIGTERM\",\"duration\":1003}")));

    sandbox.execStream("echo tick; sleep 5").subscribe(subscriber);
    subscriber.request(Long.MAX_VALUE);

    List<ExecEvent> events = subscriber.takeAllUntilComplete();
    assertThat(events.get(events.size() - 1))
        .isEqualTo(new ExecEvent.Complete(124, true, Signal.SIGTERM, Duration.ofMillis(1003)));
  }

  @Test
  void sendsNothingUntilTheFirstRequest() throws Exception {
    server.enqueue(eventStream(sse(START, COMPLETE)));

    Flow.Publisher<ExecEvent> publisher = sandbox.execStream("make");
    Thread.sleep(100);
    publisher.subscribe(subscriber);
    subscriber.subscription();
    Thread.sleep(300);

    assertThat(server.getRequestCount()).as("requests before request(n)").isZero();
    subscriber.expectNoSignal(Duration.ZERO);

    subscriber.request(1);
    assertThat(subscriber.takeNext()).isEqualTo(new ExecEvent.Start("make", 42));
    assertThat(server.getRequestCount()).isEqualTo(1);
    subscriber.request(1);
    assertThat(subscriber.takeNext()).isInstanceOf(ExecEvent.Complete.class);
    subscriber.takeComplete();
  }

  @Test
  void respectsDemandEvenWhenTheAgentAlreadySentMore() {
    StringBuilder body = new StringBuilder("data: " + START + "\n\n");
    for (int i = 0; i < 50; i++) {
      body.append("data: ").append(stdout("line" + i, i * 5L)).append("\n\n");
    }
    body.append("data: ").append(COMPLETE).append("\n\n");
    server.enqueue(eventStream(body.toString()));

    sandbox.execStream("make").subscribe(subscriber);
    subscriber.request(1);

    assertThat(subscriber.takeNext()).isInstanceOf(ExecEvent.Start.class);
    subscriber.expectNoSignal(Duration.ofMillis(300));

    subscriber.request(2);
    assertThat(subscriber.takeNext(2)).containsExactly(new ExecEvent.Stdout("line0", 0, 5),
        new ExecEvent.Stdout("line1", 5, 5));
    subscriber.expectNoSignal(Duration.ofMillis(200));

    subscriber.request(Long.MAX_VALUE);
    List<ExecEvent> rest = subscriber.takeAllUntilComplete();
    assertThat(rest).hasSize(49);
    assertThat(rest.get(0)).isEqualTo(new ExecEvent.Stdout("line2", 10, 5));
    assertThat(rest.get(48)).isInstanceOf(ExecEvent.Complete.class);
  }

  @Test
  void demandAddedFromOnNextIsHonoured() {
    server.enqueue(eventStream(sse(START, stdout("a", 0), stdout("b", 1), COMPLETE)));
    RecordingSubscriber<ExecEvent> inner = subscriber;
    Flow.Subscriber<ExecEvent> oneByOne = new Flow.Subscriber<>() {
      Flow.Subscription s;

      @Override
      public void onSubscribe(Flow.Subscription subscription) {
        s = subscription;
        inner.onSubscribe(subscription);
        s.request(1);
      }

      @Override
      public void onNext(ExecEvent item) {
        inner.onNext(item);
        s.request(1);
      }

      @Override
      public void onError(Throwable throwable) {
        inner.onError(throwable);
      }

      @Override
      public void onComplete() {
        inner.onComplete();
      }
    };

    sandbox.execStream("make").subscribe(oneByOne);

    assertThat(subscriber.takeAllUntilComplete()).hasSize(4);
  }

  @Test
  void aStreamThatEndsWithoutCompleteFailsWithConnectionException() {
    server.enqueue(eventStream(sse(START, stdout("partial", 0))));

    sandbox.execStream("make").subscribe(subscriber);
    subscriber.request(Long.MAX_VALUE);

    assertThat(subscriber.takeNext(2)).hasSize(2);
    subscriber.takeError(SandboxConnectionException.class);
    subscriber.expectNoSignal(Duration.ofMillis(100));
  }

  @Test
  void aStreamCutInsideALineFails() {
    server.enqueue(eventStream("data: " + START + "\n\ndata: {\"type\":\"stdout\",\"da"));

    sandbox.execStream("make").subscribe(subscriber);
    subscriber.request(Long.MAX_VALUE);

    assertThat(subscriber.takeNext()).isInstanceOf(ExecEvent.Start.class);
    subscriber.takeError(SandboxConnectionException.class);
  }

  @Test
  void aStreamCutAfterTheLastDataLineOfCompleteFails() {
    // The event is only complete at its blank line; without it the command's outcome is unknown.
    server.enqueue(eventStream("data: " + START + "\n\ndata: " + COMPLETE + "\n"));

    sandbox.execStream("make").subscribe(subscriber);
    subscriber.request(Long.MAX_VALUE);

    assertThat(subscriber.takeNext()).isInstanceOf(ExecEvent.Start.class);
    subscriber.takeError(SandboxConnectionException.class);
  }

  @ParameterizedTest
  @ValueSource(strings = {
      "{\"type\":\"stdout\",\"data\":",
      "not json at all",
      "[1,2,3]",
      "{\"type\":\"stdout\",\"offset\":0,\"bytes\":1}",
      "{\"type\":\"complete\",\"exitCode\":\"zero\"}",
  })
  void malformedEventDataFailsWithSandboxException(String data) {
    server.enqueue(eventStream(sse(START, data, COMPLETE)));

    sandbox.execStream("make").subscribe(subscriber);
    subscriber.request(Long.MAX_VALUE);

    assertThat(subscriber.takeNext()).isInstanceOf(ExecEvent.Start.class);
    assertThat(subscriber.takeError(SandboxException.class)).isExactlyInstanceOf(SandboxException.class)
        .hasMessageContaining("malformed");
  }

  @Test
  void anErrorEventFailsWithServerException() {
    server.enqueue(eventStream(sse(START, "{\"type\":\"error\",\"code\":\"INTERNAL_ERROR\","
        + "\"message\":\"the agent failed while streaming: java.io.IOException\",\"timestamp\":\"x\"}")));

    sandbox.execStream("make").subscribe(subscriber);
    subscriber.request(Long.MAX_VALUE);

    assertThat(subscriber.takeNext()).isInstanceOf(ExecEvent.Start.class);
    SandboxServerException e = subscriber.takeError(SandboxServerException.class);
    assertThat(e.code()).isEqualTo("INTERNAL_ERROR");
    assertThat(e).hasMessageContaining("the agent failed while streaming");
  }

  static Stream<Arguments> errorAnswers() {
    return Stream.of(
        arguments(400, "VALIDATION_FAILED", SandboxInvalidRequestException.class),
        arguments(401, "UNAUTHORIZED", SandboxAuthException.class),
        arguments(404, "COMMAND_NOT_FOUND", SandboxNotFoundException.class),
        arguments(429, "TOO_MANY_PROCESSES", SandboxServerException.class),
        arguments(500, "INTERNAL_ERROR", SandboxServerException.class));
  }

  @ParameterizedTest(name = "{0} {1} -> {2}")
  @MethodSource("errorAnswers")
  void anErrorAnswerBeforeTheStreamFailsWithTheMappedException(int status, String code,
      Class<? extends SandboxException> type) {
    server.enqueue(errorResponse(status, code, "refused", "{\"field\":\"cwd\"}"));

    sandbox.execStream("make").subscribe(subscriber);
    subscriber.request(1);

    SandboxException e = subscriber.takeError(type);
    assertThat(e).isExactlyInstanceOf(type);
    assertThat(e.code()).isEqualTo(code);
    assertThat(e.httpStatus()).isEqualTo(status);
    assertThat(e.context()).containsEntry("field", "cwd");
  }

  @Test
  void anAnswerThatIsNotAnEventStreamFails() {
    server.enqueue(Fixtures.json("{\"success\":true}"));

    sandbox.execStream("make").subscribe(subscriber);
    subscriber.request(1);

    subscriber.takeError(SandboxException.class);
  }

  @Test
  void aSilentStreamFailsWithTimeoutException() throws Exception {
    try (RawHttpServer raw = new RawHttpServer((request, exchange) -> {
          exchange.startEventStream();
          exchange.write(sse(START));
          exchange.awaitHangUp(); // then nothing: no event, no keep-alive
          return false;
        });
        Sandbox client = Sandbox.builder().baseUrl(raw.url()).token("t")
            .streamIdleTimeout(Duration.ofMillis(500)).build()) {
      client.execStream("make").subscribe(subscriber);
      subscriber.request(Long.MAX_VALUE);

      assertThat(subscriber.takeNext()).isInstanceOf(ExecEvent.Start.class);
      long start = System.nanoTime();
      subscriber.takeError(SandboxTimeoutException.class);
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isBetween(Duration.ofMillis(300), Duration.ofSeconds(4));
      assertThat(raw.hungUp.await(5, SECONDS)).as("the dead connection was closed").isTrue();
    }
  }

  @Test
  void aStreamWhoseAnswerNeverComesFailsWithTimeoutExceptionAfterTheReadTimeout() throws Exception {
    // No status line at all: the wait for the response is bounded by readTimeout (longer than the window here).
    try (RawHttpServer raw = new RawHttpServer((request, exchange) -> {
          exchange.awaitHangUp();
          return false;
        });
        Sandbox client = Sandbox.builder().baseUrl(raw.url()).token("t")
            .streamIdleTimeout(Duration.ofMillis(500)).readTimeout(Duration.ofMillis(1500)).build()) {
      long start = System.nanoTime();
      client.execStream("make").subscribe(subscriber);
      subscriber.request(Long.MAX_VALUE);

      subscriber.takeError(SandboxTimeoutException.class);
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isBetween(Duration.ofMillis(1200), Duration.ofSeconds(6));
      assertThat(raw.hungUp.await(5, SECONDS)).as("the dead connection was closed").isTrue();
    }
  }

  @Test
  void anAnswerThatBeginsLaterThanTheWindowButWithinTheReadTimeoutIsWaitedFor() throws Exception {
    // A loaded agent may queue a command's start for longer than the window while it is alive.
    try (RawHttpServer raw = new RawHttpServer((request, exchange) -> {
          Thread.sleep(1_500);
          exchange.startEventStream();
          exchange.write(sse(START));
          exchange.write(sse(COMPLETE));
          return false;
        });
        Sandbox client = Sandbox.builder().baseUrl(raw.url()).token("t")
            .streamIdleTimeout(Duration.ofMillis(300)).readTimeout(Duration.ofSeconds(20)).build()) {
      client.execStream("make").subscribe(subscriber);
      subscriber.request(Long.MAX_VALUE);

      assertThat(subscriber.takeAllUntilComplete()).hasSize(2);
    }
  }

  @Test
  void keepAlivesKeepASlowStreamAlive() throws Exception {
    try (RawHttpServer raw = new RawHttpServer((request, exchange) -> {
          exchange.startEventStream();
          exchange.write(sse(START));
          for (int i = 0; i < 5; i++) {
            Thread.sleep(200);
            exchange.write(": keep-alive\n\n");
          }
          exchange.write(sse(COMPLETE));
          return false;
        });
        Sandbox client = Sandbox.builder().baseUrl(raw.url()).token("t")
            .streamIdleTimeout(Duration.ofMillis(500)).build()) {
      client.execStream("make").subscribe(subscriber);
      subscriber.request(Long.MAX_VALUE);

      assertThat(subscriber.takeAllUntilComplete()).hasSize(2);
    }
  }

  @Test
  void withoutAStreamIdleTimeoutTheClientAsksTheAgentForItsKeepAliveInterval() throws Exception {
    String version = "{\"version\":\"0.1.0-SNAPSHOT\",\"protocol\":1,\"limits\":{\"keepAliveMs\":400,\"graceMs\":5000,"
        + "\"maxProcesses\":1024,\"maxBodyBytes\":8388608,\"logWindowBytes\":1048576,"
        + "\"defaultMaxOutputBytes\":16777216,\"maxOutputBytes\":268435456},\"success\":true}";
    try (RawHttpServer raw = new RawHttpServer((request, exchange) -> {
          if (request.target().equals("/api/version")) {
            exchange.respond(200, "application/json; charset=utf-8", version);
            return true;
          }
          exchange.startEventStream();
          exchange.write(sse(START));
          exchange.awaitHangUp();
          return false;
        });
        Sandbox client = Sandbox.builder().baseUrl(raw.url()).token("t").build()) {
      client.execStream("make").subscribe(subscriber);
      subscriber.request(Long.MAX_VALUE);

      assertThat(subscriber.takeNext()).isInstanceOf(ExecEvent.Start.class);
      long start = System.nanoTime();
      subscriber.takeError(SandboxTimeoutException.class, Duration.ofSeconds(10));
      // 2 * keepAliveMs + 1000 = 1800 ms
      assertThat(Duration.ofNanos(System.nanoTime() - start))
          .isBetween(Duration.ofMillis(1500), Duration.ofMillis(5000));

      RawHttpServer.Request first = raw.requests.poll(1, SECONDS);
      assertThat(first.method()).isEqualTo("GET");
      assertThat(first.target()).isEqualTo("/api/version");
      assertThat(first.header("Authorization")).isEqualTo("Bearer t");
      assertThat(raw.requests.poll(1, SECONDS).target()).isEqualTo("/api/execute/stream");

      // The interval is asked once per client, not once per stream.
      RecordingSubscriber<ExecEvent> second = new RecordingSubscriber<>();
      client.execStream("make").subscribe(second);
      second.request(1);
      assertThat(second.takeNext()).isInstanceOf(ExecEvent.Start.class);
      second.cancel();
      assertThat(raw.requests.poll(1, SECONDS).target()).isEqualTo("/api/execute/stream");
      second.assertExhausted();
    }
  }

  @Test
  void aSecondSubscriberGetsIllegalStateException() throws Exception {
    server.enqueue(eventStream(sse(START, COMPLETE)));
    Flow.Publisher<ExecEvent> publisher = sandbox.execStream("make");
    publisher.subscribe(subscriber);
    subscriber.request(Long.MAX_VALUE);
    subscriber.takeAllUntilComplete();

    RecordingSubscriber<ExecEvent> second = new RecordingSubscriber<>();
    publisher.subscribe(second);
    second.request(1);

    second.takeError(IllegalStateException.class);
    second.expectNoSignal(Duration.ofMillis(200));
    second.assertExhausted();
    assertThat(server.getRequestCount()).as("the command ran once").isEqualTo(1);
  }

  @Test
  void aSecondSubscriberIsRejectedWhileTheFirstIsStillActive() {
    Flow.Publisher<ExecEvent> publisher = sandbox.execStream("make");
    publisher.subscribe(subscriber);
    subscriber.subscription();

    RecordingSubscriber<ExecEvent> second = new RecordingSubscriber<>();
    publisher.subscribe(second);

    second.takeError(IllegalStateException.class);
    second.assertExhausted();
    subscriber.cancel();
    assertThat(server.getRequestCount()).isZero();
  }

  @ParameterizedTest
  @ValueSource(longs = {0, -1, Long.MIN_VALUE})
  void aNonPositiveRequestSignalsIllegalArgumentException(long n) {
    server.enqueue(eventStream(sse(START, COMPLETE)));

    sandbox.execStream("make").subscribe(subscriber);
    subscriber.request(n);

    assertThat(subscriber.takeError(IllegalArgumentException.class)).hasMessageContaining("3.9");
    subscriber.expectNoSignal(Duration.ofMillis(100));
  }

  @Test
  void cancelClosesTheConnectionAndStopsSignals() throws Exception {
    try (RawHttpServer raw = new RawHttpServer((request, exchange) -> {
          exchange.startEventStream();
          exchange.write(sse(START, stdout("one", 0), stdout("two", 3)));
          exchange.awaitHangUp();
          return false;
        });
        Sandbox client = Fixtures.client(raw.url())) {
      client.execStream("make").subscribe(subscriber);
      subscriber.request(2);
      assertThat(subscriber.takeNext(2)).hasSize(2);

      subscriber.cancel();

      assertThat(raw.hungUp.await(5, SECONDS)).as("the agent saw the connection close").isTrue();
      subscriber.request(5);
      subscriber.expectNoSignal(Duration.ofMillis(300));
    }
  }

  @Test
  void cancelBeforeTheAgentAnswersClosesTheConnectionAtOnce() throws Exception {
    try (RawHttpServer raw = new RawHttpServer((request, exchange) -> {
          // The agent is slow to answer (e.g. busy spawning): no headers yet; notice the hang-up.
          exchange.awaitHangUp();
          return false;
        });
        Sandbox client = Fixtures.client(raw.url())) {
      client.execStream("make").subscribe(subscriber);
      subscriber.request(1);
      assertThat(raw.requests.poll(5, SECONDS)).isNotNull();

      subscriber.cancel();

      // cancel() closes the connection, so the agent kills the command; it must not wait for the answer.
      assertThat(raw.hungUp.await(1, SECONDS)).as("the agent saw the connection close within 1 s").isTrue();
      subscriber.expectNoSignal(Duration.ofMillis(100));
    }
  }

  @Test
  void cancelWhileWaitingForTheNextEventClosesTheConnectionWithoutAnError() throws Exception {
    try (RawHttpServer raw = new RawHttpServer((request, exchange) -> {
          exchange.startEventStream();
          exchange.write(sse(START));
          exchange.awaitHangUp();
          return false;
        });
        Sandbox client = Fixtures.client(raw.url())) {
      client.execStream("make").subscribe(subscriber);
      subscriber.request(Long.MAX_VALUE);
      assertThat(subscriber.takeNext()).isInstanceOf(ExecEvent.Start.class);
      Thread.sleep(100); // the reader is blocked on the socket now

      subscriber.cancel();

      assertThat(raw.hungUp.await(5, SECONDS)).isTrue();
      subscriber.expectNoSignal(Duration.ofMillis(300));
    }
  }

  @Test
  void closingTheSandboxEndsAStreamBlockedOnTheSocketWithConnectionException() throws Exception {
    try (RawHttpServer raw = new RawHttpServer((request, exchange) -> {
      exchange.startEventStream();
      exchange.write(sse(START));
      exchange.awaitHangUp();
      return false;
    })) {
      Sandbox client = Fixtures.client(raw.url());
      client.execStream("make").subscribe(subscriber);
      subscriber.request(Long.MAX_VALUE);
      assertThat(subscriber.takeNext()).isInstanceOf(ExecEvent.Start.class);
      Thread.sleep(200); // the reader is blocked on the socket now

      client.close();

      subscriber.takeError(SandboxConnectionException.class);
      assertThat(raw.hungUp.await(5, SECONDS)).isTrue();
    }
  }

  @Test
  void closingTheSandboxEndsAStreamThatAwaitsDemandWithConnectionException() throws Exception {
    try (RawHttpServer raw = new RawHttpServer((request, exchange) -> {
      exchange.startEventStream();
      exchange.write(sse(START, stdout("one", 0)));
      exchange.awaitHangUp();
      return false;
    })) {
      Sandbox client = Fixtures.client(raw.url());
      client.execStream("make").subscribe(subscriber);
      subscriber.request(1);
      assertThat(subscriber.takeNext()).isInstanceOf(ExecEvent.Start.class);
      Thread.sleep(100); // nothing is being read: the subscriber has no demand

      client.close();
      assertThat(raw.hungUp.await(5, SECONDS)).isTrue();
      subscriber.request(1);

      // Same outcome as when the reader was blocked on the socket, not okio's IllegalStateException("closed").
      subscriber.takeError(SandboxConnectionException.class);
    }
  }

  @Test
  void aStreamOfAClosedSandboxFailsWithIllegalStateException() {
    sandbox.close();

    sandbox.execStream("make").subscribe(subscriber);
    subscriber.request(1);

    subscriber.takeError(IllegalStateException.class);
    assertThat(server.getRequestCount()).isZero();
  }

  @Test
  void aSubscriberWhoseOnNextThrowsIsCancelled() throws Exception {
    try (RawHttpServer raw = new RawHttpServer((request, exchange) -> {
          exchange.startEventStream();
          exchange.write(sse(START, stdout("one", 0)));
          exchange.awaitHangUp();
          return false;
        });
        Sandbox client = Fixtures.client(raw.url())) {
      RecordingSubscriber<ExecEvent> inner = subscriber;
      client.execStream("make").subscribe(new Flow.Subscriber<ExecEvent>() {
        @Override
        public void onSubscribe(Flow.Subscription s) {
          inner.onSubscribe(s);
          s.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(ExecEvent item) {
          inner.onNext(item);
          throw new IllegalStateException("subscriber bug");
        }

        @Override
        public void onError(Throwable t) {
          inner.onError(t);
        }

        @Override
        public void onComplete() {
          inner.onComplete();
        }
      });

      assertThat(subscriber.takeNext()).isInstanceOf(ExecEvent.Start.class);
      assertThat(raw.hungUp.await(5, SECONDS)).as("§2.13: the subscription is cancelled").isTrue();
      subscriber.expectNoSignal(Duration.ofMillis(200));
    }
  }

  @Test
  void aNullSubscriberIsRejected() {
    Flow.Publisher<ExecEvent> publisher = sandbox.execStream("make");

    assertThatThrownBy(() -> publisher.subscribe(null))
        .isInstanceOf(NullPointerException.class);
  }
}
