package dev.sandboxsdk.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Every stream has an {@link IdleWatch} on the SDK's one timer: it must leave no task behind
 * however the stream ends (closed, read to its end and dropped, or timed out), or thousands of
 * streams would fill the timer's queue.
 */
class IdleWatchTest {
  private static final int STREAMS = 10_000;

  private static int timerTasks() {
    return ((ScheduledThreadPoolExecutor) SdkTimer.get()).getQueue().size();
  }

  /** Waits until the timer's queue is back to {@code most} tasks; false if it is not within 10 s. */
  private static boolean drainsTo(int most) throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (timerTasks() > most) {
      if (System.nanoTime() > end) {
        return false;
      }
      Thread.sleep(10);
    }
    return true;
  }

  @Test
  void closedWatchesLeaveNoTaskOnTheTimer() {
    int before = timerTasks();
    AtomicInteger silences = new AtomicInteger();
    List<IdleWatch> watches = new ArrayList<>();
    for (int i = 0; i < STREAMS; i++) {
      IdleWatch w = new IdleWatch(TimeUnit.MINUTES.toNanos(5), silences::incrementAndGet);
      w.beforeRead(); // a read in progress: its check is scheduled
      watches.add(w);
    }
    assertThat(timerTasks()).isGreaterThanOrEqualTo(before + STREAMS);
    watches.forEach(IdleWatch::close);
    assertThat(timerTasks()).as("cancelled checks are removed from the queue at once").isLessThanOrEqualTo(before);
    assertThat(silences).hasValue(0);
  }

  @Test
  void watchesOfStreamsThatAreNotReadStopThemselves() throws InterruptedException {
    int before = timerTasks();
    AtomicInteger silences = new AtomicInteger();
    for (int i = 0; i < STREAMS; i++) {
      IdleWatch w = new IdleWatch(TimeUnit.MILLISECONDS.toNanos(50), silences::incrementAndGet);
      w.beforeRead();
      w.afterRead(); // the stream's last read; it is then dropped without close()
    }
    assertThat(drainsTo(before)).as("each check finds no read and does not schedule another").isTrue();
    assertThat(silences).hasValue(0);
  }

  @Test
  void aReadThatNeverEndsIsReportedOnceAndTheWatchStops() throws InterruptedException {
    int before = timerTasks();
    CountDownLatch silent = new CountDownLatch(1);
    AtomicInteger silences = new AtomicInteger();
    IdleWatch w = new IdleWatch(TimeUnit.MILLISECONDS.toNanos(50), () -> {
      silences.incrementAndGet();
      silent.countDown();
    });
    w.beforeRead();
    assertThat(silent.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(w.expired()).isTrue();
    assertThat(drainsTo(before)).isTrue();
    assertThat(silences).hasValue(1);
  }
}
