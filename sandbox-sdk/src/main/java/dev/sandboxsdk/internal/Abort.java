package dev.sandboxsdk.internal;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Lets one thread abort work that another thread is blocked in, including an HTTP call whose
 * response headers have not arrived yet (before any cursor exists to close). Thread-safe.
 */
final class Abort {
  private final List<Runnable> actions = new CopyOnWriteArrayList<>();
  private volatile boolean aborted;

  /** Runs {@code action} on abort, or right away if already aborted. */
  void onAbort(Runnable action) {
    actions.add(action);
    if (aborted) {
      action.run();
    }
  }

  void abort() {
    aborted = true;
    for (Runnable a : actions) {
      a.run();
    }
  }
}
