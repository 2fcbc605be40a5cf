package dev.sandboxsdk.internal;

/**
 * A blocking, pull-based sequence of events read from the agent. One thread calls
 * {@link #next()}; any thread may call {@link #close()}, which also aborts a blocked
 * {@code next()}.
 */
interface EventCursor<T> extends AutoCloseable {

  /**
   * The next event, blocking until it arrives; null once the stream has ended properly (after
   * its final event).
   *
   * @throws Exception if the stream failed; the cursor is then unusable
   */
  T next() throws Exception;

  /** Whether the last event returned was the final one, so the stream is complete. */
  boolean isFinished();

  /** Releases the connection. Idempotent and thread-safe. */
  @Override
  void close();
}
