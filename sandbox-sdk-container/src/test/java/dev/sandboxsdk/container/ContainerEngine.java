package dev.sandboxsdk.container;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.core.DefaultDockerClientConfig;
import com.github.dockerjava.core.DockerClientImpl;
import com.github.dockerjava.zerodep.ZerodepDockerHttpClient;
import dev.sandboxsdk.contract.SkipNotice;
import java.net.URI;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Runs a test class only where a container engine answers and has the agent image
 * ({@code -Dsandbox.image}, default {@code sandbox-agent}). Elsewhere the class is skipped with
 * one line on stderr, so {@code ./mvnw verify} passes on a machine without an engine; under
 * {@code CI=true} a missing engine or image fails the run instead. Other modules' container tests
 * use it too (this module's test-jar).
 */
public final class ContainerEngine implements ExecutionCondition {
  /** The agent image the tests run. */
  public static final String IMAGE = System.getProperty("sandbox.image", "sandbox-agent");

  private static String unavailable;
  private static boolean checked;

  @Override
  public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
    String why = unavailableReason();
    if (why == null) {
      return ConditionEvaluationResult.enabled("container engine with image " + IMAGE);
    }
    if ("true".equals(System.getenv("CI"))) {
      throw new IllegalStateException("CI=true and the container tests cannot run: " + why);
    }
    return SkipNotice.disabled("container", why + " (CI=true makes this a failure)", why);
  }

  /** Why the container tests cannot run here, or null if they can. */
  static synchronized String unavailableReason() {
    if (!checked) {
      checked = true;
      try (ContainerProvider p = ContainerProvider.fromEnvironment()) {
        p.ping();
        if (!p.hasImage(IMAGE)) {
          unavailable = "no image '" + IMAGE + "' on the container engine at " + p.engineHost()
              + " (build it: see docs/containers.md, \"Container image\")";
        }
      } catch (RuntimeException e) {
        unavailable = String.valueOf(e.getMessage()).lines().findFirst().orElse("no container engine");
      }
    }
    return unavailable;
  }

  /** A sandbox's token, read the way anyone with access to the engine can: from the container's environment. */
  static String tokenOf(String containerId) {
    try (DockerClient docker = client()) {
      for (String e : docker.inspectContainerCmd(containerId).exec().getConfig().getEnv()) {
        if (e.startsWith("SANDBOX_AGENT_TOKEN=")) {
          return e.substring("SANDBOX_AGENT_TOKEN=".length());
        }
      }
      throw new IllegalStateException("container " + containerId + " has no SANDBOX_AGENT_TOKEN");
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /** A docker-java client on the same engine the provider uses, for checks behind the SDK's back. */
  static DockerClient client() {
    URI host;
    try (ContainerProvider p = ContainerProvider.fromEnvironment()) {
      host = p.engineHost();
    }
    DefaultDockerClientConfig config = DefaultDockerClientConfig.createDefaultConfigBuilder()
        .withDockerHost(host.toString()).build();
    return DockerClientImpl.getInstance(config, new ZerodepDockerHttpClient.Builder()
        .dockerHost(config.getDockerHost()).sslConfig(config.getSSLConfig()).build());
  }
}
