package dev.sandboxsdk.mcp;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;

/**
 * The workflow the lifecycle and checkpoint tools are for, as an MCP client runs it against the
 * runnable jar: an agent creates a persistent sandbox with a repository, installs dependencies,
 * checkpoints, breaks things, restores (and gets the files back byte for byte), shuts the
 * sandbox down when idle (its processes end, its files stay), wakes it, and the next day a new
 * server process finds it, wakes it and destroys it. Subclasses say where sandboxes run.
 */
abstract class LifecycleWorkflow {
  @TempDir
  Path tmp;

  private HttpServer gitServer;
  private final String id = "proj-" + HexFormat.of().toHexDigits(new Random().nextInt());
  private final String marker = Long.toString(3_000 + new Random().nextInt(900)) + "."
      + (100_000 + new Random().nextInt(800_000));

  /** The server's options for this provider (without the transport's). */
  abstract List<String> serverArgs();

  /** The URL under which a sandbox reaches this JVM's port. */
  abstract String hostUrl(int port);

  /** Checks of the sandbox's state behind the server's back, while it is stopped; nothing where it cannot be seen. */
  abstract void checkStoppedBehindTheServersBack(JsonNode sandbox) throws Exception;

  /** After destroy: the provider has nothing left of the sandbox. */
  abstract void checkGone(String sandboxId) throws Exception;

  /** Removes whatever a failed run left of sandbox {@code id}. */
  abstract void cleanUp(String sandboxId);

  @BeforeEach
  void repository() throws Exception {
    Path work = Files.createDirectories(tmp.resolve("src"));
    Files.writeString(work.resolve("README.md"), "# demo\nhello\n");
    Files.createDirectories(work.resolve("src"));
    Files.writeString(work.resolve("src/app.py"), "print('hi')\n");
    Files.createDirectories(work.resolve("bin"));
    Files.writeString(work.resolve("bin/run.sh"), "#!/bin/sh\necho run\n");
    Files.setPosixFilePermissions(work.resolve("bin/run.sh"), java.nio.file.attribute.PosixFilePermissions.fromString(
        "rwxr-xr-x"));
    byte[] blob = new byte[65_536];
    new Random(7).nextBytes(blob);
    Files.write(work.resolve("data.bin"), blob);
    git(work, "init", "-q", "-b", "main");
    Files.createSymbolicLink(work.resolve("link"), Path.of("README.md"));
    git(work, "add", "-A");
    git(work, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "first");
    git(tmp, "clone", "-q", "--bare", work.toString(), "demo.git");
    git(tmp.resolve("demo.git"), "update-server-info"); // git's "dumb" HTTP protocol: plain files
    gitServer = HttpServer.create(new InetSocketAddress("0.0.0.0", 0), 0);
    Path root = tmp.toAbsolutePath();
    gitServer.createContext("/", exchange -> {
      Path file = root.resolve(exchange.getRequestURI().getPath().substring(1)).normalize();
      if (!file.startsWith(root.resolve("demo.git")) || !Files.isRegularFile(file)) {
        exchange.sendResponseHeaders(404, -1);
      } else {
        exchange.sendResponseHeaders(200, Files.size(file));
        try (OutputStream out = exchange.getResponseBody(); InputStream in = Files.newInputStream(file)) {
          in.transferTo(out);
        }
      }
      exchange.close();
    });
    gitServer.start();
  }

  @AfterEach
  void stopGitServer() {
    if (gitServer != null) {
      gitServer.stop(0);
    }
    cleanUp(id);
  }

