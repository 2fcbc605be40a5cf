package dev.sandboxsdk;

import java.util.Locale;

/** Where a background process is in its life. */
public enum ProcessStatus {
  /** Being spawned (part of the vocabulary; the current agent never reports it). */
  STARTING,
  /** Running. */
  RUNNING,
  /** Exited with status 0. */
  COMPLETED,
  /** Exited with a non-zero status of its own. */
  FAILED,
  /** Ended by a signal the agent sent: a kill, a timeout, kill-all or shutdown. */
  KILLED,
  /** Could not be run or supervised (part of the vocabulary; the current agent never reports it). */
  ERROR;

  /** Whether the process has ended, so its status will not change any more. */
  public boolean isTerminal() {
    return this != STARTING && this != RUNNING;
  }

  /** The name used on the wire, e.g. {@code "running"}. */
  public String wireName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /**
   * Parses a wire name in any letter case.
   *
   * @throws IllegalArgumentException if the text names no status
   */
  public static ProcessStatus fromWire(String text) {
    if (text == null) {
      throw new IllegalArgumentException("status == null");
    }
    try {
      return valueOf(text.strip().toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("unknown process status '" + text + "'", e);
    }
  }
}
