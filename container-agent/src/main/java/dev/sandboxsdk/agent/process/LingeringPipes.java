package dev.sandboxsdk.agent.process;

import java.util.concurrent.TimeUnit;

/**
 * Decides when the output pipes of a process that has exited count as drained although they are
 * still open: another process holds them, either a background child in the group (given up on
 * soon) or one that escaped it (waited for longer), and never beyond a fixed limit. A pipe that
 * no process holds any more (the kernel says so: a poll reports hang-up) is never given up on,
 * nor one with data waiting until the limit: an idle-looking reader may only be one that has not
 * run yet (a busy or starved event loop), with the process's last output still unread.
 *
 * <p>Not thread-safe: its owner calls it under its own monitor ({@code ManagedProcess.maybeFinish}).
 */
final class LingeringPipes {
  /**
   * After the process exited, a pipe that stays open this long with its reader idle is taken as
   * drained: a background child of the command holds it (as in {@code sleep 60 & echo hi}).
   */
  private static final long LINGER_IDLE_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
  /** The same when no child is left in the group, so the holder escaped it (e.g. a daemon). */
  private static final long ESCAPED_IDLE_NANOS = TimeUnit.SECONDS.toNanos(2);
  /**
   * The longest the pipes are waited for after the process exited, however busy they are: a
   * child left behind that writes more often than the idle times above (a server logging
   * requests, a loop) would otherwise keep an exec from ever finishing.
   */
  private static final long MAX_LINGER_NANOS = TimeUnit.SECONDS.toNanos(3);

  /** The process's pid, which is also its group id. */
  private final long pgid;
  private final OutputPump stdoutPump;
  private final OutputPump stderrPump;
  private Boolean lingeringChildren; // decided once, when the pipes outlive the exit by 100 ms
  private long exitSeenNanos; // when drained first found the process dead, 0 before

  LingeringPipes(long pgid, OutputPump stdoutPump, OutputPump stderrPump) {
    this.pgid = pgid;
    this.stdoutPump = stdoutPump;
    this.stderrPump = stderrPump;
  }

  /**
   * Whether the process, found dead at {@code now} with a pipe still open, may finish without
   * waiting for end of file; false means ask again later (the exit watcher does).
   */
  boolean drained(long now) {
    if (exitSeenNanos == 0) {
      exitSeenNanos = now;
    }
    OutputPump.Backlog out = stdoutPump.backlog();
    OutputPump.Backlog err = stderrPump.backlog();
    if (out == OutputPump.Backlog.END_OF_FILE || err == OutputPump.Backlog.END_OF_FILE) {
      // No process holds that pipe any more, so nothing lingers: what is left in it is the exited
      // process's own last output, and its reader reaches end of file once it has read that.
      // Never given up on, whatever the clock says: the reader may just not have run yet.
      return false;
    }
    boolean lingeredTooLong = now - exitSeenNanos >= MAX_LINGER_NANOS;
    boolean outIdle = lingeredTooLong || stdoutPump.idleFor(now, LINGER_IDLE_NANOS, out);
    boolean errIdle = lingeredTooLong || stderrPump.idleFor(now, LINGER_IDLE_NANOS, err);
    if (!outIdle || !errIdle) {
      return false;
    }
    if (lingeringChildren == null) {
      lingeringChildren = ProcessGroups.liveGroups().contains(pgid);
    }
    if (!lingeringChildren && !lingeredTooLong
        && (!stdoutPump.idleFor(now, ESCAPED_IDLE_NANOS, out) || !stderrPump.idleFor(now, ESCAPED_IDLE_NANOS, err))) {
      return false;
    }
    return true;
  }
}
