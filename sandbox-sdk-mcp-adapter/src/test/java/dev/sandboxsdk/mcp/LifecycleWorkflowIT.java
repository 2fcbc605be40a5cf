package dev.sandboxsdk.mcp;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link LifecycleWorkflow} on local sandboxes: persistent ones live in a state directory
 * ({@code --state-dir}) that the second server is given too. Commands run isolated with the
 * network on, so that the sandbox can clone from this JVM's git server on 127.0.0.1.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class LifecycleWorkflowIT extends LifecycleWorkflow {

  @Override
  List<String> serverArgs() {
    return List.of("--provider", "local", "--state-dir", tmp.resolve("state").toString(), "--network", "on");
  }

  @Override
  String hostUrl(int port) {
    return "http://127.0.0.1:" + port;
  }

  /** The workspace is a directory on this machine: the files are there while no agent runs. */
  @Override
  void checkStoppedBehindTheServersBack(JsonNode sandbox) throws Exception {
    Path workspace = Path.of(sandbox.get("workspace").asText());
    assertThat(workspace).startsWith(tmp.resolve("state"));
    assertThat(Files.readString(workspace.resolve("demo/README.md"), StandardCharsets.UTF_8))
        .isEqualTo("# demo\nhello\nedited\n");
    assertThat(Files.size(workspace.resolve("demo/deps/lib/blob.bin"))).isEqualTo(300_000);
  }

  @Override
  void checkGone(String sandboxId) {
    assertThat(tmp.resolve("state").resolve("sandboxes").resolve(sandboxId)).doesNotExist();
  }

  @Override
  void cleanUp(String sandboxId) {
    // the state directory is the test's temporary directory
  }

  @Test
  void theWorkflowOverStdioThenASecondServerOverHttp() throws Exception {
    workflow(false);
  }

  @Test
  void theWorkflowOverHttpThenASecondServerOverStdio() throws Exception {
    workflow(true);
  }

  /** Hibernate when idle: a persistent sandbox idle for its timeout stops with its files, and says to wake it. */
  @Test
  void anIdlePersistentSandboxStopsKeepingItsFiles() throws Exception {
    try (JarClient c = JarClient.start(false, tmp, serverArgs(), java.util.Map.of())) {
      ok(c.call("getSandbox", args("sandboxId", "sleepy", "persistent", true, "idleTimeoutSeconds", 10)));
      ok(c.call("writeFile", args("sandboxId", "sleepy", "path", "kept.txt", "content", "still here")));
      // listing is not activity; the class's @Timeout bounds the wait
      while (!listed(c, "sleepy").get("status").asText().equals("stopped")) {
        Thread.sleep(500);
      }
      JsonNode onStopped = c.call("readFile", args("sandboxId", "sleepy", "path", "kept.txt"));
      assertThat(text(onStopped)).startsWith("sandbox 'sleepy' is stopped: call wakeSandbox");
      assertThat(sc(ok(c.call("getSandbox", args("sandboxId", "sleepy")))).get("note").asText()).contains("wakeSandbox");
      ok(c.call("wakeSandbox", args("sandboxId", "sleepy")));
      assertThat(sc(ok(c.call("readFile", args("sandboxId", "sleepy", "path", "kept.txt")))).get("content").asText())
          .isEqualTo("still here");
      ok(c.call("destroy", args("sandboxId", "sleepy")));
    }
  }
}
