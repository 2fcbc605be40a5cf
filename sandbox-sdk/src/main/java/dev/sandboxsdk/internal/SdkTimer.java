package dev.sandboxsdk.internal;

import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;

/**
 * The SDK's one timer thread, for short tasks at a time: deadlines of waits and the idle checks
 * of local sandboxes. A daemon, so it never keeps the JVM alive. Not API.
 */
public final class SdkTimer {
  private static final ScheduledExecutorService TIMER = create();

  private SdkTimer() {}

  public static ScheduledExecutorService get() {
    return TIMER;
  }

  private static ScheduledExecutorService create() {
    ScheduledThreadPoolExecutor t = new ScheduledThreadPoolExecutor(1, r -> {
      Thread thread = new Thread(r, "sandbox-sdk-timer");
      thread.setDaemon(true);
      return thread;
    });
    t.setRemoveOnCancelPolicy(true);
    return t;
  }
}
