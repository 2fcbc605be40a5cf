package dev.sandboxsdk.agent;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * POST /api/git/checkout on the packaged agent with real repositories made by the host's git and
 * cloned through {@code file://} URLs (no network needed), plus an HTTP "remote" in the test that
 * asks for credentials, to see that they reach git but no argument list, answer or log.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class GitCheckoutIT {
  @TempDir
  Path dir;

  /** A repository with two commits on {@code main} and a branch {@code feature} with one more. */
  static Path repository(Path at) throws Exception {
    Files.createDirectories(at);
    git(at, "init", "-q", "-b", "main");
    Files.writeString(at.resolve("README.md"), "hello\n");
    git(at, "add", "README.md");
    git(at, "commit", "-q", "-m", "first");
    Files.writeString(at.resolve("second.txt"), "two\n");
    git(at, "add", "second.txt");
    git(at, "commit", "-q", "-m", "second");
    git(at, "checkout", "-q", "-b", "feature");
    Files.writeString(at.resolve("feature.txt"), "feature\n");
    git(at, "add", "feature.txt");
    git(at, "commit", "-q", "-m", "feature");
    git(at, "checkout", "-q", "main");
    return at;
  }

  static String git(Path cwd, String... args) throws Exception {
    List<String> cmd = new ArrayList<>(List.of("git", "-c", "user.name=Test", "-c", "user.email=test@example.com"));
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).directory(cwd.toFile()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as("git %s: %s", List.of(args), out).isZero();
    return out;
  }

  @Test
  void clonesBranchesDepthsAndTargetsAndMapsFailuresToClientErrors() throws Exception {
    Path src = repository(dir.resolve("src"));
    Path ws = dir.resolve("ws");
    try (LaunchedAgent agent = LaunchedAgent.start(List.of(), Map.of(), dir.resolve("agent.log"),
        "--workspace", ws.toString())) {
      String url = "file://" + src;
      JsonNode def = agent.ok("POST", "/api/git/checkout", "{\"repoUrl\":\"" + url + "\"}");
      assertThat(def.path("success").asBoolean()).isTrue();
      assertThat(def.path("repoUrl").asText()).isEqualTo(url);
      assertThat(def.path("branch").asText()).isEqualTo("main");
      Path target = Path.of(def.path("targetDir").asText());
      assertThat(target.getFileName().toString()).isEqualTo("src");
      assertThat(target.toRealPath()).isEqualTo(ws.toRealPath().resolve("src"));
      assertThat(target.resolve("second.txt")).hasContent("two");
      assertThat(target.resolve("feature.txt")).doesNotExist();
      assertThat(def.path("timestamp").asText()).isNotEmpty();

      JsonNode feature = agent.ok("POST", "/api/git/checkout", "{\"repoUrl\":\"" + url + "\",\"branch\":\"feature\","
          + "\"targetDir\":\"clones/feature\",\"sessionId\":\"ignored\"}");
      assertThat(feature.path("branch").asText()).isEqualTo("feature");
      assertThat(Path.of(feature.path("targetDir").asText()).resolve("feature.txt")).hasContent("feature");

      JsonNode shallow = agent.ok("POST", "/api/git/checkout", "{\"repoUrl\":\"" + url + "\",\"depth\":1,"
          + "\"targetDir\":\"" + ws.resolve("shallow") + "\",\"timeoutMs\":60000}");
      assertThat(git(Path.of(shallow.path("targetDir").asText()), "rev-list", "--count", "HEAD").trim()).isEqualTo("1");
      assertThat(git(ws.resolve("src"), "rev-list", "--count", "HEAD").trim()).isEqualTo("2");

      TestAgent.Response exists = agent.call("POST", "/api/git/checkout", "{\"repoUrl\":\"" + url + "\",\"targetDir\":\"src\"}");
      assertThat(exists.status()).as("%s", exists.body()).isEqualTo(409);
      assertThat(exists.body().path("code").asText()).isEqualTo("FILE_EXISTS");
      assertThat(exists.body().path("message").asText()).contains("not an empty directory");
      Files.createDirectories(ws.resolve("empty"));
      assertThat(agent.ok("POST", "/api/git/checkout", "{\"repoUrl\":\"" + url + "\",\"targetDir\":\"empty\"}")
          .path("branch").asText()).isEqualTo("main");

      TestAgent.Response missing = agent.call("POST", "/api/git/checkout", "{\"repoUrl\":\"file://" + dir.resolve("nope.git")
          + "\",\"targetDir\":\"nope\"}");
      assertThat(missing.status()).as("%s", missing.body()).isEqualTo(404);
      assertThat(missing.body().path("code").asText()).isEqualTo("GIT_REPOSITORY_NOT_FOUND");
      assertThat(missing.body().path("message").asText()).contains("repository not found").contains("nope.git");
      assertThat(ws.resolve("nope")).doesNotExist();

      TestAgent.Response branch = agent.call("POST", "/api/git/checkout", "{\"repoUrl\":\"" + url + "\",\"branch\":\"nope\","
          + "\"targetDir\":\"nobranch\"}");
      assertThat(branch.status()).as("%s", branch.body()).isEqualTo(404);
      assertThat(branch.body().path("code").asText()).isEqualTo("GIT_BRANCH_NOT_FOUND");
      assertThat(branch.body().path("context").path("stderr").asText()).contains("nope");

      TestAgent.Response outside = agent.call("POST", "/api/git/checkout", "{\"repoUrl\":\"" + url + "\",\"targetDir\":\"../out\"}");
      assertThat(outside.status()).as("%s", outside.body()).isEqualTo(403);
      assertThat(dir.resolve("out")).doesNotExist();

      for (String bad : List.of("{}", "{\"repoUrl\":\"\"}", "{\"repoUrl\":\"-uhttp://x\"}", "{\"repoUrl\":\"ext::sh -c x\"}",
          "{\"repoUrl\":\"ext::sh\"}", "{\"repoUrl\":\"ftp://host/x.git\"}", "{\"repoUrl\":\"" + url + "\",\"depth\":0}",
          "{\"repoUrl\":\"" + url + "\",\"branch\":\"--upload-pack=x\"}", "{\"repoUrl\":\"" + url + "\",\"timeoutMs\":-1}",
          "{\"repoUrl\":\"" + url + "\",\"dept\":1}", "{\"repoUrl\":1}")) {
        TestAgent.Response r = agent.call("POST", "/api/git/checkout", bad);
        assertThat(r.status()).as("%s -> %s", bad, r.body()).isEqualTo(400);
      }
    }
  }

  @Test
  void credentialsInTheUrlReachGitButNoArgumentListAnswerOrLog() throws Exception {
    Path log = dir.resolve("agent.log");
    List<String> authorizations = new CopyOnWriteArrayList<>();
    CompletableFuture<Void> asked = new CompletableFuture<>();
    HttpServer remote = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    remote.createContext("/", exchange -> {
      String auth = exchange.getRequestHeaders().getFirst("Authorization");
      if (auth == null) {
        exchange.getResponseHeaders().set("WWW-Authenticate", "Basic realm=\"test\"");
        exchange.sendResponseHeaders(401, -1);
      } else {
        authorizations.add(auth);
        asked.complete(null);
        try {
          Thread.sleep(2_000); // while git waits, the test looks at every process's arguments
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        exchange.sendResponseHeaders(404, -1);
      }
      exchange.close();
    });
    remote.start();
    int port = remote.getAddress().getPort();
    try (LaunchedAgent agent = LaunchedAgent.start(List.of(), Map.of(), log, "--workspace", dir.resolve("ws").toString())) {
      String url = "http://alice:s3cr%40tpass@127.0.0.1:" + port + "/x.git";
      CompletableFuture<TestAgent.Response> call = CompletableFuture.supplyAsync(() ->
          agent.call("POST", "/api/git/checkout", "{\"repoUrl\":\"" + url + "\",\"targetDir\":\"private\"}"));
      asked.get(30, TimeUnit.SECONDS);
      String ps = ps();
      TestAgent.Response r = call.get(60, TimeUnit.SECONDS);

      assertThat(authorizations).as("git answered the remote's challenge with the URL's credentials")
          .contains("Basic " + Base64.getEncoder().encodeToString("alice:s3cr@tpass".getBytes(StandardCharsets.UTF_8)));
      assertThat(ps).as("ps while git ran").contains("127.0.0.1:" + port).doesNotContain("s3cr").doesNotContain("alice");
      assertThat(r.status()).as("%s", r.body()).isEqualTo(404);
      assertThat(r.body().path("code").asText()).isEqualTo("GIT_REPOSITORY_NOT_FOUND");
      assertThat(r.body().toString()).doesNotContain("s3cr").doesNotContain("alice");

      // Unreachable: a network error, redacted too.
      TestAgent.Response down = agent.call("POST", "/api/git/checkout",
          "{\"repoUrl\":\"http://user:secret@127.0.0.1:1/x.git\",\"targetDir\":\"down\"}");
      assertThat(down.status()).as("%s", down.body()).isEqualTo(502);
      assertThat(down.body().path("code").asText()).isEqualTo("GIT_NETWORK_ERROR");
      assertThat(down.body().path("message").asText()).contains("http://127.0.0.1:1/x.git");
      assertThat(down.body().toString()).doesNotContain("secret");

      // An invalid URL with credentials is refused without echoing them.
      TestAgent.Response bad = agent.call("POST", "/api/git/checkout", "{\"repoUrl\":\"gopher://user:secret@host/x\"}");
      assertThat(bad.status()).isEqualTo(400);
      assertThat(bad.body().toString()).doesNotContain("secret").contains("gopher://***@host/x");
      assertThat(Files.readString(log)).contains("git clone of").doesNotContain("secret").doesNotContain("s3cr");
      // The clone that got an answer keeps no credentials in its configuration either (it failed: no directory).
      assertThat(dir.resolve("ws").resolve("private")).doesNotExist();
    } finally {
      remote.stop(0);
    }
  }

  @Test
  void anIsolatedAgentWithoutNetworkClonesFromTheWorkspaceAndRefusesRemotes() throws Exception {
    Path ws = dir.resolve("ws");
    Path origin = repository(ws.resolve("origin"));
    try (LaunchedAgent agent = LaunchedAgent.start(List.of(), Map.of(), dir.resolve("agent.log"),
        "--workspace", ws.toString(), "--isolation", "bwrap")) {
      JsonNode r = agent.ok("POST", "/api/git/checkout", "{\"repoUrl\":\"file://" + origin + "\",\"branch\":\"feature\","
          + "\"targetDir\":\"copy\",\"depth\":1}");
      assertThat(r.path("branch").asText()).isEqualTo("feature");
      assertThat(ws.resolve("copy").resolve("feature.txt")).hasContent("feature");
      JsonNode local = agent.ok("POST", "/api/git/checkout", "{\"repoUrl\":\"origin\",\"targetDir\":\"local\"}");
      assertThat(local.path("branch").asText()).isEqualTo("main");

      TestAgent.Response remote = agent.call("POST", "/api/git/checkout",
          "{\"repoUrl\":\"https://github.com/cloudflare/sandbox-sdk.git\"}");
      assertThat(remote.status()).as("%s", remote.body()).isEqualTo(400);
      assertThat(remote.body().path("code").asText()).isEqualTo("INVALID_GIT_URL");
      assertThat(remote.body().path("message").asText()).contains("without network").contains("file://");
      // Outside the workspace, the host's temporary repository does not exist for the sandbox.
      Path hidden = repository(dir.resolve("hidden"));
      TestAgent.Response invisible = agent.call("POST", "/api/git/checkout", "{\"repoUrl\":\"file://" + hidden
          + "\",\"targetDir\":\"hidden\"}");
      assertThat(invisible.status()).as("%s", invisible.body()).isEqualTo(404);
    }
  }

  static String ps() throws IOException, InterruptedException {
    Process p = new ProcessBuilder("ps", "-eo", "args").redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    p.waitFor(10, TimeUnit.SECONDS);
    return out;
  }
}
