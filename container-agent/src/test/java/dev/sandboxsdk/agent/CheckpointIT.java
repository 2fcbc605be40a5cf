package dev.sandboxsdk.agent;

import static dev.sandboxsdk.agent.TestAgent.obj;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code /api/checkpoints} on a real agent with GNU tar: what a restore brings back (contents,
 * modes, symlinks, empty directories, odd names), what it removes, how it treats running
 * processes, one operation at a time, bad input, leftovers of an interrupted checkpoint, a full
 * disk, and the command user's ownership.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class CheckpointIT {
  @RegisterExtension static final TestAgent agent = new TestAgent(b -> b.graceMs(2000));

  @TempDir
  Path tmp;

  @AfterEach
  void clean() throws Exception {
    agent.reset();
    for (JsonNode c : agent.get("/api/checkpoints").body().get("checkpoints")) {
      agent.delete("/api/checkpoints/" + c.get("id").asText());
    }
  }

  private static String exec(String command) {
    TestAgent.Response r = agent.post("/api/execute", obj("command", command));
    assertThat(r.status()).as("%s: %s", command, r.body()).isEqualTo(200);
    assertThat(r.body().get("exitCode").asInt()).as("%s: %s", command, r.body()).isZero();
    return r.text("stdout");
  }

  private static JsonNode checkpoint(String name) {
    TestAgent.Response r = agent.post("/api/checkpoints", obj("name", name));
    assertThat(r.status()).as("%s", r.body()).isEqualTo(201);
    return r.body().get("checkpoint");
  }

  /** Every entry under {@code root}: type, mode and content digest or link target. */
  static Map<String, String> tree(Path root) throws IOException {
    Map<String, String> entries = new TreeMap<>();
    try (Stream<Path> walk = Files.walk(root)) {
      for (Path p : (Iterable<Path>) walk::iterator) {
        String rel = root.relativize(p).toString();
        String mode = PosixFilePermissions.toString(Files.getPosixFilePermissions(p, LinkOption.NOFOLLOW_LINKS));
        String what;
        if (Files.isSymbolicLink(p)) {
          what = "link -> " + Files.readSymbolicLink(p);
        } else if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
          what = "dir " + mode;
        } else if (!Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) {
          what = "special " + mode; // the FIFO: opening it would block
        } else {
          what = "file " + mode + " " + sha256(p) + " mtime " + Files.getLastModifiedTime(p, LinkOption.NOFOLLOW_LINKS)
              .toMillis() / 1000;
        }
        entries.put(rel, what);
      }
    }
    return entries;
  }

  private static String sha256(Path p) throws IOException {
    try {
      MessageDigest md = MessageDigest.getInstance("SHA-256");
      try (var in = Files.newInputStream(p)) {
        byte[] buf = new byte[65536];
        for (int n; (n = in.read(buf)) > 0; ) {
          md.update(buf, 0, n);
        }
      }
      return HexFormat.of().formatHex(md.digest());
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void restoreBringsBackTheWorkspaceExactlyAndRemovesWhatCameLater() throws Exception {
    exec("mkdir -p src/deep empty/inner && printf 'hello\\n' > src/a.txt && head -c 100000 /dev/urandom > src/deep/blob"
        + " && chmod 751 src/deep/blob && chmod 600 src/a.txt && ln -s a.txt src/link && ln -s /nowhere dangling"
        + " && printf x > -dash && printf y > \"$(printf 'new\\nline')\" && chmod 700 empty"
        + " && mkfifo pipe && ln src/a.txt hard");
    Map<String, String> before = tree(agent.workspace);
    JsonNode c = checkpoint("base");
    assertThat(c.get("id").asText()).matches("ckpt_[0-9a-f]{16}");
    assertThat(c.get("name").asText()).isEqualTo("base");
    assertThat(c.get("sizeBytes").asLong()).isGreaterThan(100_000);
    assertThat(c.get("createdAt").asText()).isNotEmpty();

    exec("printf changed > src/a.txt && chmod 644 src/deep/blob && rm -rf empty src/link && ln -s elsewhere src/link2"
        + " && mkdir later && echo new > later/file && echo top > after.txt && rm -- -dash");
    assertThat(tree(agent.workspace)).isNotEqualTo(before);

    TestAgent.Response r = agent.post("/api/checkpoints/" + c.get("id").asText() + "/restore", "{}");
    assertThat(r.status()).as("%s", r.body()).isEqualTo(200);
    assertThat(r.body().get("checkpoint").get("id").asText()).isEqualTo(c.get("id").asText());
    assertThat(r.body().get("killedProcesses").asInt()).isZero();
    assertThat(tree(agent.workspace)).isEqualTo(before);
    assertThat(Files.exists(agent.workspace.resolve("after.txt"))).isFalse();
    assertThat(Files.isSameFile(agent.workspace.resolve("hard"), agent.workspace.resolve("src/a.txt"))).isTrue();

    // A checkpoint can be restored any number of times.
    exec("rm -rf src && echo again > again.txt");
    assertThat(agent.post("/api/checkpoints/" + c.get("id").asText() + "/restore", "{\"force\":false}").status())
        .isEqualTo(200);
    assertThat(tree(agent.workspace)).isEqualTo(before);
  }

  @Test
  void listIsOldestFirstAndDeleteRemovesOne() {
    JsonNode a = checkpoint("first");
    JsonNode b = checkpoint("second");
    JsonNode c = checkpoint("third");
    List<String> ids = new ArrayList<>();
    agent.get("/api/checkpoints").body().get("checkpoints").forEach(n -> ids.add(n.get("id").asText()));
    assertThat(ids).containsExactly(a.get("id").asText(), b.get("id").asText(), c.get("id").asText());

    TestAgent.Response d = agent.delete("/api/checkpoints/" + b.get("id").asText());
    assertThat(d.status()).isEqualTo(200);
    assertThat(d.body().get("checkpoint").get("name").asText()).isEqualTo("second");
    ids.clear();
    agent.get("/api/checkpoints").body().get("checkpoints").forEach(n -> ids.add(n.get("id").asText()));
    assertThat(ids).containsExactly(a.get("id").asText(), c.get("id").asText());

    TestAgent.Response again = agent.delete("/api/checkpoints/" + b.get("id").asText());
    assertThat(again.status()).isEqualTo(404);
    assertThat(again.text("code")).isEqualTo("CHECKPOINT_NOT_FOUND");
    TestAgent.Response restore = agent.post("/api/checkpoints/" + b.get("id").asText() + "/restore", "{}");
    assertThat(restore.status()).isEqualTo(404);
    assertThat(restore.text("code")).isEqualTo("CHECKPOINT_NOT_FOUND");
  }

  @Test
  void badInputGetsClearErrors() {
    for (String name : List.of("", "a b", "../x", "x/y", "a".repeat(65), "é")) {
      TestAgent.Response r = agent.post("/api/checkpoints", obj("name", name));
      assertThat(r.status()).as(name).isEqualTo(400);
      assertThat(r.text("code")).isEqualTo("VALIDATION_FAILED");
    }
    assertThat(agent.post("/api/checkpoints", "{}").status()).isEqualTo(400);
    assertThat(agent.post("/api/checkpoints", "{\"name\":\"x\",\"extra\":1}").status()).isEqualTo(400);
    assertThat(agent.post("/api/checkpoints", "{\"name\":7}").status()).isEqualTo(400);
    assertThat(agent.post("/api/checkpoints", "[1,2").status()).isEqualTo(400);
    for (String id : List.of("..%2F..%2Fetc", "ckpt_123", "x", "ckpt_0123456789abcdeg", "%2e%2e")) {
      TestAgent.Response r = agent.post("/api/checkpoints/" + id + "/restore", "{}");
      assertThat(r.status()).as(id).isEqualTo(404);
      assertThat(r.text("code")).isEqualTo("CHECKPOINT_NOT_FOUND");
      assertThat(agent.delete("/api/checkpoints/" + id).status()).as(id).isEqualTo(404);
    }
    JsonNode c = checkpoint("valid");
    String id = c.get("id").asText();
    assertThat(agent.post("/api/checkpoints/" + id + "/restore", "{\"force\":\"yes\"}").status()).isEqualTo(400);
    assertThat(agent.post("/api/checkpoints/" + id + "/restore", "{\"forced\":true}").status()).isEqualTo(400);
    assertThat(agent.get("/api/checkpoints/" + id + "/restore").status()).isEqualTo(405);
    assertThat(agent.get("/api/checkpoints/" + id).status()).isEqualTo(405);
    assertThat(agent.delete("/api/checkpoints").status()).isEqualTo(405);
    assertThat(agent.get("/api/checkpoints?x=1").status()).isEqualTo(400);
    // Bodies over --max-body-bytes, and clients that stall or hang up: HostileClientsIT and HostileInputIT.
  }

  @Test
  void restoreRefusesWhileProcessesRunUnlessForced() throws Exception {
    exec("echo original > keep.txt");
    JsonNode c = checkpoint("with-process");
    String id = c.get("id").asText();
    exec("echo changed > keep.txt");
    assertThat(agent.post("/api/process/start", obj("command", "sleep 600", "processId", "sleeper")).status())
        .isEqualTo(200);

    TestAgent.Response refused = agent.post("/api/checkpoints/" + id + "/restore", "{}");
    assertThat(refused.status()).isEqualTo(409);
    assertThat(refused.text("code")).isEqualTo("PROCESSES_RUNNING");
    assertThat(refused.body().get("context").get("running").asInt()).isEqualTo(1);
    assertThat(Files.readString(agent.workspace.resolve("keep.txt"))).isEqualTo("changed\n");
    assertThat(agent.isFinished("sleeper")).isFalse();

    TestAgent.Response forced = agent.post("/api/checkpoints/" + id + "/restore", "{\"force\":true}");
    assertThat(forced.status()).as("%s", forced.body()).isEqualTo(200);
    assertThat(forced.body().get("killedProcesses").asInt()).isEqualTo(1);
    assertThat(agent.isFinished("sleeper")).isTrue();
    assertThat(Files.readString(agent.workspace.resolve("keep.txt"))).isEqualTo("original\n");
  }

  @Test
  void oneOperationAtATimeAndNoCommandStartsDuringARestore() throws Exception {
    JsonNode c = checkpoint("busy");
    String id = c.get("id").asText();
    // Ignores SIGTERM, so the forced restore holds the lock for the agent's 2 s grace period.
    assertThat(agent.post("/api/process/start", obj("command", "trap '' TERM; while true; do sleep 0.1; done",
        "processId", "stubborn")).status()).isEqualTo(200);
    Thread.sleep(200); // the trap is set
    CompletableFuture<TestAgent.Response> first = CompletableFuture.supplyAsync(
        () -> agent.post("/api/checkpoints/" + id + "/restore", "{\"force\":true}"));
    // An exec does not take the checkpoint lock, so probing with it cannot get in the first one's way.
    TestAgent.Response refusedExec = null;
    while (!first.isDone()) {
      TestAgent.Response exec = agent.post("/api/execute", obj("command", "true"));
      if (exec.status() == 409) {
        refusedExec = exec;
        break;
      }
      Thread.sleep(20);
    }
    assertThat(refusedExec).as("an exec while the restore waits for the process to die").isNotNull();
    assertThat(refusedExec.text("code")).isEqualTo("CHECKPOINT_BUSY");
    assertThat(refusedExec.text("message")).contains("checkpoint " + id + " is being restored");
    // The restore holds on for the 2 s grace period: everything else is refused meanwhile.
    TestAgent.Response second = agent.post("/api/checkpoints/" + id + "/restore", "{\"force\":true}");
    TestAgent.Response create = agent.post("/api/checkpoints", obj("name", "meanwhile"));
    TestAgent.Response delete = agent.delete("/api/checkpoints/" + id);
    assertThat(first.get(60, TimeUnit.SECONDS).status()).isEqualTo(200);
    assertThat(second.status()).isEqualTo(409);
    assertThat(second.text("code")).isEqualTo("CHECKPOINT_BUSY");
    assertThat(second.text("message")).contains("restoring checkpoint " + id);
    assertThat(create.status()).isEqualTo(409);
    assertThat(delete.status()).isEqualTo(409);
    // Afterwards everything works again.
    assertThat(exec("echo fine")).isEqualTo("fine\n");
  }

  @Test
  void unreadableAndReadOnlyDirectoriesAreHandled() throws Exception {
    exec("mkdir -p ro/sub && echo x > ro/sub/f && chmod 555 ro/sub ro");
    Map<String, String> before = tree(agent.workspace);
    JsonNode c = checkpoint("readonly");
    exec("chmod 755 ro ro/sub && echo y > ro/sub/g && chmod 555 ro/sub ro && mkdir locked && chmod 000 locked");
    assertThat(agent.post("/api/checkpoints/" + c.get("id").asText() + "/restore", "{}").status()).isEqualTo(200);
    assertThat(tree(agent.workspace)).isEqualTo(before);
  }

  @Test
  void leftoversOfAnInterruptedCheckpointAreRemovedAtStart() throws Exception {
    Path dir = Files.createDirectory(tmp.resolve("ckpts"));
    Files.writeString(dir.resolve(".tmp-ckpt_0123456789abcdef.tar"), "half");
    Files.writeString(dir.resolve("ckpt_00000000000000aa.tar"), "no metadata");
    Files.writeString(dir.resolve("ckpt_00000000000000bb.json"), "{\"id\":\"ckpt_00000000000000bb\"}");
    TestAgent own = TestAgent.start(b -> b.checkpointDir(dir));
    try {
      assertThat(own.get("/api/checkpoints").body().get("checkpoints")).isEmpty();
      assertThat(Files.exists(dir.resolve(".tmp-ckpt_0123456789abcdef.tar"))).isFalse();
      assertThat(Files.exists(dir.resolve("ckpt_00000000000000aa.tar"))).isFalse();
      assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(dir))).isEqualTo("rwx------");
      TestAgent.Response r = own.post("/api/checkpoints", obj("name", "kept"));
      assertThat(r.status()).isEqualTo(201);
      String id = r.body().get("checkpoint").get("id").asText();
      assertThat(dir.resolve(id + ".tar")).exists();
      assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve(id + ".tar"))))
          .isEqualTo("rw-------");
    } finally {
      own.close();
    }
    // A given directory outlives the agent, with its checkpoints: a new agent lists them.
    TestAgent next = TestAgent.start(b -> b.checkpointDir(dir));
    try {
      assertThat(next.get("/api/checkpoints").body().get("checkpoints")).hasSize(1);
    } finally {
      next.close();
    }
  }

  /**
   * As in the container: the agent is root with only SETUID, SETGID, SETPCAP and KILL (it can
   * neither read the user's 0600 files nor write into the user's directories), commands run as
   * another user. The checkpoint holds what the user made, the user cannot look into the
   * checkpoint directory, and the restored files are the user's and writable by the user.
   */
  @Test
  void asTheCommandUserOfAContainerFilesStayTheUsersAndCheckpointsOutOfReach() throws Exception {
    CommandUserIT.assumeRootWithSetpriv();
    long uid = CommandUserIT.unusedUid();
    Path dir = Files.createTempDirectory("checkpoint-user-it");
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx--x--x"));
    Path ws = Files.createDirectory(dir.resolve("ws"));
    Files.setAttribute(ws, "unix:uid", (int) uid);
    Files.setAttribute(ws, "unix:gid", (int) uid);
    Path checkpoints = dir.resolve("checkpoints");
    LaunchedAgent user = LaunchedAgent.start(CommandUserIT.CONTAINER_ROOT, Map.of(), dir.resolve("agent.log"),
        "--grace-ms", "1000", "--workspace", ws.toString(), "--command-user", uid + ":" + uid,
        "--checkpoint-dir", checkpoints.toString());
    try {
      user.exec(obj("command", "mkdir -p src ro/sub && printf secret > src/private && chmod 600 src/private"
          + " && echo x > ro/sub/f && chmod 555 ro/sub ro && ln -s private src/link && mkdir empty"));
      Map<String, String> before = tree(ws);
      TestAgent.Response created = user.call("POST", "/api/checkpoints", obj("name", "as-user"));
      assertThat(created.status()).as("%s", created.body()).isEqualTo(201);
      String id = created.body().get("checkpoint").get("id").asText();
      JsonNode peek = user.exec(obj("command", "ls " + checkpoints + "; cat " + checkpoints.resolve(id + ".tar")
          + " | head -c 10 | wc -c"));
      assertThat(peek.get("stderr").asText()).contains("Permission denied");
      assertThat(peek.get("stdout").asText().trim()).isEqualTo("0");

      user.exec(obj("command", "chmod 755 ro ro/sub && rm -rf ro/sub && printf changed > src/private"
          + " && mkdir locked && touch locked/x && chmod 000 locked && echo new > new.txt"));
      TestAgent.Response restored = user.call("POST", "/api/checkpoints/" + id + "/restore", "{}");
      assertThat(restored.status()).as("%s", restored.body()).isEqualTo(200);

      assertThat(tree(ws)).isEqualTo(before);
      try (Stream<Path> all = Files.walk(ws)) {
        for (Path p : (Iterable<Path>) all::iterator) {
          assertThat(((Number) Files.getAttribute(p, "unix:uid", LinkOption.NOFOLLOW_LINKS)).longValue()).as("%s", p)
              .isEqualTo(uid);
        }
      }
      JsonNode write = user.exec(obj("command", "printf more >> src/private && cat src/private && rm -r empty"));
      assertThat(write.get("exitCode").asInt()).as("%s", write).isZero();
      assertThat(write.get("stdout").asText()).isEqualTo("secretmore");
    } finally {
      user.close();
      new ProcessBuilder("rm", "-rf", dir.toString()).start().waitFor();
    }
  }

  /**
   * A client that hangs up right after sending the request: the checkpoint it asked for is made
   * whole or not at all; nothing half-written is ever listed or left behind.
   */
  @Test
  void aClientThatHangsUpGetsAWholeCheckpointOrNone() throws Exception {
    Path dir = tmp.resolve("hangup");
    TestAgent own = TestAgent.start(b -> b.checkpointDir(dir));
    try {
      assertThat(own.post("/api/execute", obj("command", "head -c 200000000 /dev/urandom > big && mkdir d"
          + " && for i in $(seq 1 500); do echo $i > d/$i; done")).body().get("exitCode").asInt()).isZero();
      String body = obj("name", "abandoned");
      try (java.net.Socket socket = new java.net.Socket(own.server.uri().getHost(), own.server.uri().getPort())) {
        socket.getOutputStream().write(("POST /api/checkpoints HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
            + TestAgent.TOKEN + "\r\nContent-Type: application/json\r\nContent-Length: " + body.length()
            + "\r\n\r\n" + body).getBytes(StandardCharsets.UTF_8));
        socket.getOutputStream().flush();
      }
      // Until it is done every listing is empty; then it is there, whole.
      List<JsonNode> listed = new ArrayList<>();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (listed.isEmpty() && System.nanoTime() < deadline) {
        own.get("/api/checkpoints").body().get("checkpoints").forEach(listed::add);
        Thread.sleep(50);
      }
      assertThat(listed).hasSize(1);
      String id = listed.get(0).get("id").asText();
      Path archive = dir.resolve(id + ".tar");
      assertThat(Files.size(archive)).isEqualTo(listed.get(0).get("sizeBytes").asLong()).isGreaterThan(200_000_000);
      try (Stream<Path> files = Files.list(dir)) {
        assertThat(files.map(p -> p.getFileName().toString())).containsExactlyInAnyOrder(id + ".tar", id + ".json");
      }
      // And it restores.
      own.post("/api/execute", obj("command", "rm -rf big d && touch other"));
      assertThat(own.post("/api/checkpoints/" + id + "/restore", "{}").status()).isEqualTo(200);
      assertThat(Files.size(own.workspace.resolve("big"))).isEqualTo(200_000_000);
      assertThat(Files.exists(own.workspace.resolve("other"))).isFalse();
    } finally {
      own.close();
    }
  }

  @Test
  void theCheckpointDirectoryMustBeOutsideTheWorkspace() {
    assertThatThrownBy(() -> AgentConfig.builder().workspace(tmp).checkpointDir(tmp.resolve("c")).insecureNoAuth(true)
        .build()).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("outside the workspace");
    assertThatThrownBy(() -> AgentConfig.builder().workspace(tmp.resolve("ws")).checkpointDir(tmp).insecureNoAuth(true)
        .build()).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void aFullDiskFailsCleanlyAndKeepsNothing() throws Exception {
    assumeTrue("root".equals(System.getProperty("user.name")), "mounting a small tmpfs needs root");
    Path dir = Files.createDirectory(tmp.resolve("small"));
    Process mount = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir.toString())
        .redirectErrorStream(true).start();
    String out = new String(mount.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assumeTrue(mount.waitFor() == 0, "cannot mount a tmpfs here: " + out);
    TestAgent own = null;
    try {
      own = TestAgent.start(b -> b.checkpointDir(dir));
      TestAgent.Response w = own.post("/api/execute", obj("command", "head -c 3000000 /dev/urandom > big"));
      assertThat(w.body().get("exitCode").asInt()).isZero();
      TestAgent.Response r = own.post("/api/checkpoints", obj("name", "too-big"));
      assertThat(r.status()).as("%s", r.body()).isEqualTo(507);
      assertThat(r.text("code")).isEqualTo("NO_SPACE");
      assertThat(r.text("message")).contains("no space left");
      try (Stream<Path> left = Files.list(dir)) {
        assertThat(left).isEmpty();
      }
      assertThat(own.get("/api/checkpoints").body().get("checkpoints")).isEmpty();
      own.post("/api/execute", obj("command", "rm big && echo small > s"));
      assertThat(own.post("/api/checkpoints", obj("name", "fits")).status()).isEqualTo(201);
    } finally {
      if (own != null) {
        own.close();
      }
      new ProcessBuilder("umount", dir.toString()).start().waitFor();
    }
  }
}
