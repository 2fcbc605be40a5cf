package dev.sandboxsdk;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.Flow;
import okhttp3.mockwebserver.Dispatcher;
import okhttp3.mockwebserver.MockResponse;
import okhttp3.mockwebserver.MockWebServer;
import okhttp3.mockwebserver.RecordedRequest;
import org.reactivestreams.tck.TestEnvironment;
import org.reactivestreams.tck.flow.FlowPublisherVerification;
import org.testng.SkipException;
import org.testng.annotations.AfterClass;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

/**
 * The Reactive Streams TCK against one of the SDK's publishers, fed by a scripted agent that
 * answers a request for n elements with exactly n events: the opening event, n-2 output events
 * and the final event (n = 1: only the final event, which the SDK accepts without an opening one).
 * Above {@value #ENDLESS} it sends that many output events and no end, for the one rule that asks
 * for Integer.MAX_VALUE elements and cancels early. n = 0 is answered with HTTP 500: every stream
 * has its final event, so an empty one cannot exist. Public because TestNG instantiates it.
 */
public abstract class ScriptedAgentTck<T> extends FlowPublisherVerification<T> {
  static final int ENDLESS = 10_000;

  Sandbox sandbox;
  private MockWebServer server;
  private final List<String> violations = Collections.synchronizedList(new ArrayList<>());

  protected ScriptedAgentTck() {
    // 500 ms to wait for a signal, 100 ms to make sure none comes (loopback needs no more)
    super(new TestEnvironment(500, 100));
  }

  /** How many events the request asks for; below 1 for a request that must fail. */
  abstract long count(RecordedRequest request);

  /** The opening event's JSON. */
  abstract String first(long n);

  /** The JSON of output event {@code i} (its offset) of a stream of n events. */
  abstract String output(long i, long n);

  /** The final event's JSON. */
  abstract String last(long n);

  /** The publisher under test for n elements. */
  abstract Flow.Publisher<T> publisher(long n);

  /** A publisher whose request would fail. */
  abstract Flow.Publisher<T> failingPublisher();

  @BeforeClass
  public void startAgent() throws IOException {
    server = new MockWebServer();
    // Never enqueue: the TCK creates publishers it never subscribes to.
    server.setDispatcher(new Dispatcher() {
      @Override
      public MockResponse dispatch(RecordedRequest request) {
        long n = count(request);
        if (n < 1) {
          return Fixtures.errorResponse(500, "INTERNAL_ERROR", "scripted failure for " + n + " events", "{}");
        }
        return Fixtures.eventStream(events(n));
      }
    });
    server.start();
    sandbox = Fixtures.client(server);
  }

  @AfterClass
  public void stopAgent() throws IOException {
    sandbox.close();
    server.shutdown();
    assertThat(violations).as("signals to the cancelled first subscribers of used-up publishers").isEmpty();
  }

  private String events(long n) {
    StringBuilder sb = new StringBuilder();
    if (n >= 2) {
      sb.append("data: ").append(first(n)).append("\n\n");
    }
    boolean endless = n > ENDLESS;
    for (long i = 0; i < (endless ? ENDLESS : n - 2); i++) {
      sb.append("data: ").append(output(i, n)).append("\n\n");
    }
    if (!endless) { // endless: more than any test consumes; the subscriber cancels first
      sb.append("data: ").append(last(n)).append("\n\n");
    }
    return sb.toString();
  }

  @Override
  public Flow.Publisher<T> createFlowPublisher(long elements) {
    return publisher(elements);
  }

  /**
   * A publisher that refuses its subscriber (§1.9): one already used. A publisher whose request
   * fails with HTTP 500 does not qualify, because it is lazy: the TCK never requests from the
   * failed publisher, so the 500 would never be asked for (ExecStreamTest and LogStreamTest
   * cover error answers).
   */
  @Override
  public Flow.Publisher<T> createFailedFlowPublisher() {
    return Fixtures.usedUp(failingPublisher(), violations);
  }

  /**
   * The largest count the TCK asks for is Integer.MAX_VALUE, in
   * {@code required_spec317_mustNotSignalOnErrorWhenPendingAboveLongMaxValue}, which cancels
   * after 11 elements; the scripted agent streams {@value #ENDLESS} events without an end for such counts.
   */
  @Override
  public long maxElementsFromPublisher() {
    return Integer.MAX_VALUE;
  }

  @Override
  @Test
  public void optional_spec105_emptyStreamMustTerminateBySignallingOnComplete() throws Throwable {
    throw new SkipException("every stream ends with its final event (complete or exit), so it cannot have zero elements");
  }
}
