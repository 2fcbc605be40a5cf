package dev.sandboxsdk.agent.session;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** A session's turns: the bounded wait and its refusal, and a delete that races a command's start. */
class SessionTest {
  private final Session session = new Session("s1", Path.of("/nonexistent/s1.state"), "/tmp/s1.state");

  @Test
  void aSecondCommandWaitsItsBoundThenIsRefusedWithSessionBusy() {
    session.acquire(100);
    assertThat(session.busy()).isTrue();
    long t0 = System.nanoTime();

    assertThatThrownBy(() -> session.acquire(200))
        .isInstanceOf(AgentException.class)
        .satisfies(e -> assertThat(((AgentException) e).code()).isEqualTo(ErrorCode.SESSION_BUSY))
        .hasMessageContaining("still running a command after 200 ms");
    assertThat(System.nanoTime() - t0).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(200));
    session.release();
    session.acquire(100);
    assertThat(session.commands()).isEqualTo(2);
  }

  @Test
  void aWaitingCommandGetsInOnceTheOneBeforeReleases() throws Exception {
    session.acquire(100);
    CompletableFuture<Void> second = CompletableFuture.runAsync(() -> session.acquire(10_000));
    Thread.sleep(100);
    assertThat(second).isNotDone();
    session.release();
    second.get(5, TimeUnit.SECONDS);
    assertThat(session.busy()).isTrue();
  }

  @Test
  void aDeleteBeforeTheStopActionIsSetStillStopsTheCommand() {
    AtomicInteger stops = new AtomicInteger();
    session.acquire(100);
    session.delete(); // no command registered yet
    session.running(stops::incrementAndGet);
    assertThat(stops).hasValue(1);
  }

  @Test
  void aDeletedSessionTakesNoNewCommand() {
    session.delete();
    assertThatThrownBy(() -> session.acquire(100))
        .isInstanceOf(AgentException.class)
        .satisfies(e -> assertThat(((AgentException) e).code()).isEqualTo(ErrorCode.SESSION_NOT_FOUND));
    assertThat(session.busy()).isFalse();
  }
}