  /**
   * The workflow over {@code firstHttp ? HTTP : stdio}, then the second server over the other
   * transport.
   */
  void workflow(boolean firstHttp) throws Exception {
    String repo = hostUrl(gitServer.getAddress().getPort()) + "/demo.git";
    String fingerprint;
    String createdAt;
    String checkpointId;
    try (JarClient a = JarClient.start(firstHttp, tmp, serverArgs(), Map.of())) {
      // create a persistent sandbox with the repository
      JsonNode got = ok(a.call("getSandbox", args("sandboxId", id, "persistent", true, "repository", repo)));
      JsonNode sandbox = sc(got).get("sandbox");
      assertThat(sc(got).get("created").asBoolean()).isTrue();
      assertThat(sandbox.get("persistent").asBoolean()).isTrue();
      assertThat(sandbox.get("status").asText()).isEqualTo("running");
      createdAt = sandbox.get("createdAt").asText();
      Instant.parse(createdAt);
      String dir = sc(got).get("repository").get("targetDir").asText();
      assertThat(dir).endsWith("/demo");
      assertThat(sc(got).get("repository").get("branch").asText()).isEqualTo("main");
      assertThat(text(got)).contains("Created persistent sandbox '" + id + "'").contains(repo);
      assertThat(listed(a, id).get("status").asText()).isEqualTo("running");

      // its repository is there: contents, an executable, a symbolic link
      JsonNode cloned = ok(a.call("exec", args("sandboxId", id, "command", "cd " + dir + " && cat README.md"
          + " && ./bin/run.sh && readlink link && git log --format=%s")));
      assertThat(sc(cloned).get("stdout").asText()).isEqualTo("# demo\nhello\nrun\nREADME.md\nfirst\n");

      // "install dependencies": files, modes, links and an empty directory the repository did not have
      ok(a.call("exec", args("sandboxId", id, "command", "cd " + dir + " && mkdir -p deps/lib deps/empty"
          + " && head -c 300000 /dev/urandom > deps/lib/blob.bin && printf x > deps/lib/one && chmod 600 deps/lib/one"
          + " && ln -s lib/blob.bin deps/current && echo edited >> README.md")));
      fingerprint = fingerprint(a, dir);
      assertThat(fingerprint).contains("deps/lib/blob.bin").contains("l 777 ./deps/current lib/blob.bin")
          .contains(" ./deps/empty \n").contains("f 600 ./deps/lib/one").contains("l 777 ./link README.md")
          .matches("(?s).*f 7[0-7]{2} \\./bin/run\\.sh.*");

      // checkpoint
      JsonNode cp = ok(a.call("createCheckpoint", args("sandboxId", id, "name", "deps-installed")));
      checkpointId = sc(cp).get("checkpoint").get("id").asText();
      assertThat(sc(cp).get("checkpoint").get("name").asText()).isEqualTo("deps-installed");
      assertThat(sc(cp).get("checkpoint").get("sizeBytes").asLong()).isGreaterThan(300_000);
      assertThat(text(cp)).contains("restoreCheckpoint");
      JsonNode cps = ok(a.call("listCheckpoints", args("sandboxId", id)));
      assertThat(sc(cps).get("count").asInt()).isEqualTo(1);
      assertThat(sc(cps).get("checkpoints").get(0).get("id").asText()).isEqualTo(checkpointId);

      // break things, with a process still running
      ok(a.call("exec", args("sandboxId", id, "command", "cd " + dir + " && rm -rf src deps/lib .git/objects"
          + " && echo broken > README.md && echo new > extra.txt && chmod 644 bin/run.sh && rm link")));
      assertThat(fingerprint(a, dir)).isNotEqualTo(fingerprint);
      ok(a.call("startProcess", args("sandboxId", id, "command", "sleep 600", "processId", "tests")));
      JsonNode refused = a.call("restoreCheckpoint", args("sandboxId", id, "checkpointId", "deps-installed"));
      assertThat(isError(refused)).as("%s", refused).isTrue();
      assertThat(text(refused)).contains("running processes").contains("tests").contains("force: true");

      // restore (by name, killing the process): the files are back byte for byte
      JsonNode restored = ok(a.call("restoreCheckpoint", args("sandboxId", id, "checkpointId", "deps-installed",
          "force", true)));
      assertThat(sc(restored).get("restored").asBoolean()).isTrue();
      assertThat(sc(restored).get("killedProcesses").asInt()).isEqualTo(1);
      assertThat(sc(restored).get("checkpoint").get("id").asText()).isEqualTo(checkpointId);
      assertThat(fingerprint(a, dir)).isEqualTo(fingerprint);
      // git sees what it saw at the checkpoint (without writing its index: the fingerprint covers it)
      assertThat(sc(ok(a.call("exec", args("sandboxId", id, "command", "cd " + dir + " && GIT_OPTIONAL_LOCKS=0 git"
          + " status --porcelain && test ! -e extra.txt && echo clean")))).get("stdout").asText())
          .contains("?? deps/\n").contains(" M README.md\n").endsWith("clean\n");

      // shutdown when idle: its processes end, its files stay
      ok(a.call("startProcess", args("sandboxId", id, "command", "sleep " + marker, "processId", "server")));
      assertThat(processesWithMarker()).as("the sandbox's process, seen from this machine").isNotEmpty();
      JsonNode down = ok(a.call("shutdownSandbox", args("sandboxId", id)));
      assertThat(sc(down).get("sandbox").get("status").asText()).isEqualTo("stopped");
      assertThat(sc(down).get("wasRunning").asBoolean()).isTrue();
      assertThat(sc(down).get("stoppedProcesses").asInt()).isEqualTo(1);
      assertThat(text(down)).contains("wakeSandbox");
      assertThat(processesWithMarker()).as("processes after shutdownSandbox").isEmpty();
      assertThat(listed(a, id).get("status").asText()).isEqualTo("stopped");
      checkStoppedBehindTheServersBack(sc(down).get("sandbox"));

      // a call on the stopped sandbox says what to do
      JsonNode onStopped = a.call("exec", args("sandboxId", id, "command", "true"));
      assertThat(isError(onStopped)).isTrue();
      assertThat(text(onStopped)).startsWith("sandbox '" + id + "' is stopped: call wakeSandbox {\"sandboxId\":\"" + id
          + "\"}");
      assertThat(text(a.call("createCheckpoint", args("sandboxId", id, "name", "x")))).contains("is stopped");

      // wake: the files are there, new processes run, old ones did not come back
      JsonNode up = ok(a.call("wakeSandbox", args("sandboxId", id)));
      assertThat(sc(up).get("wasRunning").asBoolean()).isFalse();
      assertThat(sc(up).get("sandbox").get("status").asText()).isEqualTo("running");
      assertThat(fingerprint(a, dir)).isEqualTo(fingerprint);
      assertThat(sc(ok(a.call("exec", args("sandboxId", id, "command", "echo new process")))).get("stdout").asText())
          .isEqualTo("new process\n");
      JsonNode processes = ok(a.call("listProcesses", args("sandboxId", id)));
      assertThat(processes.toString()).doesNotContain(marker);
      assertThat(listed(a, id).get("status").asText()).isEqualTo("running");

      // lifecycle tools on a sandbox that is not persistent say what it is
      assertThat(text(a.call("shutdownSandbox", args()))).startsWith("There is no sandbox 'default' yet");
      ok(a.call("exec", args("command", "true")));
      JsonNode notPersistent = a.call("shutdownSandbox", args());
      assertThat(text(notPersistent)).contains("is not persistent").contains("persistent\": true");

      a.stop(); // the client goes away: the server shuts its persistent sandboxes down and keeps them
    }
    assertThat(processesWithMarker()).isEmpty();

    // the next day: another server process finds the sandbox, wakes it, and it is all there
    try (JarClient b = JarClient.start(!firstHttp, tmp, serverArgs(), Map.of())) {
      JsonNode found = listed(b, id);
      assertThat(found.get("status").asText()).isEqualTo("stopped");
      assertThat(found.get("persistent").asBoolean()).isTrue();
      assertThat(found.get("createdAt").asText()).isEqualTo(createdAt);
      assertThat(found.get("lastActivityAt").isNull()).as("a stopped sandbox's last activity: %s", found).isFalse();
      JsonNode onStopped = b.call("readFile", args("sandboxId", id, "path", "demo/README.md"));
      assertThat(text(onStopped)).contains("is stopped: call wakeSandbox");
      ok(b.call("wakeSandbox", args("sandboxId", id)));
      String dir = listed(b, id).get("workspace").asText() + "/demo";
      assertThat(fingerprint(b, dir)).isEqualTo(fingerprint);
      JsonNode cps = ok(b.call("listCheckpoints", args("sandboxId", id)));
      assertThat(sc(cps).get("checkpoints").get(0).get("id").asText()).isEqualTo(checkpointId);
      ok(b.call("exec", args("sandboxId", id, "command", "rm -rf " + dir + "/deps")));
      ok(b.call("restoreCheckpoint", args("sandboxId", id, "checkpointId", checkpointId)));
      assertThat(fingerprint(b, dir)).isEqualTo(fingerprint);

      ok(b.call("shutdownSandbox", args("sandboxId", id)));
      JsonNode destroyed = ok(b.call("destroy", args("sandboxId", id))); // a stopped one too
      assertThat(sc(destroyed).get("destroyed").asBoolean()).isTrue();
      assertThat(ids(b)).doesNotContain(id);
      checkGone(id);
      assertThat(text(b.call("wakeSandbox", args("sandboxId", id)))).contains("There is no sandbox '" + id + "'");
    }
  }

