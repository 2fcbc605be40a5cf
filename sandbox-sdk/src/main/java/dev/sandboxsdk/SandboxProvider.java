package dev.sandboxsdk;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * Creates sandboxes somewhere (a container engine, later a Kubernetes cluster) and finds them
 * again. Code written against this interface runs unchanged on every provider; only the line
 * that makes the provider differs. What providers can do differently (wake a stopped sandbox,
 * create from an image, show the workspace on this machine) is data: {@link #capabilities()}.
 *
 * <pre>{@code
 * try (SandboxProvider containers = ContainerProvider.fromEnvironment();
 *      ManagedSandbox sandbox = containers.create(SandboxSpec.builder().memoryBytes(512L << 20).build())) {
 *   System.out.print(sandbox.exec("id -un").stdout());   // sandbox
 * }
 * }</pre>
 *
 * <p>Implementations are thread-safe.
 */
public interface SandboxProvider extends AutoCloseable {

  /** The provider's short name: {@code local}, {@code container}, {@code kubernetes}. */
  String name();

  /**
   * What this provider can do, as data (whether a stopped sandbox can be woken, whether sandboxes
   * come from an image, where their workspace is), so that callers decide from it rather than from
   * which provider they have. The same value on every call.
   */
  ProviderCapabilities capabilities();

  /**
   * The directory on this machine that is the workspace of sandbox {@code id} (whether or not it
   * exists yet), where {@link ProviderCapabilities#hostWorkspace()} says there is one; else empty.
   *
   * @throws IllegalArgumentException if {@code id} cannot name a sandbox of this provider
   */
  default Optional<Path> hostWorkspace(String id) {
    return Optional.empty();
  }

  /**
   * Creates a sandbox with the given settings and returns once its agent answers.
   *
   * @throws SandboxException with a message that says what went wrong (no engine, no image, the
   *     sandbox died during start-up: with its last log lines)
   */
  ManagedSandbox create(SandboxSpec spec);

  /**
   * A sandbox this provider created, by id or, for a named sandbox, by name (from any JVM), or
   * empty if there is none: a running one, or a named one ({@link SandboxSpec.Builder#name}) also
   * when stopped ({@link ManagedSandbox#wake()} starts it). Closing the handle returned does not
   * remove the sandbox; {@link ManagedSandbox#destroy()} does.
   */
  Optional<ManagedSandbox> get(String id);

  /** Every sandbox this provider created that still exists, running or not, oldest first. */
  List<SandboxInfo> list();

  /**
   * Releases the provider's own resources (its connection to the engine). Sandboxes stay as
   * their own rules say (see {@link ManagedSandbox#close()}).
   */
  @Override
  void close();
}
