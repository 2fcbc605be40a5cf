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
import org.testng.annotations.AfterClass;
import org.testng.annotations.BeforeClass;

/**
 * The Reactive Streams TCK against {@link SandboxEgress#watch}, fed by a scripted agent whose audit
 * never runs dry: every poll after sequence s gets the next page, s+1 to s+32, with {@code more}
 * set. The watch never completes (the audit has no last event), so
 * {@link #maxElementsFromPublisher()} is {@code Long.MAX_VALUE}, which is how the TCK is told that
 * a publisher is infinite: it skips the rules that need an {@code onComplete} (§1.2, §1.5, §1.7 and
 * §3.17's completion checks, and the tests that count exactly n elements) and runs every other
 * one, demand, cancellation and reference release among them. {@code EgressWatchTest} covers what
 * the skipped ones would (the order of events, and the end on close or error).
 * Public because TestNG instantiates it.
 */
public class EgressWatchTckTest extends FlowPublisherVerification<EgressEvent> {
  private static final int PAGE = 32;

  private Sandbox sandbox;
  private MockWebServer server;
  private final List<String> violations = Collections.synchronizedList(new ArrayList<>());

  public EgressWatchTckTest() {
    super(new TestEnvironment(500, 100));
  }

  @BeforeClass
  public void startAgent() throws IOException {
    server = new MockWebServer();
    // Never enqueue: the TCK creates publishers it never subscribes to.
    server.setDispatcher(new Dispatcher() {
      @Override
      public MockResponse dispatch(RecordedRequest request) {
        long since = Long.parseLong(request.getRequestUrl().queryParameter("since"));
        // Fewer than the limit, as an agent with fewer events waiting answers: small pages keep
        // the first request within the TCK's 500 ms on a loaded machine.
        int count = Math.min(PAGE, Integer.parseInt(request.getRequestUrl().queryParameter("limit")));
        return EgressWatchTest.page(since + 1, since + count, since + count, true);
      }
    });
    server.start();
    sandbox = Fixtures.client(server);
    sandbox.egress().events(0, 1); // warm the client and the JSON mapping before the timed tests
  }

  @AfterClass
  public void stopAgent() throws IOException {
    sandbox.close();
    server.shutdown();
    assertThat(violations).as("signals to the cancelled first subscribers of used-up publishers").isEmpty();
  }

  @Override
  public Flow.Publisher<EgressEvent> createFlowPublisher(long elements) {
    return sandbox.egress().watch(0);
  }

  /** A publisher that refuses its subscriber (§1.9): one already used, as in {@link ScriptedAgentTck}. */
  @Override
  public Flow.Publisher<EgressEvent> createFailedFlowPublisher() {
    return Fixtures.usedUp(sandbox.egress().watch(0), violations);
  }

  @Override
  public long maxElementsFromPublisher() {
    return Long.MAX_VALUE;
  }
}
