package dev.sandboxsdk.internal;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;

/** A future whose cancel also aborts the work behind it (the HTTP call or stream). */
final class CancellableFuture<T> extends CompletableFuture<T> {
  private final List<Runnable> onCancel = new CopyOnWriteArrayList<>();

  void onCancel(Runnable action) {
    onCancel.add(action);
    if (isCancelled()) {
      action.run();
    }
  }

  @Override
  public boolean cancel(boolean mayInterruptIfRunning) {
    boolean cancelled = super.cancel(mayInterruptIfRunning);
    if (cancelled) {
      onCancel.forEach(Runnable::run);
    }
    return cancelled;
  }
}
