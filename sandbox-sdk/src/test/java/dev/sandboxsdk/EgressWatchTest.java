package dev.sandboxsdk;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.LongStream;
import okhttp3.mockwebserver.MockResponse;
import okhttp3.mockwebserver.RecordedRequest;
import okhttp3.mockwebserver.SocketPolicy;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@link SandboxEgress#watch}: polling after the last sequence, demand, cancel, close and errors. */
class EgressWatchTest extends MockAgentTest {
  private final RecordingSubscriber<EgressEvent> subscriber = new RecordingSubscriber<>();

  @AfterEach
  void noUnexpectedSignals() {
    subscriber.assertExhausted();
  }

  static String event(long sequence) {
    return "{\"sequence\":" + sequence + ",\"time\":\"2026-12-07T15:00:07.956Z\",\"host\":\"h" + sequence
        + ".test\",\"port\":443,\"address\":null,\"allowed\":false,\"rule\":\"no-rule\",\"bytesUp\":0,"
        + "\"bytesDown\":0,\"closedAt\":\"2026-12-07T15:00:07.997Z\",\"outcome\":\"refused\"}";
  }

  /** A page of the events numbered {@code from} to {@code to} (none when from > to). */
  static MockResponse page(long from, long to, long lastSequence, boolean more) {
    String events = LongStream.rangeClosed(from, to).mapToObj(EgressWatchTest::event).collect(Collectors.joining(","));
    return Fixtures.json("{\"events\":[" + events + "],\"lastSequence\":" + lastSequence + ",\"more\":" + more
        + ",\"success\":true,\"timestamp\":\"2026-12-07T15:00:08Z\"}");
  }

  private String nextQuery() throws InterruptedException {
    RecordedRequest r = server.takeRequest(5, SECONDS);
    assertThat(r).as("a poll").isNotNull();
    assertThat(r.getMethod()).isEqualTo("GET");
    assertThat(r.getRequestUrl().encodedPath()).isEqualTo("/api/egress/events");
    return r.getRequestUrl().query();
  }

  @Test
  void followsTheAuditFromSinceAcrossPagesAndQuietPolls() throws Exception {
    server.enqueue(page(4, 5, 5, true));   // more: asked again at once
    server.enqueue(page(6, 6, 6, false));
    server.enqueue(page(1, 0, 6, false));  // nothing new: asked again after the interval
    server.enqueue(page(7, 7, 7, false));

    sandbox.egress().watch(3).subscribe(subscriber);
    subscriber.request(4);

    assertThat(subscriber.takeNext(4)).extracting(EgressEvent::sequence).containsExactly(4L, 5L, 6L, 7L);
    assertThat(nextQuery()).isEqualTo("since=3&limit=1000");
    assertThat(nextQuery()).isEqualTo("since=5&limit=1000");
    assertThat(nextQuery()).isEqualTo("since=6&limit=1000");
    assertThat(nextQuery()).isEqualTo("since=6&limit=1000");
    subscriber.cancel();
  }

  @Test
  void asksNothingBeforeDemandAndHoldsAPageWhileThereIsNone() throws Exception {
    server.enqueue(page(1, 3, 3, false));

    sandbox.egress().watch(0).subscribe(subscriber);
    Thread.sleep(300);
    assertThat(server.getRequestCount()).as("lazy: no poll without a request").isZero();

    subscriber.request(1);
    assertThat(subscriber.takeNext().sequence()).isEqualTo(1);
    subscriber.expectNoSignal(Duration.ofMillis(300));
    assertThat(server.getRequestCount()).as("the rest of the page waits for demand").isEqualTo(1);

    subscriber.request(2);
    assertThat(subscriber.takeNext(2)).extracting(EgressEvent::sequence).containsExactly(2L, 3L);
    subscriber.cancel();
  }

  @Test
  void cancelStopsThePollingAndCancelsAPollInFlight() throws Exception {
    server.enqueue(page(1, 1, 1, false));
    server.enqueue(new MockResponse().setSocketPolicy(SocketPolicy.NO_RESPONSE)); // a poll that hangs

    sandbox.egress().watch(0).subscribe(subscriber);
    subscriber.request(5);
    assertThat(subscriber.takeNext().sequence()).isEqualTo(1);
    nextQuery();
    nextQuery(); // the hanging poll is in flight
    long t0 = System.nanoTime();
    subscriber.cancel();
    subscriber.expectNoSignal(Duration.ofMillis(800));
    assertThat(server.takeRequest(200, java.util.concurrent.TimeUnit.MILLISECONDS)).as("no poll after cancel").isNull();
    assertThat(System.nanoTime() - t0).isLessThan(Duration.ofSeconds(5).toNanos());
  }

  @Test
  void aSandboxWithoutEgressEndsTheWatchWithItsException() {
    server.enqueue(Fixtures.errorResponse(404, "NOT_FOUND", "no route GET /api/egress/events", "{}"));

    sandbox.egress().watch(0).subscribe(subscriber);
    subscriber.request(1);

    assertThat(subscriber.takeError(EgressNotEnabledException.class)).hasMessageContaining("egress is not enabled");
  }

  @Test
  void aMalformedPageEndsTheWatchWithAnErrorNamingTheField() {
    server.enqueue(Fixtures.json("{\"events\":[],\"more\":false}"));

    sandbox.egress().watch(0).subscribe(subscriber);
    subscriber.request(1);

    assertThat(subscriber.takeError(SandboxException.class)).hasMessageContaining("lastSequence");
  }

  @Test
  void closingTheSandboxEndsAWaitingWatchWithAConnectionError() throws Exception {
    server.enqueue(page(1, 0, 0, false));
    server.enqueue(page(1, 0, 0, false));

    sandbox.egress().watch(0).subscribe(subscriber);
    subscriber.request(1);
    nextQuery();
    sandbox.close();

    assertThat(subscriber.takeError(SandboxConnectionException.class)).hasMessageContaining("closed");
  }

  @Test
  void aSecondSubscriberIsRefused() {
    var publisher = sandbox.egress().watch(0);
    publisher.subscribe(new RecordingSubscriber<>());
    publisher.subscribe(subscriber);

    assertThat(subscriber.takeError(IllegalStateException.class)).hasMessageContaining("already subscribed");
  }

  @Test
  void aNegativeSinceIsRefusedAtOnce() {
    assertThatThrownBy(() -> sandbox.egress().watch(-1)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("since");
    assertThat(server.getRequestCount()).isZero();
  }

  @Test
  void eventsAreThoseOfThePageInOrder() throws Exception {
    server.enqueue(Fixtures.json(Fixtures.read("egress-events-response.json")));

    sandbox.egress().watch(0).subscribe(subscriber);
    subscriber.request(2);

    List<EgressEvent> events = subscriber.takeNext(2);
    assertThat(events).extracting(EgressEvent::host).containsExactly("allowed.test", "denied.test");
    assertThat(events.get(1).address()).isNull();
    subscriber.cancel();
  }
}
