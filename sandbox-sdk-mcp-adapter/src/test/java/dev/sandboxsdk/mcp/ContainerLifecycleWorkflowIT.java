package dev.sandboxsdk.mcp;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sandboxsdk.ManagedSandbox;
import dev.sandboxsdk.SandboxInfo;
import dev.sandboxsdk.container.ContainerEngine;
import dev.sandboxsdk.container.ContainerProvider;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@link LifecycleWorkflow} on containers ({@code --provider container}): a persistent sandbox is
 * a labelled container that the second server finds on the same engine. The containers have the
 * network, so that they can clone from this JVM's git server through the engine's host address.
 * The container's state is checked through the SDK's own provider, not the server's word.
 * Needs a container engine with the image (see {@link ContainerEngine}).
 */
@ExtendWith(ContainerEngine.class)
@Timeout(value = 400, unit = TimeUnit.SECONDS)
class ContainerLifecycleWorkflowIT extends LifecycleWorkflow {
  private static ContainerProvider engine;

  @BeforeAll
  static void engine() {
    engine = ContainerProvider.fromEnvironment();
  }

  @AfterAll
  static void release() {
    if (engine != null) {
      engine.close();
    }
  }

  @Override
  List<String> serverArgs() {
    return List.of("--provider", "container", "--image", ContainerEngine.IMAGE, "--memory", "512m",
        "--network", "on");
  }

  @Override
  String hostUrl(int port) {
    return "http://host.containers.internal:" + port;
  }

  /** The engine has the container, stopped. */
  @Override
  void checkStoppedBehindTheServersBack(JsonNode sandbox) {
    SandboxInfo info = container(sandbox.get("sandboxId").asText())
        .orElseThrow(() -> new AssertionError("no container for " + sandbox));
    assertThat(info.isRunning()).as("%s", info).isFalse();
    assertThat(info.id()).isEqualTo(sandbox.get("providerId").asText());
  }

  @Override
  void checkGone(String sandboxId) {
    assertThat(container(sandboxId)).isEmpty();
  }

  @Override
  void cleanUp(String sandboxId) {
    container(sandboxId).flatMap(i -> engine.get(i.id())).ifPresent(ManagedSandbox::destroy);
  }

  private static Optional<SandboxInfo> container(String sandboxId) {
    return engine.list().stream().filter(i -> sandboxId.equals(i.labels().get("mcp.sandbox-id"))).findFirst();
  }

  @Test
  void wakeSandboxReconnectsToASandboxWokenBehindTheServersBack() throws Exception {
    String sandboxId = "woken-elsewhere";
    try (JarClient a = JarClient.start(false, tmp, serverArgs(), Map.of())) {
      ok(a.call("getSandbox", args("sandboxId", sandboxId, "persistent", true)));
      ok(a.call("exec", args("sandboxId", sandboxId, "command", "echo kept > kept.txt")));
      ok(a.call("shutdownSandbox", args("sandboxId", sandboxId)));
      SandboxInfo stopped = container(sandboxId).orElseThrow();
      try (ManagedSandbox elsewhere = engine.get(stopped.id()).orElseThrow()) {
        elsewhere.wake(); // another program starts it again
      }
      assertThat(container(sandboxId).orElseThrow().isRunning()).isTrue();

      JsonNode up = ok(a.call("wakeSandbox", args("sandboxId", sandboxId)));
      assertThat(sc(up).get("wasRunning").asBoolean()).isTrue();
      assertThat(sc(ok(a.call("exec", args("sandboxId", sandboxId, "command", "cat kept.txt")))).get("stdout").asText())
          .as("the server's handle is connected again").isEqualTo("kept\n");
    } finally {
      cleanUp(sandboxId);
    }
  }

  @Test
  void theWorkflowOverStdioThenASecondServerOverHttp() throws Exception {
    workflow(false);
  }

  @Test
  void theWorkflowOverHttpThenASecondServerOverStdio() throws Exception {
    workflow(true);
  }
}
