package dev.sandboxsdk.mcp.internal;

import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.container.ContainerProvider;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one place that names the container provider. Kept apart from {@link Sandboxes} so that the
 * provider and docker-java are loaded only when the server runs with {@code --provider container}:
 * a local server starts as fast as it did without them.
 */
final class ContainerProviders {
  private static final Logger log = LoggerFactory.getLogger(ContainerProviders.class);

  private ContainerProviders() {
  }

  /**
   * The engine that {@code DOCKER_HOST} or a local Docker or Podman socket names; connects lazily.
   * Its start-up check logs whether the engine answers, with {@code image}.
   */
  static SandboxProviders.Made fromEnvironment(String image) {
    ContainerProvider containers = ContainerProvider.fromEnvironment();
    return new SandboxProviders.Made(containers, () -> logEngine(containers, image));
  }

  /**
   * Logs whether the provider's engine answers, so an operator sees a missing engine in the
   * server's log at start rather than only in the first getSandbox result. Never throws.
   */
  static void logEngine(ContainerProvider containers, String image) {
    try {
      log.info("container provider: {} at {}, image {}", containers.ping(), containers.engineHost(), image);
    } catch (SandboxException e) {
      log.warn("container provider: {}; every sandbox will fail to start until the engine answers", e.getMessage());
    } catch (RuntimeException e) {
      log.warn("container provider: checking the engine at {} failed: {}", containers.engineHost(), e.toString());
    }
  }
}
