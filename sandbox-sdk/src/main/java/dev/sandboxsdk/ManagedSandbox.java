package dev.sandboxsdk;

/**
 * A sandbox that a {@link SandboxProvider} created and manages: a container, a local agent with
 * its workspace, or (later) a pod. It has an id under which any JVM that can reach the same
 * provider finds it again ({@link SandboxProvider#get(String)}), and it can be destroyed from there.
 *
 * <p>{@link #close()} releases this handle; whether it also removes the sandbox is the
 * provider's rule (an unnamed sandbox is removed when the handle that created it closes; a
 * named one, {@link SandboxSpec.Builder#name(String)}, stays until {@link #destroy()}).
 * {@link #destroy()} always removes it and everything it created (its workspace and
 * checkpoints included).
 *
 * <p><b>Lifecycle.</b> {@link #shutdown()} stops the sandbox's compute (its agent and every
 * process) and keeps its files; {@link #wake()} starts it again on the same files. A sandbox
 * also stops by itself after its idle timeout ({@link SandboxSpec.Builder#idleTimeout}); a named
 * one keeps its files then too. While stopped, every call but {@link #info()}, {@link #wake()},
 * {@link #shutdown()}, {@link #destroy()} and {@link #close()} fails with a {@link SandboxException}
 * that says so. Thread-safe.
 */
public interface ManagedSandbox extends Sandbox {

  /** The provider's id of this sandbox, e.g. a container id, or the name of a named sandbox. */
  String id();

  /** What the provider knows about this sandbox now (asks the provider, e.g. the engine). */
  SandboxInfo info();

  /**
   * Stops the sandbox's agent and every process in it, and keeps its files (the workspace, its
   * checkpoints). Returns once they are stopped; a no-op if the sandbox is stopped already.
   */
  void shutdown();

  /**
   * Starts a stopped sandbox again on its files and returns once its agent answers; a no-op if it
   * runs. Processes that ran before the shutdown do not come back: start them again.
   */
  void wake();
}
