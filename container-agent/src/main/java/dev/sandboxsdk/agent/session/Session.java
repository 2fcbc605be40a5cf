package dev.sandboxsdk.agent.session;

import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * One session: where its state lives and the permit that lets one command at a time run in it.
 * Thread-safe: the permit serialises commands; the counters are read without it.
 */
public final class Session {
  private final String id;
  /** The state file on the agent's side. */
  private final Path stateOnHost;
  /** The same file as commands see it. */
  private final String stateInSandbox;
  private final Instant createdAt = Instant.now();
  private final Semaphore permit = new Semaphore(1, true);
  private volatile Instant lastUsedAt = createdAt;
  private volatile long commands;
  private volatile boolean deleted;
  /** The command running now, to stop when the session is deleted; null when idle. */
  private volatile Runnable stopRunning;

  Session(String id, Path stateOnHost, String stateInSandbox) {
    this.id = id;
    this.stateOnHost = stateOnHost;
    this.stateInSandbox = stateInSandbox;
  }

  public String id() {
    return id;
  }

  public Instant createdAt() {
    return createdAt;
  }

  /** When its last command started, or when it was created. */
  public Instant lastUsedAt() {
    return lastUsedAt;
  }

  /** How many commands have been started in it. */
  public long commands() {
    return commands;
  }

  /** Whether a command runs in it now. */
  public boolean busy() {
    return permit.availablePermits() == 0;
  }

  Path stateOnHost() {
    return stateOnHost;
  }

  String stateInSandbox() {
    return stateInSandbox;
  }

  boolean deleted() {
    return deleted;
  }

  /**
   * Waits up to {@code waitMs} for the command before to end, then holds the session.
   *
   * @throws AgentException SESSION_BUSY (409) when it still runs, SESSION_NOT_FOUND when the
   *     session was deleted meanwhile
   */
  void acquire(long waitMs) {
    boolean got;
    try {
      got = permit.tryAcquire(waitMs, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AgentException(ErrorCode.SHUTTING_DOWN, "interrupted while waiting for session '" + id + "'");
    }
    if (!got) {
      throw new AgentException(ErrorCode.SESSION_BUSY, "session '" + id + "' is still running a command after "
          + waitMs + " ms of waiting (commands in one session run one at a time): wait for it, kill it"
          + " (DELETE /api/execute/{id}), or use another session", Map.of("sessionId", id, "waitedMs", waitMs));
    }
    if (deleted) {
      permit.release();
      throw Sessions.notFound(id);
    }
    lastUsedAt = Instant.now();
    commands++;
  }

  /**
   * Tells the session how to stop the command that holds it (when the session is deleted). A
   * delete that came between the permit and this call stops it now: both sides write their
   * volatile field before reading the other's, so at least one of them sees both.
   */
  void running(Runnable stop) {
    this.stopRunning = stop;
    if (deleted) {
      stop.run();
    }
  }

  void release() {
    stopRunning = null;
    permit.release();
  }

  /** Marks it deleted and stops the command running in it, if any. */
  void delete() {
    deleted = true;
    Runnable stop = stopRunning;
    if (stop != null) {
      stop.run();
    }
  }
}
