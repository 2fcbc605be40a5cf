package dev.sandboxsdk.contract;

import dev.sandboxsdk.ManagedSandbox;
import dev.sandboxsdk.SandboxException;
import java.util.ArrayList;
import java.util.List;

/**
 * The sandboxes a provider's lifecycle test created, for its {@code @AfterEach} to destroy
 * (LocalProviderIT, ContainerLifecycleIT). Not thread-safe: a test adds from its own thread.
 */
public final class CreatedSandboxes {
  private final List<ManagedSandbox> created = new ArrayList<>();

  /** Remembers {@code sandbox} for {@link #destroyAll()}; returns it. */
  public ManagedSandbox add(ManagedSandbox sandbox) {
    created.add(sandbox);
    return sandbox;
  }

  /** Destroys every sandbox added, passing over those the test destroyed already. */
  public void destroyAll() {
    created.forEach(s -> {
      try {
        s.destroy();
      } catch (SandboxException e) {
        // destroyed by the test already
      }
    });
  }
}
