package dev.sandboxsdk.spi;

import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxInfo;

/**
 * What a provider does to one of its sandboxes, by id, for the {@link SandboxHandle}s it hands out:
 * the provider-specific half of {@link dev.sandboxsdk.ManagedSandbox}. The handle calls it under its
 * own lock for one sandbox at a time; implementations are thread-safe across sandboxes.
 */
public interface SandboxBackend {

  /** What the provider knows about the sandbox now. @throws SandboxException if it no longer exists */
  SandboxInfo info(String id);

  /**
   * Starts the sandbox if it is stopped, and returns a client of its running agent once it answers.
   * {@code current} is the handle's client (null if it has none): return it if it still reaches the
   * agent, else a new one (the handle closes the old one).
   *
   * @throws SandboxException if the sandbox no longer exists or cannot start again (saying why)
   */
  Sandbox wake(String id, Sandbox current);

  /**
   * Stops the sandbox's agent and every process, keeping its files; returns once they are stopped,
   * and at once if it was stopped. Returns false if the sandbox no longer exists.
   *
   * @throws SandboxException where the provider cannot stop a sandbox and keep it (saying what to do instead)
   */
  boolean stop(String id);

  /** Removes the sandbox and everything it created (its files and checkpoints); a no-op if it is gone. */
  void remove(String id);

  /**
   * The error for a call on the sandbox while it is not running: what happened and what to do.
   * Called on the failing call's thread, so it should not ask a remote engine or API server.
   *
   * @param what how the handle names the sandbox in messages, e.g. {@code sandbox container 'review'}
   */
  SandboxException notRunning(String id, String what);
}