  // ---- helpers

  /**
   * The files under {@code dir} as the sandbox sees them: type, mode, path and link target of
   * every entry, and the SHA-256 of every file's contents.
   */
  private String fingerprint(JarClient c, String dir) throws Exception {
    JsonNode r = ok(c.call("exec", args("sandboxId", id, "command", "cd " + dir + " && find . -printf '%y %m %p %l\\n' | LC_ALL=C sort"
        + " && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum", "maxOutputBytes", 1 << 20)));
    assertThat(sc(r).get("truncated").asBoolean()).isFalse();
    return sc(r).get("stdout").asText();
  }

  /** The processes on this machine whose command line has this run's marker. */
  private List<ProcessHandle> processesWithMarker() {
    List<ProcessHandle> out = new ArrayList<>();
    ProcessHandle.allProcesses().filter(ProcessHandle::isAlive)
        .filter(p -> p.info().arguments().map(a -> String.join(" ", a).contains(marker)).orElse(false))
        .forEach(out::add);
    return out;
  }

  /** The sandbox {@code sandboxId} as listSandboxes shows it. */
  static JsonNode listed(JarClient c, String sandboxId) throws Exception {
    JsonNode list = ok(c.call("listSandboxes", args()));
    assertThat(sc(list).get("count").asInt()).isEqualTo(sc(list).get("sandboxes").size());
    for (JsonNode s : sc(list).get("sandboxes")) {
      if (s.get("sandboxId").asText().equals(sandboxId)) {
        Instant.parse(s.get("createdAt").asText());
        if (!s.get("lastActivityAt").isNull()) {
          Instant.parse(s.get("lastActivityAt").asText());
        }
        return s;
      }
    }
    throw new AssertionError("listSandboxes does not show " + sandboxId + ": " + list);
  }

