package dev.sandboxsdk.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The upstream on its own, straight from this JVM and from the host's git (no proxy): it presents a
 * certificate for its names that its PEM verifies, records what each request carried, and serves
 * its repository to the token only, as a Bearer header or as Basic credentials in the URL.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SecretUpstreamTest {
  private static final String TOKEN = "tok-" + Long.toHexString(System.nanoTime());
  private static SecretUpstream upstream;

  @TempDir
  Path dir;

  @BeforeAll
  static void start() {
    upstream = SecretUpstream.start("localhost", "git.test");
  }

  @AfterAll
  static void stop() {
    upstream.close();
  }

  @Test
  void answersHelloOverTlsAndRecordsTheHeadersItReceived() throws Exception {
    HttpClient client = HttpClient.newBuilder().sslContext(upstream.clientContext()).build();
    HttpResponse<String> r = client.send(HttpRequest.newBuilder(URI.create("https://localhost:" + upstream.port()
        + "/v1?q=1")).header("X-Api-Key", "the-value").build(), HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.body()).isEqualTo(HelloUpstream.BODY);
    assertThat(upstream.last().target()).isEqualTo("/v1?q=1");
    assertThat(upstream.last().header("x-API-key")).isEqualTo("the-value");
    assertThat(upstream.pem()).startsWith("-----BEGIN CERTIFICATE-----\n");
  }

  @Test
  void servesItsRepositoryToTheTokenOnly() throws Exception {
    assumeTrue(git("--version").exit == 0, "git is not installed");
    upstream.addRepository("private", TOKEN, Map.of("README.md", "private readme\n", "src/a.txt", "a\n"));
    String url = "localhost:" + upstream.port() + "/private.git";

    Result bearer = git("-c", "http.extraHeader=Authorization: Bearer " + TOKEN, "clone", "-q", "https://" + url,
        dir.resolve("bearer").toString());
    assertThat(bearer.exit).as(bearer.out).isZero();
    assertThat(Files.readString(dir.resolve("bearer/README.md"))).isEqualTo("private readme\n");
    assertThat(Files.readString(dir.resolve("bearer/src/a.txt"))).isEqualTo("a\n");
    assertThat(upstream.received()).anyMatch(r -> r.method().equals("POST") && r.target().equals("/private.git/git-upload-pack"));

    Result basic = git("clone", "-q", "https://x-access-token:" + TOKEN + "@" + url, dir.resolve("basic").toString());
    assertThat(basic.exit).as(basic.out).isZero();
    assertThat(dir.resolve("basic/README.md")).exists();

    Result none = git("clone", "-q", "https://" + url, dir.resolve("none").toString());
    assertThat(none.exit).isNotZero();
    Result wrong = git("-c", "http.extraHeader=Authorization: Bearer not-" + TOKEN, "clone", "-q", "https://" + url,
        dir.resolve("wrong").toString());
    assertThat(wrong.exit).isNotZero();
    assertThat(dir.resolve("none")).doesNotExist();
    assertThat(dir.resolve("wrong")).doesNotExist();
  }

  private record Result(int exit, String out) {}

  private Result git(String... args) throws IOException, InterruptedException {
    if (Stream.of(System.getenv("PATH").split(":")).noneMatch(d -> Files.isExecutable(Path.of(d, "git")))) {
      return new Result(127, "no git");
    }
    Path ca = dir.resolve("upstream.pem");
    Files.writeString(ca, upstream.pem());
    List<String> command = new ArrayList<>(List.of("git"));
    command.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
    Map<String, String> env = pb.environment();
    env.keySet().removeIf(k -> k.toLowerCase(java.util.Locale.ROOT).endsWith("_proxy"));
    env.put("GIT_SSL_CAINFO", ca.toString());
    env.put("GIT_CONFIG_NOSYSTEM", "1");
    env.put("GIT_CONFIG_GLOBAL", "/dev/null");
    env.put("GIT_TERMINAL_PROMPT", "0");
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    return new Result(p.exitValue(), out);
  }
}
