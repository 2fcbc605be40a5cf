package dev.sandboxsdk.mcp;

import static dev.sandboxsdk.mcp.LifecycleWorkflow.args;
import static dev.sandboxsdk.mcp.LifecycleWorkflow.ids;
import static dev.sandboxsdk.mcp.LifecycleWorkflow.isError;
import static dev.sandboxsdk.mcp.LifecycleWorkflow.listed;
import static dev.sandboxsdk.mcp.LifecycleWorkflow.ok;
import static dev.sandboxsdk.mcp.LifecycleWorkflow.sc;
import static dev.sandboxsdk.mcp.LifecycleWorkflow.text;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sandboxsdk.ManagedSandbox;
import dev.sandboxsdk.SandboxInfo;
import dev.sandboxsdk.kubernetes.KubernetesCluster;
import dev.sandboxsdk.kubernetes.KubernetesProvider;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The runnable jar with {@code --provider kubernetes} on a real cluster, driven by an MCP client
 * over stdio as a user's client drives it: a persistent sandbox is a pod of the agent image
 * (commands as its unprivileged user in /workspace, a {@code --pass-env} secret that reaches them
 * and is redacted), listed, checkpointed and restored byte for byte; shutdownSandbox and a
 * sandbox that is not persistent get the error that says a pod cannot sleep and what to do; when
 * the client goes away the server deletes its other pods and leaves the persistent one, which a
 * second server finds, uses and destroys, after which the pod is gone. The pods are checked through
 * the SDK's own {@link KubernetesProvider}, not the server's word. Needs a cluster (see
 * {@link KubernetesCluster}).
 */
@ExtendWith(KubernetesCluster.class)
@Timeout(value = 420, unit = TimeUnit.SECONDS)
class McpKubernetesIT {
  private static final String SECRET_NAME = "MCP_K8S_IT_SECRET";
  private static final String SECRET = "s3cr3t-" + JarClient.randomHex(12);

  private static KubernetesProvider cluster;

  private final String id = "proj-" + JarClient.randomHex(4);

  @TempDir
  Path tmp;

  @BeforeAll
  static void connect() {
    cluster = KubernetesCluster.provider().build();
  }

  @AfterAll
  static void release() {
    if (cluster != null) {
      cluster.close();
    }
  }

  /** Deletes whatever a failed run left of this test's sandboxes. */
  @AfterEach
  void cleanUp() {
    for (SandboxInfo i : cluster.list()) {
      if (i.labels().getOrDefault("mcp.sandbox-id", "").equals(id) || i.labels().getOrDefault("mcp.sandbox-id", "")
          .equals("scratch-" + id)) {
        cluster.get(i.id()).ifPresent(ManagedSandbox::destroy);
      }
    }
  }

