package dev.sandboxsdk.agent.watch;

import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.fs.Workspace;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The agent's file watches: at most {@link #MAX_WATCHES} open at once, each a {@link FileWatch}
 * of a directory of the workspace. Everything a watch holds is released when it is closed.
 */
public final class Watches {
  /** Watch streams open at once: each holds an inotify instance (the kernel's default is 128 per user). */
  public static final int MAX_WATCHES = 16;

  private final Workspace workspace;
  private final AtomicInteger open = new AtomicInteger();
  private final AtomicLong ids = new AtomicLong();

  public Watches(Workspace workspace) {
    this.workspace = workspace;
  }

  /**
   * Registers the tree {@code r} names and starts the watch's thread; throws (cap, limit,
   * permission) before anything is sent, with nothing left open.
   */
  public FileWatch open(WatchRequest r) {
    if (open.incrementAndGet() > MAX_WATCHES) {
      open.decrementAndGet();
      throw new AgentException(ErrorCode.TOO_MANY_WATCHES, "this agent already serves " + MAX_WATCHES
          + " watch streams; close one (or watch one directory recursively instead of several)",
          Map.of("limit", MAX_WATCHES));
    }
    FileWatch w = null;
    try {
      w = new FileWatch(r, "watch-" + ids.incrementAndGet(), workspace, open::decrementAndGet);
      w.start();
      return w;
    } catch (RuntimeException | Error e) {
      if (w != null) {
        w.close();
      } else {
        open.decrementAndGet();
      }
      throw e;
    }
  }
}
