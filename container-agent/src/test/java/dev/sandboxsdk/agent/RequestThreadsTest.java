package dev.sandboxsdk.agent;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class RequestThreadsTest {
  /** A thread factory that fails the way the JVM does when a pids limit leaves no room for a thread. */
  private static Thread refuse(Runnable r) {
    throw new OutOfMemoryError("unable to create native thread: possibly out of memory or process/resource limits reached");
  }

  @Test
  void whenNoThreadCanBeMadeAnExchangeRunsOnAReservedOneAndExecuteDoesNotThrow() throws Exception {
    RequestThreads threads = new RequestThreads(2, RequestThreadsTest::refuse);
    try {
      AtomicReference<String> ranOn = new AtomicReference<>();
      CountDownLatch done = new CountDownLatch(1);

      threads.execute(() -> {
        ranOn.set(Thread.currentThread().getName());
        done.countDown();
      });

      assertThat(done.await(5, TimeUnit.SECONDS)).isTrue();
      assertThat(ranOn.get()).startsWith("agent-http-reserve-");
      assertThat(threads.reserveUses()).isEqualTo(1);
    } finally {
      threads.shutdownNow();
    }
  }

  @Test
  void withEveryReservedThreadBusyAnExchangeWaitsForOneInsteadOfFailing() throws Exception {
    RequestThreads threads = new RequestThreads(1, RequestThreadsTest::refuse);
    try {
      CountDownLatch release = new CountDownLatch(1);
      CountDownLatch second = new CountDownLatch(1);
      threads.execute(() -> {
        try {
          release.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      });
      threads.execute(second::countDown);

      assertThat(second.await(200, TimeUnit.MILLISECONDS)).as("ran while the only reserved thread was busy").isFalse();
      release.countDown();
      assertThat(second.await(5, TimeUnit.SECONDS)).isTrue();
    } finally {
      threads.shutdownNow();
    }
  }

  @Test
  void whileThreadsCanBeMadeExchangesGetThreadsOfTheirOwn() throws Exception {
    RequestThreads threads = new RequestThreads(1);
    try {
      CountDownLatch release = new CountDownLatch(1);
      CountDownLatch started = new CountDownLatch(3);
      AtomicBoolean onReserve = new AtomicBoolean();
      for (int i = 0; i < 3; i++) {
        threads.execute(() -> {
          onReserve.compareAndSet(false, Thread.currentThread().getName().startsWith("agent-http-reserve-"));
          started.countDown();
          try {
            release.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        });
      }

      assertThat(started.await(5, TimeUnit.SECONDS)).as("three exchanges at once").isTrue();
      assertThat(onReserve.get()).isFalse();
      assertThat(threads.reserveUses()).isZero();
      release.countDown();
    } finally {
      threads.shutdownNow();
    }
  }
}