  @Test
  void aPersistentPodIsCheckpointedCannotSleepOutlivesTheServerAndIsGoneAfterDestroy() throws Exception {
    String pod;
    String scratchPod;
    String fingerprint;
    String dir = "/workspace/app";
    try (JarClient.Stdio a = start()) {
      // getSandbox creates a named pod and reports it
      JsonNode got = ok(a.call("getSandbox", args("sandboxId", id, "persistent", true, "keepAlive", true)));
      JsonNode sandbox = sc(got).get("sandbox");
      assertThat(sandbox.get("mode").asText()).isEqualTo("kubernetes");
      assertThat(sandbox.get("isolation").asText()).isEqualTo("pod");
      assertThat(sandbox.get("workspace").asText()).isEqualTo("/workspace");
      assertThat(sandbox.get("persistent").asBoolean()).isTrue();
      assertThat(sandbox.get("status").asText()).isEqualTo("running");
      assertThat(text(got)).contains("Created persistent sandbox '" + id + "'").contains("cannot be shut down");
      pod = sandbox.get("providerId").asText();
      SandboxInfo info = pod(pod).orElseThrow(() -> new AssertionError("the cluster has no sandbox pod " + pod));
      assertThat(info.isRunning()).isTrue();
      assertThat(info.provider()).isEqualTo("kubernetes");
      assertThat(info.labels()).containsEntry("mcp.sandbox-id", id).containsEntry("mcp.persistent", "true")
          .containsEntry("mcp.server-pid", Long.toString(a.process.pid()));

      // commands run as the image's unprivileged user in /workspace
      JsonNode who = ok(a.call("exec", args("sandboxId", id, "command", "id -u; pwd")));
      assertThat(sc(who).get("stdout").asText()).isEqualTo("1000\n/workspace\n");

      // the secret reaches the command (with each call, not through the Pod) and never shows in results
      JsonNode secret = ok(a.call("exec", args("sandboxId", id, "command", "echo \"value=$" + SECRET_NAME
          + "\"; printf %s \"$" + SECRET_NAME + "\" | sha256sum")));
      assertThat(sc(secret).get("stdout").asText()).startsWith("value=[REDACTED:" + SECRET_NAME + "]\n")
          .contains(JarClient.sha256Hex(SECRET));
      assertThat(secret.toString()).doesNotContain(SECRET);

      // listed with its status
      JsonNode listed = listed(a, id);
      assertThat(listed.get("status").asText()).isEqualTo("running");
      assertThat(listed.get("mode").asText()).isEqualTo("kubernetes");
      assertThat(listed.get("providerId").asText()).isEqualTo(pod);

      // files of every kind, checkpointed, broken, restored byte for byte
      ok(a.call("exec", args("sandboxId", id, "command", "mkdir -p " + dir + "/lib " + dir + "/empty && cd " + dir
          + " && head -c 300000 /dev/urandom > lib/blob.bin && printf x > lib/one && chmod 600 lib/one"
          + " && printf '#!/bin/sh\\necho run\\n' > run.sh && chmod 755 run.sh && ln -s lib/blob.bin current")));
      fingerprint = fingerprint(a, dir);
      assertThat(fingerprint).contains("f 600 ./lib/one").contains("l 777 ./current lib/blob.bin")
          .contains("f 755 ./run.sh").contains(" ./empty \n").contains("./lib/blob.bin");
      JsonNode cp = ok(a.call("createCheckpoint", args("sandboxId", id, "name", "files")));
      assertThat(sc(cp).get("checkpoint").get("sizeBytes").asLong()).isGreaterThan(300_000);
      ok(a.call("exec", args("sandboxId", id, "command", "cd " + dir + " && rm -rf lib current && chmod 644 run.sh"
          + " && echo new > extra.txt")));
      assertThat(fingerprint(a, dir)).isNotEqualTo(fingerprint);
      JsonNode restored = ok(a.call("restoreCheckpoint", args("sandboxId", id, "checkpointId", "files")));
      assertThat(sc(restored).get("restored").asBoolean()).isTrue();
      assertThat(fingerprint(a, dir)).isEqualTo(fingerprint);

      // a pod cannot sleep: shutdownSandbox is an error result that says what to do, and the pod runs on
      JsonNode down = a.call("shutdownSandbox", args("sandboxId", id));
      assertThat(isError(down)).as("%s", down).isTrue();
      assertThat(text(down)).startsWith("Sandbox '" + id + "' cannot be shut down: it is a Kubernetes pod")
          .contains("The provider says: a Kubernetes sandbox")
          .contains("destroy {\"sandboxId\":\"" + id + "\"}").contains("--provider container or local");
      assertThat(pod(pod).orElseThrow().isRunning()).isTrue();
      JsonNode up = ok(a.call("wakeSandbox", args("sandboxId", id)));
      assertThat(sc(up).get("wasRunning").asBoolean()).isTrue();
      assertThat(sc(ok(a.call("exec", args("sandboxId", id, "command", "cat " + dir + "/lib/one")))).get("stdout")
          .asText()).isEqualTo("x");

      // a sandbox that is not persistent: the same answer, without asking to make it persistent
      JsonNode scratch = ok(a.call("getSandbox", args("sandboxId", "scratch-" + id)));
      scratchPod = sc(scratch).get("sandbox").get("providerId").asText();
      assertThat(pod(scratchPod)).isPresent();
      JsonNode refused = a.call("shutdownSandbox", args("sandboxId", "scratch-" + id));
      assertThat(isError(refused)).isTrue();
      assertThat(text(refused)).startsWith("Sandbox 'scratch-" + id + "' cannot be shut down: it is a Kubernetes pod")
          .doesNotContain("persistent\": true");

      a.stop(); // the client goes away: the server deletes its pods, except the persistent one
    }
    assertGone(scratchPod);
    assertThat(pod(pod).filter(SandboxInfo::isRunning)).as("the persistent pod %s after the server exited", pod)
        .isPresent();

    // a second server finds the persistent pod, uses it, destroys it; then the pod is gone
    try (JarClient.Stdio b = start()) {
      JsonNode found = listed(b, id);
      assertThat(found.get("status").asText()).isEqualTo("running");
      assertThat(found.get("persistent").asBoolean()).isTrue();
      assertThat(found.get("providerId").asText()).isEqualTo(pod);
      assertThat(fingerprint(b, dir)).isEqualTo(fingerprint);

      JsonNode destroyed = ok(b.call("destroy", args("sandboxId", id)));
      assertThat(sc(destroyed).get("destroyed").asBoolean()).isTrue();
      assertThat(ids(b)).doesNotContain(id);
      assertGone(pod);
      assertThat(cluster.get(pod)).isEmpty();
      assertThat(text(b.call("exec", args("sandboxId", id, "command", "true"))))
          .startsWith("There is no sandbox '" + id + "'");
    }
  }

