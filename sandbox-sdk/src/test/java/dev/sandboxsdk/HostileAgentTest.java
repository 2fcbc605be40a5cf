package dev.sandboxsdk;

import static dev.sandboxsdk.Fixtures.sse;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * An agent (or whoever sits between it and the SDK) that sends more than any honest answer can
 * be: the SDK stops at a bound instead of holding whatever arrives. (After refusing an answer,
 * OkHttp may skip the rest of the body for up to 100 ms to keep the connection; it does not keep
 * what it skips.)
 */
@Timeout(60)
class HostileAgentTest {
  private static final long MIB = 1 << 20;
  private static final String START = "{\"type\":\"start\",\"command\":\"yes\",\"pid\":42,\"processId\":\"exec_1\"}";
  private static final String COMPLETE = "{\"type\":\"complete\",\"exitCode\":0,\"timedOut\":false,\"duration\":12}";

  @Test
  void anExecAnswerLongerThanTheOutputLimitsAllowIsRefusedWithoutReadingItAll() throws Exception {
    AtomicLong written = new AtomicLong();
    long offered = 256 * MIB;
    try (RawHttpServer raw = new RawHttpServer((request, exchange) -> {
          exchange.startChunkedJson();
          exchange.write("b\r\n{\"stdout\":\"\r\n"); // a string that never ends
          writeMiBs(exchange, true, "x", offered, written);
          return false;
        });
        Sandbox client = Sandbox.builder().baseUrl(raw.url()).token("t").build()) {

      assertThatThrownBy(() -> client.exec(Command.shell("yes"), ExecOptions.builder().maxOutputBytes(1024).build()))
          .isInstanceOf(SandboxException.class)
          .hasMessageContaining("longer than " + (64 * MIB) + " bytes");
      // It stopped at the limit: the agent got to write the 64 MiB read plus what socket buffers hold.
      assertThat(written.get()).as("bytes the agent got to write of %d", offered).isLessThan(offered / 2);
    }
  }

  @Test
  void anEventOfEndlessDataLinesEndsTheStreamInsteadOfGrowingWithoutBound() throws Exception {
    AtomicLong written = new AtomicLong();
    long offered = 64 * MIB;
    try (RawHttpServer raw = new RawHttpServer((request, exchange) -> {
          exchange.startEventStream();
          exchange.write(sse(START));
          writeMiBs(exchange, false, "data: x\n", offered, written); // one event that does not end
          exchange.write("\n");
          return false;
        });
        Sandbox client = Sandbox.builder().baseUrl(raw.url()).token("t").streamIdleTimeout(Duration.ofSeconds(5))
            .build()) {
      RecordingSubscriber<ExecEvent> subscriber = new RecordingSubscriber<>();
      client.execStream("yes").subscribe(subscriber);
      subscriber.request(Long.MAX_VALUE);

      assertThat(subscriber.takeNext()).isInstanceOf(ExecEvent.Start.class);
      assertThat(subscriber.takeError(SandboxException.class, Duration.ofSeconds(30)))
          .hasMessageContaining("event longer than");
      assertThat(written.get()).as("bytes the agent got to write of %d", offered).isLessThan(40 * MIB);
    }
  }

  @Test
  void outputWhoseByteCountsUnderstateItsTextIsStillCutAtMaxOutputBytes() throws Exception {
    String kib = "x".repeat(1024);
    StringBuilder events = new StringBuilder(sse(START));
    for (int i = 0; i < 100; i++) {
      events.append(sse("{\"type\":\"stdout\",\"data\":\"" + kib + "\",\"offset\":0,\"bytes\":0}"));
    }
    events.append(sse(COMPLETE));
    try (RawHttpServer raw = new RawHttpServer((request, exchange) -> {
          exchange.startEventStream();
          exchange.write(events.toString());
          return false;
        });
        Sandbox client = Sandbox.builder().baseUrl(raw.url()).token("t").streamIdleTimeout(Duration.ofSeconds(5))
            .build()) {

      ExecResult r = client.exec(Command.shell("yes"), ExecOptions.builder().maxOutputBytes(4096).onOutput((s, t) -> { }).build());

      assertThat(r.stdout()).hasSize(4096);
      assertThat(r.truncated()).isTrue();
    }
  }

  @Test
  void anHonestAnswerWithMoreThanTwentyMillionCharactersOfOutputIsReadWhole() throws Exception {
    String stdout = "x".repeat(24_000_000); // Jackson refuses strings over 20,000,000 chars by default
    String answer = "{\"success\":true,\"exitCode\":0,\"stdout\":\"" + stdout + "\",\"stderr\":\"\","
        + "\"command\":\"yes\",\"duration\":5,\"timedOut\":false,\"truncated\":false,\"pid\":7,"
        + "\"timestamp\":\"2026-11-22T01:10:17.681185958Z\"}";
    try (RawHttpServer raw = new RawHttpServer((request, exchange) -> {
          exchange.respond(200, "application/json; charset=utf-8", answer);
          return false;
        });
        Sandbox client = Sandbox.builder().baseUrl(raw.url()).token("t").build()) {

      ExecResult r = client.exec(Command.shell("yes"), ExecOptions.builder().maxOutputBytes(32 << 20).build());

      assertThat(r.stdout()).hasSize(stdout.length());
    }
  }

  /**
   * Writes {@code unit} repeated, 1 MiB at a time (as HTTP chunks if {@code chunked}), until
   * {@code total} bytes or until a write fails because the client hung up; counts what it wrote.
   */
  private static void writeMiBs(RawHttpServer.Exchange exchange, boolean chunked, String unit, long total,
      AtomicLong written) {
    byte[] block = unit.repeat((int) (MIB / unit.length())).getBytes(UTF_8);
    try {
      while (written.get() < total) {
        if (chunked) {
          exchange.write(Integer.toHexString(block.length) + "\r\n");
        }
        exchange.writeBytes(block);
        if (chunked) {
          exchange.write("\r\n");
        }
        written.addAndGet(block.length);
      }
    } catch (IOException hungUp) {
      // the client stopped reading: what it was sent is counted
    }
  }
}
