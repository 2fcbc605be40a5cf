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
 * @param name a readable name (the container's name), never {@code null}
 * @param image the image it runs, or {@code ""} where there is none
 * @param state the provider's word for its state, e.g. {@code running} or {@code exited}
 * @param createdAt when it was created
 * @param endpoint the agent's address as this JVM reaches it, or {@code null} when not running
 * @param labels the labels the caller gave it ({@link SandboxSpec.Builder#label}), without the SDK's own
 */
public record SandboxInfo(String id, String provider, String name, String image, String state,
    Instant createdAt, URI endpoint, Map<String, String> labels) {

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

  /** Whether the provider reports it as running. */
  public boolean isRunning() {
    return "running".equals(state);
  }
}