  static List<String> ids(JarClient c) throws Exception {
    List<String> out = new ArrayList<>();
    sc(ok(c.call("listSandboxes", args()))).get("sandboxes").forEach(s -> out.add(s.get("sandboxId").asText()));
    return out;
  }

  static JsonNode ok(JsonNode result) {
    assertThat(isError(result)).as("%s", result).isFalse();
    return result;
  }

  static boolean isError(JsonNode result) {
    return result.path("isError").asBoolean(false);
  }

  static JsonNode sc(JsonNode result) {
    return result.get("structuredContent");
  }

  static String text(JsonNode result) {
    return result.get("content").get(0).get("text").asText();
  }

  static ObjectNode args(Object... kv) {
    ObjectNode o = JarClient.MAPPER.createObjectNode();
    for (int i = 0; i < kv.length; i += 2) {
      o.set((String) kv[i], JarClient.MAPPER.valueToTree(kv[i + 1]));
    }
    return o;
  }

  static Optional<String> env(String name) {
    return Optional.ofNullable(System.getenv(name));
  }

  private static void git(Path dir, String... argv) throws IOException, InterruptedException {
    List<String> command = new ArrayList<>(List.of("git"));
    command.addAll(List.of(argv));
    Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as("git %s: %s", List.of(argv), out).isZero();
  }
}
