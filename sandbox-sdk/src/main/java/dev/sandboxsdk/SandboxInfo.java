package dev.sandboxsdk;

import java.net.URI;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;

/**
 * A managed sandbox as its provider lists it.
 *
 * @param id the provider's id, e.g. a container id
 * @param provider the provider's name, e.g. {@code container}
 * @param name the sandbox's name ({@link SandboxSpec.Builder#name}) when it has one, else a readable
 *     name (the container's name); never {@code null}
 * @param image the image it runs, or {@code ""} where there is none
 * @param state where it is in its life: {@link SandboxState#RUNNING}, {@link SandboxState#STOPPED} (shut
 *     down, idle, or its JVM or engine stopped it: {@link ManagedSandbox#wake()} starts it again), or
 *     another state the provider reports, e.g. {@link SandboxState#EXITED} for an ended pod
 * @param createdAt when it was created
 * @param endpoint the agent's address as this JVM reaches it, or {@code null} when not running
 * @param labels the labels the caller gave it ({@link SandboxSpec.Builder#label}), without the SDK's own
 * @param lastActivityAt when it last served a request, as far as the provider knows (a stopped
 *     sandbox: when it stopped), or {@code null} if unknown
 */
public record SandboxInfo(String id, String provider, String name, String image, SandboxState state,
    Instant createdAt, URI endpoint, Map<String, String> labels, Instant lastActivityAt) {
  /** Checks the fields and copies the labels. */
  public SandboxInfo {
    Objects.requireNonNull(id, "id");
    Objects.requireNonNull(provider, "provider");
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(image, "image");
    Objects.requireNonNull(state, "state");
    Objects.requireNonNull(createdAt, "createdAt");
    labels = Map.copyOf(labels);
  }

  /** Without a last activity time (unknown). */
  public SandboxInfo(String id, String provider, String name, String image, SandboxState state, Instant createdAt,
      URI endpoint, Map<String, String> labels) {
    this(id, provider, name, image, state, createdAt, endpoint, labels, null);
  }

  /** Whether the provider reports it as running. */
  public boolean isRunning() {
    return state == SandboxState.RUNNING;
  }

  /** Whether it is stopped with its files kept, so that {@link ManagedSandbox#wake()} starts it again. */
  public boolean isStopped() {
    return state == SandboxState.STOPPED;
  }
}
