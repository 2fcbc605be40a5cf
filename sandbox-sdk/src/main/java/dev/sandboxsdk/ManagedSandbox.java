package dev.sandboxsdk;

/**
 * A sandbox that a {@link SandboxProvider} created and manages: a container, or (later) a pod. It
 * has an id under which any JVM that can reach the same provider finds it again
 * ({@link SandboxProvider#get(String)}), and it can be destroyed from there.
 *
 * <p>{@link #close()} releases this handle; whether it also removes the sandbox is the
 * provider's rule (the container provider removes the sandboxes it created unless told to keep
 * them, and never one it only attached to). {@link #destroy()} always removes it and everything
 * it created (its workspace volume included). Thread-safe.
 */
public interface ManagedSandbox extends Sandbox {

  /** The provider's id of this sandbox, e.g. a container id. */
  String id();

  /** What the provider knows about this sandbox now (asks the provider, e.g. the engine). */
  SandboxInfo info();
}
