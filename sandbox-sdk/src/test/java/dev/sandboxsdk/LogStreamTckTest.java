package dev.sandboxsdk;

import java.io.IOException;
import java.util.concurrent.Flow;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
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
 * The Reactive Streams TCK against {@link Sandbox#streamProcessLogs}. A scripted agent streams
 * process {@code emit-<n>} as exactly n events: {@code process_info}, n-2 {@code stdout},
 * {@code exit} (n = 1: only {@code exit}). Above {@value #ENDLESS} it sends that many output events
 * and no end, for the one rule that asks for Integer.MAX_VALUE elements and cancels early. n = 0 is
 * answered with HTTP 500: a stream always has its final event. Public because TestNG instantiates it.
 */
public class LogStreamTckTest extends FlowPublisherVerification<LogEvent> {
  private static final int ENDLESS = 10_000;
  private static final Pattern EMIT = Pattern.compile("/api/process/emit-(\\d+)/stream");

  private MockWebServer server;
  private Sandbox sandbox;

  public LogStreamTckTest() {
    super(new TestEnvironment(500));
  }

  @BeforeClass
  public void startAgent() throws IOException {
    server = new MockWebServer();
    // Never enqueue: the TCK creates publishers it never subscribes to.
    server.setDispatcher(new Dispatcher() {
      @Override
      public MockResponse dispatch(RecordedRequest request) {
        Matcher m = EMIT.matcher(request.getRequestUrl().encodedPath());
        long n = m.matches() ? Long.parseLong(m.group(1)) : -1;
        if (n < 1) {
          // Every stream ends with exit, so zero events cannot be produced: fail instead.
          return Fixtures.errorResponse(500, "INTERNAL_ERROR", "internal error: scripted", "{}");
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
  }

  private static String events(long n) {
    StringBuilder sb = new StringBuilder();
    if (n >= 2) {
      sb.append("data: {\"type\":\"process_info\",\"processId\":\"emit-").append(n)
          .append("\",\"pid\":4242,\"command\":\"emit\",\"status\":\"running\"}\n\n");
    }
    boolean endless = n > ENDLESS;
    for (long i = 0; i < (endless ? ENDLESS : n - 2); i++) {
      sb.append("data: {\"type\":\"stdout\",\"processId\":\"emit-").append(n).append("\",\"data\":\"")
          .append(i % 10).append("\",\"offset\":").append(i).append(",\"bytes\":1}\n\n");
    }
    if (endless) {
      return sb.toString(); // more than any test consumes; the subscriber cancels first
    }
    sb.append("data: {\"type\":\"exit\",\"processId\":\"emit-").append(n)
        .append("\",\"exitCode\":0,\"status\":\"completed\",\"timedOut\":false,\"data\":\"completed\"}\n\n");
    return sb.toString();
  }

  @Override
  public Flow.Publisher<LogEvent> createFlowPublisher(long elements) {
    return sandbox.streamProcessLogs("emit-" + elements);
  }

  /**
   * A publisher that refuses its subscriber (§1.9): one already used. A publisher whose request
   * fails with HTTP 500 does not qualify, because it is lazy: the TCK never requests from the
   * failed publisher, so the 500 would never be asked for (LogStreamTest covers error answers).
   */
  @Override
  public Flow.Publisher<LogEvent> createFailedFlowPublisher() {
    return Fixtures.usedUp(sandbox.streamProcessLogs("fail-with-500"));
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
    throw new SkipException("a process stream always ends with its exit event, so it cannot have zero elements");
  }
}
