package dev.sandboxsdk.mcp.internal;

import static dev.sandboxsdk.mcp.internal.McpTestClient.args;
import static dev.sandboxsdk.mcp.internal.McpTestClient.sc;
import static dev.sandboxsdk.mcp.internal.McpTestClient.text;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/** waitForPort and gitCheckout against real local sandboxes: real agents, real servers, real git. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PortGitToolsIT {
  private static final String SECRET = "ghp-test-secret-0123456789";
  private McpTestClient mcp;

  @BeforeAll
  void start() {
    AdapterConfig config = AdapterConfig.parse(new String[] {"--pass-env", "GIT_TOKEN"}, Map.of("GIT_TOKEN", SECRET));
    mcp = McpTestClient.initialized(config);
  }

  @AfterAll
  void stop() {
    mcp.close();
  }

  @Test
  void waitForPortReturnsOnceTheServerAnswersAndFailsFastWhenItsProcessEnds() {
    mcp.call("startProcess", args("command", "sleep 0.5; exec python3 -m http.server 18431 --bind 127.0.0.1",
        "processId", "web"));
    JsonNode r = mcp.call("waitForPort", args("port", 18431, "processId", "web", "timeoutSeconds", 30));
    assertThat(r.has("isError")).as("%s", r).isFalse();
    assertThat(sc(r).get("ready").asBoolean()).isTrue();
    assertThat(sc(r).get("mode").asText()).isEqualTo("http");
    JsonNode tcp = mcp.call("waitForPort", args("port", 18431, "mode", "tcp"));
    assertThat(tcp.has("isError")).as("%s", tcp).isFalse();

    JsonNode notFound = mcp.call("waitForPort", args("port", 18431, "path", "/no-such-page", "timeoutSeconds", 1));
    assertThat(notFound.get("isError").asBoolean()).isTrue();
    assertThat(text(notFound)).contains("404").contains("waitForPort again");

    mcp.call("startProcess", args("command", "exit 4", "processId", "crash"));
    JsonNode crashed = mcp.call("waitForPort", args("port", 18432, "processId", "crash", "timeoutSeconds", 30));
    assertThat(crashed.get("isError").asBoolean()).isTrue();
    assertThat(text(crashed)).contains("exit code 4").contains("getProcessLogs");

    // Exposed: a client without the agent's token opens the preview URL, until it is unexposed.
    mcp.call("writeFile", args("path", "index.html", "content", "hello from the sandbox"));
    JsonNode exposed = mcp.call("exposePort", args("port", 18431, "name", "web"));
    assertThat(exposed.has("isError")).as("%s", exposed).isFalse();
    String url = sc(exposed).get("url").asText();
    assertThat(url).contains("/proxy/18431/").contains("sandbox-preview-token=");
    assertThat(get(url)).isEqualTo("200 hello from the sandbox");
    JsonNode again = mcp.call("exposePort", args("port", 18431));
    assertThat(text(again)).contains("exposed already").contains("listExposedPorts");
    JsonNode listed = mcp.call("listExposedPorts", args());
    assertThat(sc(listed).get("count").asInt()).isEqualTo(1);
    assertThat(sc(listed).get("ports").get(0).get("name").asText()).isEqualTo("web");
    assertThat(sc(mcp.call("unexposePort", args("port", 18431))).get("exposed").asBoolean()).isFalse();
    assertThat(get(url)).doesNotStartWith("200");
    assertThat(sc(mcp.call("listExposedPorts", args())).get("count").asInt()).isZero();

    JsonNode tcpWithPath = mcp.call("waitForPort", args("port", 18431, "mode", "tcp", "path", "/"));
    assertThat(text(tcpWithPath)).contains("http");
    JsonNode badPort = mcp.call("waitForPort", args("port", 70000));
    assertThat(badPort.get("isError").asBoolean()).isTrue();
    mcp.call("killProcess", args("processId", "web"));
  }

  @Test
  void gitCheckoutClonesAndSaysWhatToDoWhenItCannot() {
    mcp.call("exec", args("command", "git init -q -b main repo-src && cd repo-src && echo hi > README"
        + " && git add README && git -c user.name=t -c user.email=t@example.com commit -qm first"));
    JsonNode r = mcp.call("gitCheckout", args("repoUrl", "repo-src", "targetDir", "repo-clone"));
    assertThat(r.has("isError")).as("%s", r).isFalse();
    assertThat(sc(r).get("branch").asText()).isEqualTo("main");
    assertThat(sc(r).get("targetDir").asText()).endsWith("/repo-clone");
    assertThat(sc(mcp.call("readFile", args("path", "repo-clone/README"))).get("content").asText()).isEqualTo("hi\n");

    JsonNode missing = mcp.call("gitCheckout", args("repoUrl", "no-such-repo"));
    assertThat(missing.get("isError").asBoolean()).isTrue();
    assertThat(text(missing)).contains("GIT_REPOSITORY_NOT_FOUND").contains("Check the URL");

    JsonNode unknownVar = mcp.call("gitCheckout", args("repoUrl", "https://example.com/o/r.git",
        "passwordEnv", "NOT_PASSED"));
    assertThat(text(unknownVar)).contains("--pass-env NOT_PASSED").contains("GIT_TOKEN");

    // The token is looked up by the server and never shows in what the client gets back.
    JsonNode remote = mcp.call("gitCheckout", args("repoUrl", "http://127.0.0.1:1/r.git", "username", "bob",
        "passwordEnv", "GIT_TOKEN", "targetDir", "remote", "timeoutSeconds", 20));
    assertThat(remote.get("isError").asBoolean()).isTrue();
    assertThat(remote.toString() + mcp.notifications).doesNotContain(SECRET);
  }

  /** A browser's view: no agent token, cookies kept, redirects followed; "status body". */
  private static String get(String url) {
    try {
      java.net.http.HttpClient browser = java.net.http.HttpClient.newBuilder()
          .cookieHandler(new java.net.CookieManager()).followRedirects(java.net.http.HttpClient.Redirect.NORMAL).build();
      java.net.http.HttpResponse<String> r = browser.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(url))
          .build(), java.net.http.HttpResponse.BodyHandlers.ofString());
      return r.statusCode() + " " + r.body();
    } catch (java.io.IOException | InterruptedException e) {
      throw new AssertionError(e);
    }
  }
}
