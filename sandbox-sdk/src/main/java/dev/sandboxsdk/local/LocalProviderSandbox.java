package dev.sandboxsdk.local;

import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.spi.SandboxHandle;

/**
 * A handle on one sandbox of a {@link LocalProvider}: a view of the agent the provider runs for it,
 * shared by every handle of that provider on the same sandbox. Thread-safe.
 */
final class LocalProviderSandbox extends SandboxHandle {

  /** {@code client}: the provider's view of the sandbox's agent, or null for a sandbox not started yet. */
  LocalProviderSandbox(LocalBackend backend, String name, Sandbox client, boolean removeOnClose) {
    super(backend, name, "local sandbox '" + name + "'", client, removeOnClose, null);
  }
}
