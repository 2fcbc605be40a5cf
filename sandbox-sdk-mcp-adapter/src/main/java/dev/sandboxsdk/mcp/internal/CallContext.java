package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;

/**
 * One running {@code tools/call}: sends its progress notifications and log messages, and runs its
 * cancel hooks when the client sends {@code notifications/cancelled}. Thread-safe.
 */
public final class CallContext {
  private final JsonNode progressToken;
  private final Outbound out;
  private final Session session;
  private final List<Runnable> cancelHooks = new ArrayList<>();
  private boolean cancelled;
  private long progress;

  CallContext(JsonNode progressToken, Outbound out, Session session) {
    this.progressToken = progressToken;
    this.out = out;
    this.session = session;
  }

  public boolean wantsProgress() {
    return progressToken != null;
  }

  /**
   * Sends {@code notifications/progress} when the client asked for progress. {@code advance} is
   * added to the progress value, which therefore only grows (by at least 1 per notification).
   *
   * @param message text for the client, or null
   * @param meta extra {@code _meta} for the notification, or null
   */
  public void progress(long advance, String message, ObjectNode meta) {
    if (progressToken == null) {
      return;
    }
    ObjectNode params = Json.object();
    synchronized (this) {
      if (cancelled) {
        return;
      }
      progress += Math.max(1, advance);
      params.set("progressToken", progressToken);
      params.put("progress", progress);
    }
    if (message != null) {
      params.put("message", message);
    }
    if (meta != null) {
      params.set("_meta", meta);
    }
    out.send(JsonRpc.notification("notifications/progress", params));
  }

  /** Sends a {@code notifications/message} if the session's log level lets it through. */
  public void log(String level, String text) {
    session.log(level, text, out);
  }

  /** Runs {@code hook} on cancellation, or now if the call was already cancelled. */
  public void onCancel(Runnable hook) {
    synchronized (this) {
      if (!cancelled) {
        cancelHooks.add(hook);
        return;
      }
    }
    hook.run();
  }

  /**
   * Runs {@code body} on this thread, interrupting the thread if the call is cancelled meanwhile:
   * for a blocking SDK wait that ends on an interrupt (waitForPort), which would otherwise keep its
   * thread and its connection to the agent until its own timeout. The thread's interrupt status is
   * cleared afterwards, so a cancel that lands as the body returns cannot reach the thread's next task.
   */
  public <T> T interruptibly(java.util.function.Supplier<T> body) {
    Thread worker = Thread.currentThread();
    boolean[] running = {true};
    onCancel(() -> {
      synchronized (running) {
        if (running[0]) {
          worker.interrupt();
        }
      }
    });
    try {
      return body.get();
    } finally {
      synchronized (running) {
        running[0] = false;
        Thread.interrupted();
      }
    }
  }

  public synchronized boolean isCancelled() {
    return cancelled;
  }

  /** Marks the call cancelled and runs its hooks once. */
  void cancel() {
    List<Runnable> hooks;
    synchronized (this) {
      if (cancelled) {
        return;
      }
      cancelled = true;
      hooks = new ArrayList<>(cancelHooks);
      cancelHooks.clear();
    }
    // Last registered first: the tool's own hooks (stop the stream, kill the command) run before
    // the server's, which ends the request and may touch a slow client.
    for (int i = hooks.size() - 1; i >= 0; i--) {
      try {
        hooks.get(i).run();
      } catch (RuntimeException e) {
        org.slf4j.LoggerFactory.getLogger(CallContext.class).warn("a cancel hook failed: {}", e.toString());
      }
    }
  }
}
