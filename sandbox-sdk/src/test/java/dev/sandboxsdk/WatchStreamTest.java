package dev.sandboxsdk;

import static dev.sandboxsdk.Fixtures.errorResponse;
import static dev.sandboxsdk.Fixtures.eventStream;
import static dev.sandboxsdk.Fixtures.sse;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.List;
import okhttp3.mockwebserver.RecordedRequest;
import okhttp3.mockwebserver.SocketPolicy;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@link SandboxFiles#watch}: the request, the golden stream, the end of a watch, errors and cancel. */
class WatchStreamTest extends MockAgentTest {
  private static final String WATCHING = "{\"type\":\"watching\",\"path\":\"/ws/src\",\"watchId\":\"watch-1\","
      + "\"recursive\":true,\"directories\":1,\"timestamp\":\"2026-11-25T06:53:25.451Z\"}";
  private static final String CREATED = "{\"type\":\"event\",\"eventType\":\"create\",\"path\":\"/ws/src/a/b.txt\","
      + "\"isDirectory\":false,\"timestamp\":\"2026-11-25T06:53:26.367Z\"}";

  private final RecordingSubscriber<FileEvent> subscriber = new RecordingSubscriber<>();

  @AfterEach
  void noUnexpectedSignals() {
    subscriber.assertExhausted();
  }

  @Test
  void publishesTheGoldenWatchStreamAndCompletesAtStopped() throws Exception {
    server.enqueue(eventStream(Fixtures.sseFromJsonl("file-watch-events.jsonl")));

    sandbox.files().watch("notes").subscribe(subscriber);
    subscriber.request(Long.MAX_VALUE);

    List<FileEvent> events = subscriber.takeAllUntilComplete();
    List<JsonNode> golden = Fixtures.read("file-watch-events.jsonl").lines().filter(l -> !l.isBlank())
        .map(Fixtures::parse).toList();
    assertThat(events).hasSize(golden.size() - 1); // all but the final stopped
    String root = golden.get(0).get("path").asText();
    assertThat(events.get(0).type()).isEqualTo(FileEventType.WATCHING);
    assertThat(events.get(0).absolutePath()).isEqualTo(root);
    for (int i = 1; i < events.size(); i++) {
      FileEvent e = events.get(i);
      JsonNode g = golden.get(i);
      assertThat(e.type().name().toLowerCase()).isEqualTo(g.get("eventType").asText());
      assertThat(e.absolutePath()).isEqualTo(g.get("path").asText());
      assertThat(root + "/" + e.relativePath()).isEqualTo(e.absolutePath());
      assertThat(e.isDirectory()).isEqualTo(g.get("isDirectory").asBoolean());
      assertThat(e.timestamp()).isEqualTo(java.time.Instant.parse(g.get("timestamp").asText()));
    }
    assertThat(events).anyMatch(e -> e.relativePath().equals("sub") && e.isDirectory());
    RecordedRequest request = server.takeRequest();
    assertThat(request.getMethod()).isEqualTo("POST");
    assertThat(request.getRequestUrl().encodedPath()).isEqualTo("/api/watch");
    assertThat(request.getHeader("Accept")).isEqualTo("text/event-stream");
    assertThat(Fixtures.body(request).toString()).isEqualTo("{\"path\":\"notes\",\"recursive\":true}");
  }

  @Test
  void optionsTravelAsCloudflaresFields() throws Exception {
    server.enqueue(eventStream(sse(WATCHING, "{\"type\":\"stopped\",\"reason\":\"x\"}")));
    server.enqueue(eventStream(sse(WATCHING, "{\"type\":\"stopped\",\"reason\":\"x\"}")));

    sandbox.files().watch("src", WatchOptions.defaults().withRecursive(false).withInclude("*.java", "**/pom.xml"))
        .subscribe(subscriber);
    subscriber.request(10);
    assertThat(subscriber.takeAllUntilComplete()).hasSize(1);
    RecordingSubscriber<FileEvent> second = new RecordingSubscriber<>();
    sandbox.files().watch("src", WatchOptions.defaults().withExclude()).subscribe(second);
    second.request(10);
    assertThat(second.takeAllUntilComplete()).hasSize(1);
    second.assertExhausted();

    assertThat(Fixtures.body(server.takeRequest()).toString())
        .isEqualTo("{\"path\":\"src\",\"recursive\":false,\"include\":[\"*.java\",\"**/pom.xml\"]}");
    assertThat(Fixtures.body(server.takeRequest()).toString())
        .as("an empty exclude list turns the agent's default exclusions off")
        .isEqualTo("{\"path\":\"src\",\"recursive\":true,\"exclude\":[]}");
  }

