package dev.sandboxsdk.mcp;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.ManagedSandbox;
import dev.sandboxsdk.SandboxInfo;
import dev.sandboxsdk.container.ContainerEngine;
import dev.sandboxsdk.container.ContainerProvider;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The runnable jar over stdio with {@code --provider container}, as an MCP client starts it:
 * sandboxes are containers of the agent image, commands run as its unprivileged user, a
 * {@code --pass-env} secret reaches them through the container's environment and is redacted
 * from results, {@code destroy} removes the container, a container removed behind the server's
 * back is forgotten, and the server removes its containers when stdin closes. The containers
 * are checked through the SDK's own {@link ContainerProvider}, not the server's word.
 * Needs a container engine with the image (see {@link ContainerEngine}).
 */
@ExtendWith(ContainerEngine.class)
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ContainerProviderIT {
  private static final String SECRET_NAME = "MCP_IT_SECRET";
  private static final String SECRET = "s3cr3t-" + JarClient.randomHex(12);

  private static ContainerProvider engine;

  @TempDir
  Path tmp;

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

  @Test
  void sandboxesAreContainersThatGetTheSecretsAndGoAwayWithDestroyAndShutdown() throws Exception {
    try (JarClient.Stdio server = start(List.of("--provider", "container", "--image",
        ContainerEngine.IMAGE, "--memory", "512m", "--pids-limit", "256", "--pass-env", SECRET_NAME))) {

      // getSandbox creates a container and reports it
      JsonNode got = server.call("getSandbox", args("sandboxId", "it", "keepAlive", true));
      assertThat(isError(got)).as("getSandbox: %s", got).isFalse();
      JsonNode sandbox = got.path("structuredContent").path("sandbox");
      assertThat(sandbox.path("mode").asText()).isEqualTo("container");
      assertThat(sandbox.path("isolation").asText()).isEqualTo("container");
      assertThat(sandbox.path("workspace").asText()).isEqualTo("/workspace");
      assertThat(sandbox.path("keepAlive").asBoolean()).isTrue();
      assertThat(sandbox.path("idleTimeoutSeconds").isNull()).isTrue();
      String containerId = sandbox.path("providerId").asText();
      assertThat(containerId).isNotBlank();
      SandboxInfo info = running(containerId).orElseThrow(() -> new AssertionError(
          "the engine has no running sandbox container " + containerId));
      assertThat(info.labels()).containsEntry("mcp.sandbox-id", "it");
      assertThat(info.labels()).containsEntry("mcp.server-pid", Long.toString(server.process.pid()));

      // commands run as the image's unprivileged user, in /workspace
      JsonNode id = server.call("exec", args("command", "id -u; pwd", "sandboxId", "it"));
      assertThat(isError(id)).as("exec: %s", id).isFalse();
      assertThat(id.path("structuredContent").path("stdout").asText()).isEqualTo("1000\n/workspace\n");

      // the secret reaches the command through the container's environment, wins over a call's
      // variable of the same name, and never shows in what the model gets
      String expectedHash = JarClient.sha256Hex(SECRET);
      JsonNode secret = server.call("exec", args("command",
          "echo \"value=$" + SECRET_NAME + "\"; printf %s \"$" + SECRET_NAME + "\" | sha256sum; echo \"$"
              + SECRET_NAME + "\" >&2", "sandboxId", "it", "env", Map.of(SECRET_NAME, "overridden")));
      assertThat(isError(secret)).as("exec: %s", secret).isFalse();
      String stdout = secret.path("structuredContent").path("stdout").asText();
      assertThat(stdout).startsWith("value=[REDACTED:" + SECRET_NAME + "]\n").contains(expectedHash);
      assertThat(secret.path("structuredContent").path("stderr").asText())
          .isEqualTo("[REDACTED:" + SECRET_NAME + "]\n");
      assertThat(secret.toString()).as("the whole result, text content included").doesNotContain(SECRET);
      JsonNode env = server.call("exec", args("command", "env | sort", "sandboxId", "it"));
      assertThat(env.path("structuredContent").path("stdout").asText())
          .contains(SECRET_NAME + "=[REDACTED:" + SECRET_NAME + "]")
          .doesNotContain("SANDBOX_AGENT_TOKEN");

      // destroy removes the container (and the server forgets the sandbox)
      JsonNode destroyed = server.call("destroy", args("sandboxId", "it"));
      assertThat(isError(destroyed)).as("destroy: %s", destroyed).isFalse();
      assertThat(destroyed.path("structuredContent").path("destroyed").asBoolean()).isTrue();
      assertThat(listed(containerId)).as("container %s after destroy", containerId).isEmpty();
      assertThat(server.call("listSandboxes", args()).path("structuredContent").path("count").asInt()).isZero();

      // a container removed behind the server's back is noticed and forgotten; the default
      // sandbox then comes back as a new container
      String first = defaultContainer(server);
      ManagedSandbox behindItsBack = engine.get(first).orElseThrow();
      behindItsBack.destroy();
      JsonNode list = server.call("listSandboxes", args());
      assertThat(list.path("structuredContent").path("count").asInt()).as("%s", list).isZero();
      String second = defaultContainer(server);
      assertThat(second).isNotEqualTo(first);

      // the server removes the containers it created when its client goes away
      server.stop();
      assertThat(listed(second)).as("container %s after the server exited", second).isEmpty();
      assertThat(server.stderr()).doesNotContain(SECRET);
    }
  }

  @Test
  void aSandboxIdleForItsTimeoutStopsAndIsRemoved() throws Exception {
    try (JarClient.Stdio server = start(List.of("--provider", "container", "--image",
        ContainerEngine.IMAGE))) {
      JsonNode got = server.call("getSandbox", args("sandboxId", "idle", "idleTimeoutSeconds", 10));
      assertThat(isError(got)).as("getSandbox: %s", got).isFalse();
      JsonNode sandbox = got.path("structuredContent").path("sandbox");
      assertThat(sandbox.path("keepAlive").asBoolean()).isFalse();
      assertThat(sandbox.path("idleTimeoutSeconds").asInt()).isEqualTo(10);
      String containerId = sandbox.path("providerId").asText();
      assertThat(running(containerId)).isPresent();

      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(40);
      int count;
      do {
        Thread.sleep(1000);
        count = server.call("listSandboxes", args()).path("structuredContent").path("count").asInt();
      } while (count > 0 && System.nanoTime() < deadline);

      assertThat(count).as("the idle sandbox is no longer listed").isZero();
      assertThat(listed(containerId)).as("its stopped container was removed").isEmpty();
      JsonNode gone = server.call("exec", args("command", "true", "sandboxId", "idle"));
      assertThat(gone.path("content").path(0).path("text").asText()).startsWith("There is no sandbox 'idle'.");
    }
  }

  @Test
  void aMissingImageIsAnErrorResultThatSaysSo() throws Exception {
    try (JarClient.Stdio server = start(List.of("--provider", "container", "--image",
        "sandbox-agent-missing-" + System.nanoTime()))) {
      JsonNode r = server.call("exec", args("command", "true"));
      assertThat(isError(r)).isTrue();
      assertThat(r.path("content").path(0).path("text").asText())
          .startsWith("Could not start sandbox 'default': image 'sandbox-agent-missing-")
          .contains("not found on the container engine");
    }
  }

  // ---- helpers

  /** Starts the jar on stdio with the secret in its environment and initializes a session. */
  private JarClient.Stdio start(List<String> args) throws Exception {
    JarClient.Stdio server = JarClient.Stdio.start(tmp, args, Map.of(SECRET_NAME, SECRET));
    assertThat(server.initialize().path("instructions").asText()).contains("its own container");
    return server;
  }

  /** Runs exec on the default sandbox (creating it) and returns its container id from listSandboxes. */
  private static String defaultContainer(JarClient server) throws Exception {
    JsonNode r = server.call("exec", args("command", "echo up"));
    assertThat(isError(r)).as("exec on default: %s", r).isFalse();
    for (JsonNode s : server.call("listSandboxes", args()).path("structuredContent").path("sandboxes")) {
      if (s.path("sandboxId").asText().equals("default")) {
        assertThat(running(s.path("providerId").asText())).isPresent();
        return s.path("providerId").asText();
      }
    }
    throw new AssertionError("no default sandbox listed");
  }

  private static Optional<SandboxInfo> running(String containerId) {
    return listed(containerId).filter(SandboxInfo::isRunning);
  }

  private static Optional<SandboxInfo> listed(String containerId) {
    return engine.list().stream().filter(i -> i.id().equals(containerId)).findFirst();
  }

  private static boolean isError(JsonNode result) {
    return result.path("isError").asBoolean(false);
  }

  private static ObjectNode args(Object... kv) {
    ObjectNode o = JarClient.MAPPER.createObjectNode();
    for (int i = 0; i < kv.length; i += 2) {
      o.set((String) kv[i], JarClient.MAPPER.valueToTree(kv[i + 1]));
    }
    return o;
  }
}
