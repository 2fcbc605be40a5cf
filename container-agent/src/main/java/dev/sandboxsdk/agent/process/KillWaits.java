package dev.sandboxsdk.agent.process;

import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The waits of a batch kill (kill-all, shutdown), by polling {@code /proc} and the processes'
 * futures on the calling thread: none needs a new thread or process, so they work while a fork
 * bomb holds every slot of a pids limit.
 */
final class KillWaits {
  private KillWaits() {}

  /**
   * Polls until none of {@code pgids} has a member left, not even a zombie, or the deadline passes;
   * returns the groups that still have some. Zombies count: a killed process holds its pid, and its
   * slot of a pids limit, until its parent (for orphans the container's init) reaps it, and a
   * command started right after kill-all would find no room while a killed fork bomb waits to be
   * reaped (a SIGKILL to a group of zombies after the grace period changes nothing).
   */
  static List<Long> awaitGroupsGone(List<Long> pgids, long deadlineNanos) {
    if (pgids.isEmpty()) {
      return List.of();
    }
    return pollUntilEmpty(() -> ProcessGroups.existing(pgids), deadlineNanos, 10);
  }

  /** Asks {@code remaining} every 50 ms until it is empty or the deadline passes; returns its last answer. */
  static List<Long> pollUntilEmpty(Supplier<List<Long>> remaining, long deadlineNanos) {
    return pollUntilEmpty(remaining, deadlineNanos, 50);
  }

  private static List<Long> pollUntilEmpty(Supplier<List<Long>> remaining, long deadlineNanos, long everyMillis) {
    while (true) {
      List<Long> left = remaining.get();
      if (left.isEmpty() || System.nanoTime() >= deadlineNanos) {
        return left;
      }
      try {
        Thread.sleep(everyMillis);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return left;
      }
    }
  }

  /** Waits until every one of {@code targets} has finished, or the deadline passes. */
  static void awaitFinished(List<ManagedProcess> targets, long deadlineNanos) {
    for (ManagedProcess p : targets) {
      long left = deadlineNanos - System.nanoTime();
      if (left <= 0) {
        return;
      }
      try {
        p.finished().get(left, TimeUnit.NANOSECONDS);
      } catch (java.util.concurrent.TimeoutException e) {
        return;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      } catch (java.util.concurrent.ExecutionException e) {
        // finished() never completes exceptionally
      }
    }
  }
}