  @Test
  void relativePathsAreRelativeToTheWatchedDirectory() {
    server.enqueue(eventStream(sse(WATCHING, CREATED, "{\"type\":\"overflow\",\"path\":\"/ws/src\"}",
        "{\"type\":\"event\",\"eventType\":\"attrib\",\"path\":\"/ws/src/x\",\"isDirectory\":false}",
        "{\"type\":\"stopped\",\"reason\":\"the watched directory was deleted\"}")));

    sandbox.files().watch("src").subscribe(subscriber);
    subscriber.request(Long.MAX_VALUE);

    List<FileEvent> events = subscriber.takeAllUntilComplete();
    assertThat(events).extracting(FileEvent::type)
        .as("an event type this SDK does not know is skipped")
        .containsExactly(FileEventType.WATCHING, FileEventType.CREATE, FileEventType.OVERFLOW);
    assertThat(events.get(1).relativePath()).isEqualTo("a/b.txt");
    assertThat(events.get(2).absolutePath()).isEqualTo("/ws/src");
  }

  @Test
  void refusalsBeforeTheStreamAreMappedByTheirCode() {
    server.enqueue(errorResponse(404, "FILE_NOT_FOUND", "file not found: nope", "{\"path\":\"nope\"}"));
    server.enqueue(errorResponse(403, "PERMISSION_DENIED", "path '..' is not allowed", "{\"path\":\"..\"}"));
    server.enqueue(errorResponse(429, "TOO_MANY_WATCHES", "this agent already serves 16 watch streams", "{}"));

    sandbox.files().watch("nope").subscribe(subscriber);
    subscriber.request(1);
    subscriber.takeError(SandboxFileNotFoundException.class);
    RecordingSubscriber<FileEvent> outside = new RecordingSubscriber<>();
    sandbox.files().watch("..").subscribe(outside);
    outside.request(1);
    assertThat(outside.takeError(SandboxPermissionException.class).code()).isEqualTo("PERMISSION_DENIED");
    RecordingSubscriber<FileEvent> tooMany = new RecordingSubscriber<>();
    sandbox.files().watch("src").subscribe(tooMany);
    tooMany.request(1);
    SandboxServerException e = tooMany.takeError(SandboxServerException.class);
    assertThat(e.code()).isEqualTo("TOO_MANY_WATCHES");
    assertThat(e.httpStatus()).isEqualTo(429);
    outside.assertExhausted();
    tooMany.assertExhausted();
  }

  @Test
  void anErrorEventEndsTheStreamWithTheExceptionItsCodeNames() {
    server.enqueue(eventStream(sse(WATCHING, CREATED, "{\"type\":\"error\",\"error\":\"the watch of 'src' would need more"
        + " than 8192 directories\",\"code\":\"TOO_MANY_WATCHES\"}")));

    sandbox.files().watch("src").subscribe(subscriber);
    subscriber.request(Long.MAX_VALUE);

    assertThat(subscriber.takeNext(2)).hasSize(2);
    SandboxServerException e = subscriber.takeError(SandboxServerException.class);
    assertThat(e.code()).isEqualTo("TOO_MANY_WATCHES");
    assertThat(e.getMessage()).contains("watch src").contains("8192 directories");
  }

  @Test
  void aStreamThatBreaksWithoutStoppedIsAConnectionError() {
    server.enqueue(eventStream(sse(WATCHING, CREATED)).setSocketPolicy(SocketPolicy.DISCONNECT_AT_END));

    sandbox.files().watch("src").subscribe(subscriber);
    subscriber.request(Long.MAX_VALUE);

    assertThat(subscriber.takeNext(2)).hasSize(2);
    subscriber.takeError(SandboxConnectionException.class);
  }

  @Test
  void sendsNothingUntilTheFirstRequestAndOnlyWhatWasRequested() throws Exception {
    server.enqueue(eventStream(sse(WATCHING, CREATED, CREATED.replace("b.txt", "c.txt"))));

    sandbox.files().watch("src").subscribe(subscriber);
    subscriber.subscription();
    Thread.sleep(200); // the opposite would be a request arriving; nothing can prove its absence sooner
    assertThat(server.getRequestCount()).isZero();
    subscriber.request(2);
    assertThat(subscriber.takeNext(2)).extracting(FileEvent::type).containsExactly(FileEventType.WATCHING,
        FileEventType.CREATE);
    subscriber.expectNoSignal(Duration.ofMillis(300));
    subscriber.cancel();
  }

  @Test
  void nullArgumentsAreRefusedAtOnce() {
    assertThatThrownBy(() -> sandbox.files().watch(null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> sandbox.files().watch("src", null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> new WatchOptions(true, List.of("*.js"), List.of("*.log")))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(WatchOptions.defaults().withInclude("*.js").withExclude("x").include()).as("the last filter wins").isEmpty();
  }

  @Test
  void cancelClosesTheConnection() throws Exception {
    try (RawHttpServer raw = new RawHttpServer((request, exchange) -> {
          exchange.startEventStream();
          exchange.write(sse(WATCHING, CREATED));
          exchange.awaitHangUp();
          return false;
        });
        Sandbox client = Fixtures.client(raw.url())) {
      client.files().watch("src").subscribe(subscriber);
      subscriber.request(Long.MAX_VALUE);
      assertThat(subscriber.takeNext(2)).hasSize(2);

      subscriber.cancel();

      assertThat(raw.hungUp.await(5, SECONDS)).isTrue();
      subscriber.expectNoSignal(Duration.ofMillis(500));
      assertThat(raw.connections).hasValue(1);
    }
  }
}