  @Test
  void anImageTheNodeDoesNotHaveIsAnErrorResultWithThePodsReasonAndLeavesNoPod() throws Exception {
    String missing = "localhost/sandbox-agent-missing:" + JarClient.randomHex(4);
    List<String> before = cluster.list().stream().map(SandboxInfo::id).toList();
    try (JarClient.Stdio server = start(missing)) {
      JsonNode r = server.call("exec", args("sandboxId", id, "command", "true"));
      assertThat(isError(r)).as("%s", r).isTrue();
      assertThat(text(r)).startsWith("There is no sandbox '" + id + "'");
      JsonNode got = server.call("getSandbox", args("sandboxId", id));
      assertThat(isError(got)).as("%s", got).isTrue();
      assertThat(text(got)).startsWith("Could not start sandbox '" + id + "': the sandbox pod ")
          .contains("ErrImageNeverPull").contains(missing);
      assertThat(ids(server)).doesNotContain(id);
    }
    for (SandboxInfo i : cluster.list()) { // the failed pod is deleted
      if (!before.contains(i.id()) && id.equals(i.labels().get("mcp.sandbox-id"))) {
        assertGone(i.id());
      }
    }
  }

  // ---- helpers

  private JarClient.Stdio start() throws Exception {
    return start(KubernetesCluster.IMAGE);
  }

  private JarClient.Stdio start(String image) throws Exception {
    JarClient.Stdio server = JarClient.Stdio.start(tmp, List.of("--provider", "kubernetes",
        "--kubeconfig", KubernetesCluster.KUBECONFIG, "--namespace", KubernetesCluster.NAMESPACE,
        "--image", image, "--image-pull-policy", "Never", "--memory", "512m", "--cpus", "0.5",
        "--pass-env", SECRET_NAME), Map.of(SECRET_NAME, SECRET));
    assertThat(server.initialize().path("instructions").asText()).contains("its own Kubernetes pod");
    return server;
  }

  /**
   * The files under {@code dir} as the sandbox sees them: type, mode, path and link target of
   * every entry, and the SHA-256 of every file's contents.
   */
  private String fingerprint(JarClient c, String dir) throws Exception {
    JsonNode r = ok(c.call("exec", args("sandboxId", id, "command", "cd " + dir + " && find . -printf '%y %m %p %l\\n'"
        + " | LC_ALL=C sort && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum",
        "maxOutputBytes", 1 << 20)));
    assertThat(sc(r).get("truncated").asBoolean()).isFalse();
    return sc(r).get("stdout").asText();
  }

  /**
   * The pod is deleted: at once it no longer runs (it is gone, or "stopping" while the kubelet
   * finishes, which takes a minute on a busy one-node cluster), and it is then removed.
   */
  private static void assertGone(String name) throws InterruptedException {
    assertThat(pod(name).map(i -> i.state().wireName())).as("pod %s", name).isIn(Optional.empty(), Optional.of("stopping"));
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(180);
    while (pod(name).isPresent() && System.nanoTime() < deadline) {
      Thread.sleep(1000);
    }
    assertThat(pod(name)).as("pod %s, deleted", name).isEmpty();
  }

  /** The sandbox pod of this name as the cluster lists it. */
  private static Optional<SandboxInfo> pod(String name) {
    return cluster.list().stream().filter(i -> i.id().equals(name)).findFirst();
  }
}
