package dev.sandboxsdk.mcp.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * The replay buffers' bounds, without HTTP: per stream, per session and over all sessions. The
 * streams here have no connection (as after the client went away), so every event only goes to
 * the buffer. HttpTransportIT covers resumption over real connections.
 */
class ResumableStreamTest {
  /** Resumption checks its bounds before it opens a connection; these tests never get that far. */
  private static final Supplier<SseStream> NO_CONNECTION = () -> {
    throw new AssertionError("a connection was opened for a resumption that should have been refused");
  };

  @Test
  void aStreamKeepsAtMostMaxBytesOfItsNewestEvents() {
    ResumableStream.Budget budget = new ResumableStream.Budget();
    ResumableStream s = new ResumableStream.Registry("0000abcd", budget).create();

    for (int i = 0; i < 2_000; i++) {
      assertThat(s.send(message(i, 1_000))).isTrue();
    }

    assertThat(s.bufferedBytes()).isLessThanOrEqualTo(ResumableStream.MAX_BYTES)
        .isGreaterThan(ResumableStream.MAX_BYTES - 2_000);
    assertThat(budget.totalBytes()).isEqualTo(s.bufferedBytes());
    assertThat(s.resume(0, NO_CONNECTION)).as("the first events are gone").isEqualTo(ResumableStream.Resume.GONE);
    assertThat(s.resume(1_000, NO_CONNECTION)).isEqualTo(ResumableStream.Resume.GONE);
    assertThat(s.resume(2_001, NO_CONNECTION)).isEqualTo(ResumableStream.Resume.NOT_ISSUED);
  }

  @Test
  void theNewestEventIsKeptEvenWhenLargerThanTheBound() {
    ResumableStream.Budget budget = new ResumableStream.Budget();
    ResumableStream s = new ResumableStream.Registry("0000abcd", budget).create();
    s.send(message(1, 100));

    s.send(message(2, ResumableStream.MAX_BYTES * 2));

    assertThat(s.bufferedBytes()).isGreaterThan(ResumableStream.MAX_BYTES * 2L);
    assertThat(s.resume(0, NO_CONNECTION)).as("the small event before it was dropped").isEqualTo(
        ResumableStream.Resume.GONE);
    s.send(message(3, 100));
    assertThat(s.bufferedBytes()).as("dropped once a newer event came").isLessThan(1_000);
  }

  @Test
  void aSessionKeepsEightEndedStreamsAndRunningOnes() {
    ResumableStream.Budget budget = new ResumableStream.Budget();
    ResumableStream.Registry registry = new ResumableStream.Registry("0000abcd", budget);
    ResumableStream running = registry.create();
    running.send(message(0, 100));
    List<ResumableStream> ended = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      ResumableStream s = registry.create();
      s.send(message(i, 100));
      s.end();
      ended.add(s);
    }

    assertThat(registry.get(running.number)).isSameAs(running);
    assertThat(registry.get(ended.get(0).number)).isNull();
    assertThat(registry.get(ended.get(1).number)).isNull();
    for (ResumableStream s : ended.subList(2, 10)) {
      assertThat(registry.get(s.number)).isSameAs(s);
    }
    assertThat(registry.issued(ended.get(0).number)).as("issued, though no longer kept").isTrue();
    assertThat(registry.issued(ended.get(9).number + 1)).isFalse();
    assertThat(ended.get(0).resume(0, NO_CONNECTION)).isEqualTo(ResumableStream.Resume.GONE);
    assertThat(budget.totalBytes()).as("the evicted streams' events are freed")
        .isEqualTo(running.bufferedBytes() + ended.subList(2, 10).stream().mapToLong(ResumableStream::bufferedBytes).sum());

    registry.close();

    assertThat(budget.totalBytes()).as("a closed session keeps nothing").isZero();
    assertThat(registry.get(running.number)).isNull();
    assertThat(running.send(message(1, 10))).as("a call's late events after its session ended are dropped").isFalse();
    assertThat(budget.totalBytes()).isZero();
  }

  @Test
  void allSessionsTogetherKeepAtMostTheBudgetOfEndedStreamsDroppingTheLongestEnded() {
    long max = 1024 * 1024;
    ResumableStream.Budget budget = new ResumableStream.Budget(max);
    List<ResumableStream> ended = new ArrayList<>();
    for (int session = 0; session < 10; session++) {
      ResumableStream.Registry registry = new ResumableStream.Registry(String.format("%08x", session), budget);
      for (int i = 0; i < 3; i++) {
        ResumableStream s = registry.create();
        for (int j = 0; j < 4; j++) {
          s.send(message(j, 50_000));
        }
        s.end();
        ended.add(s);
      }
    }

    assertThat(budget.totalBytes()).isLessThanOrEqualTo(max).isGreaterThan(max - 250_000);
    assertThat(ended.get(0).resume(0, NO_CONNECTION)).as("the longest-ended went first").isEqualTo(
        ResumableStream.Resume.GONE);
    assertThat(ended.get(ended.size() - 1).bufferedBytes()).as("the newest is kept").isGreaterThan(200_000);
    long kept = ended.stream().mapToLong(ResumableStream::bufferedBytes).sum();
    assertThat(kept).isEqualTo(budget.totalBytes());
  }

  private static ObjectNode message(int n, int size) {
    return JsonRpc.notification("notifications/progress", Json.object().put("progress", n).put("message", "x".repeat(size)));
  }
}
