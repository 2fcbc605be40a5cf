package dev.sandboxsdk.agent;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sandboxsdk.agent.process.Trees;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The reverse proxy {@code /proxy/{port}/} and the exposed-port routes on the packaged agent, with
 * real servers started through the agent's process API: without isolation (the agent connects
 * itself) and with {@code --isolation bwrap} and no network, where the servers listen in the
 * sandbox's own network namespace and only the relay inside it can reach them.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ProxyIT {
  /**
   * A test server: GET /sse sends one event, waits for a file named {@code go} in its directory
   * (for ever: a proxy that held the first event back would hang the test until its timeout),
   * sends a second and ends; GET /forever sends an event every 50 ms until the client goes, then
   * notes it in {@code closed.log}; GET /stall never answers; POST /echo answers with the body's
   * length and SHA-256 and the headers it got; anything else: the headers it got.
   */
  static final String SERVER = """
      import http.server, hashlib, json, os, sys, time
      class H(http.server.BaseHTTPRequestHandler):
          protocol_version = "HTTP/1.1"
          def log_message(self, *args):
              pass
          def answer(self, obj):
              body = json.dumps(obj).encode()
              self.send_response(200)
              self.send_header("Content-Type", "application/json")
              self.send_header("Content-Length", str(len(body)))
              self.send_header("Set-Cookie", "app=1; Path=/")
              self.end_headers()
              self.wfile.write(body)
          def event(self, obj):
              self.wfile.write(("data: " + json.dumps(obj) + "\\n\\n").encode())
              self.wfile.flush()
          def do_GET(self):
              if self.path == "/sse":
                  self.send_response(200)
                  self.send_header("Content-Type", "text/event-stream")
                  self.end_headers()
                  self.event({"n": 1})
                  while not os.path.exists("go"):
                      time.sleep(0.05)
                  self.event({"n": 2})
                  self.close_connection = True
              elif self.path == "/forever":
                  self.send_response(200)
                  self.send_header("Content-Type", "text/event-stream")
                  self.end_headers()
                  try:
                      while True:
                          self.event({"tick": time.time()})
                          time.sleep(0.05)
                  except OSError:
                      with open("closed.log", "a") as f:
                          f.write("closed\\n")
                      self.close_connection = True
              elif self.path == "/stall":
                  time.sleep(3600)
              else:
                  self.answer({"path": self.path, "headers": dict(self.headers)})
          def do_POST(self):
              if self.headers.get("Transfer-Encoding") == "chunked":
                  data = b""
                  while True:
                      size = int(self.rfile.readline().strip(), 16)
                      if size == 0:
                          self.rfile.readline()
                          break
                      data += self.rfile.read(size)
                      self.rfile.readline()
              else:
                  data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
              self.answer({"length": len(data), "sha256": hashlib.sha256(data).hexdigest(),
                           "chunked": self.headers.get("Transfer-Encoding") == "chunked", "headers": dict(self.headers)})
      http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
      """;

  @TempDir
  Path dir;

  @Test
  void proxiesToServersOfAnAgentWithoutIsolation() throws Exception {
    Path ws = dir.resolve("ws");
    try (LaunchedAgent agent = LaunchedAgent.start(List.of(), Map.of(), dir.resolve("agent.log"),
        "--workspace", ws.toString())) {
      keyCases(agent, ws);
      authAndErrors(agent, ws);
    }
  }

  @Test
  void proxiesIntoTheSandboxNetworkOfAnIsolatedAgentThroughItsRelay() throws Exception {
    Path ws = dir.resolve("ws");
    try (LaunchedAgent agent = LaunchedAgent.start(List.of(), Map.of(), dir.resolve("agent.log"),
        "--workspace", ws.toString(), "--isolation", "bwrap")) {
      assertThat(agent.ok("GET", "/api/version", null).path("isolation").path("network").asBoolean(true)).isFalse();
      keyCases(agent, ws);
      // The relay is replaced when it dies (only a host process could kill it).
      ProcessHandle relay = relayOf(agent.pid).orElseThrow();
      relay.destroyForcibly();
      assertThat(relay.onExit().get(10, TimeUnit.SECONDS).isAlive()).isFalse();
      int port = startServer(agent, ws, "again");
      agent.ok("POST", "/api/expose-port", "{\"port\":" + port + "}");
      HttpResponse<String> again = send(agent, agent.request(proxy(port, "/after-restart")).GET());
      assertThat(again.statusCode()).as(again.body()).isEqualTo(200);
      ProcessHandle replaced = relayOf(agent.pid).orElseThrow();
      long relayPid = replaced.pid();
      assertThat(relayPid).isNotEqualTo(relay.pid());
      // The relay ends with the agent, even when the agent gets no chance to stop it.
      List<String> args = List.of(replaced.info().arguments().orElseThrow());
      Path scratch = Path.of(args.get(args.size() - 1)).getParent();
      agent.process.destroyForcibly();
      assertThat(agent.process.waitFor(10, TimeUnit.SECONDS)).isTrue();
      assertThat(ChildAgent.await(10_000, () -> ProcessHandle.of(relayPid).map(p -> !p.isAlive()).orElse(true)))
          .as("relay %d ended with its SIGKILLed agent", relayPid).isTrue();
      Trees.deleteQuietly(scratch); // the agent could not remove its directory itself
    }
  }

  /**
   * The same for an agent that is not root: the relay then enters the user namespace that comes
   * with the holder (nsenter --user --preserve-credentials) and still binds its socket in the
   * agent's private directory.
   */
  @Test
  void anUnprivilegedIsolatedAgentProxiesThroughItsRelayToo() throws Exception {
    org.junit.jupiter.api.Assumptions.assumeTrue("root".equals(System.getProperty("user.name")),
        "runs the agent as nobody through setpriv, which needs root");
    try (LaunchedAgent agent = LaunchedAgent.startAsNobody(dir, "--isolation", "bwrap")) {
      keyCases(agent, dir.resolve("nobody-ws"));
      assertThat(relayOf(agent.pid).orElseThrow().info().user()).hasValue("nobody");
    }
  }

  /** The relay: the agent's child whose command line names RelayMain. */
  static Optional<ProcessHandle> relayOf(long agentPid) {
    return ProcessHandle.of(agentPid).orElseThrow().children()
        .filter(p -> p.info().arguments().map(a -> List.of(a).contains("dev.sandboxsdk.agent.process.RelayMain"))
            .orElse(false))
        .findFirst();
  }

  private static void keyCases(LaunchedAgent agent, Path ws) throws Exception {
    // A binary file from python's own file server, byte for byte.
    byte[] blob = new byte[300_000];
    new Random(42).nextBytes(blob);
    Files.createDirectories(ws);
    Files.write(ws.resolve("blob.bin"), blob);
    int files = PortWatchIT.freePort();
    PortWatchIT.startServer(agent, "files", files, 0);
    awaitListening(agent, files);
    JsonNode exposed = agent.ok("POST", "/api/expose-port", "{\"port\":" + files + ",\"name\":\"files\"}");
    assertThat(exposed.path("port").asInt()).isEqualTo(files);
    assertThat(exposed.path("name").asText()).isEqualTo("files");
    assertThat(exposed.path("url").asText()).startsWith(agent.url + "/proxy/" + files + "/?sandbox-preview-token=");
    HttpResponse<byte[]> got = agent.http.send(agent.request(proxy(files, "/blob.bin")).GET().build(),
        HttpResponse.BodyHandlers.ofByteArray());
    assertThat(got.statusCode()).isEqualTo(200);
    assertThat(got.body()).isEqualTo(blob);
    assertThat(got.headers().firstValue("Content-Length")).hasValue("300000");
    // The server's redirect to an absolute path (a directory without its slash) stays below the prefix.
    Files.createDirectories(ws.resolve("sub"));
    HttpResponse<String> moved = send(agent, agent.request(proxy(files, "/sub?x=1")).GET());
    assertThat(moved.statusCode()).isEqualTo(301);
    assertThat(moved.headers().firstValue("Location")).hasValue("/proxy/" + files + "/sub/?x=1");

    int port = startServer(agent, ws, "app");
    agent.ok("POST", "/api/expose-port", "{\"port\":" + port + "}");
    // Request bodies go up as they were framed: with a length, or chunked.
    byte[] upload = new byte[1_000_000];
    new Random(7).nextBytes(upload);
    String sha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(upload));
    JsonNode fixed = json(send(agent, agent.request(proxy(port, "/echo")).header("Cookie", "app=1; sandbox-preview-x=y")
        .POST(HttpRequest.BodyPublishers.ofByteArray(upload))));
    assertThat(fixed.path("length").asInt()).isEqualTo(upload.length);
    assertThat(fixed.path("sha256").asText()).isEqualTo(sha);
    assertThat(fixed.path("chunked").asBoolean()).isFalse();
    JsonNode headers = fixed.path("headers");
    assertThat(headers.has("Authorization")).as("the agent's token stays with the agent: %s", headers).isFalse();
    assertThat(headers.path("Cookie").asText()).isEqualTo("app=1");
    assertThat(headers.path("X-Forwarded-For").asText()).isEqualTo("127.0.0.1");
    assertThat(headers.path("X-Forwarded-Proto").asText()).isEqualTo("http");
    assertThat(headers.path("X-Forwarded-Host").asText()).isEqualTo(agent.url.getAuthority());
    assertThat(headers.path("X-Forwarded-Prefix").asText()).isEqualTo("/proxy/" + port);
    assertThat(headers.path("Host").asText()).isEqualTo("localhost:" + port);
    JsonNode chunked = json(send(agent, agent.request(proxy(port, "/echo")).POST(HttpRequest.BodyPublishers.ofInputStream(
        () -> new java.io.ByteArrayInputStream(upload)))));
    assertThat(chunked.path("chunked").asBoolean()).isTrue();
    assertThat(chunked.path("sha256").asText()).isEqualTo(sha);
    // Path and query arrive as sent; the server's own headers come back.
    HttpResponse<String> echo = send(agent, agent.request(proxy(port, "/a/b%20c?x=1&y=%2F")).GET());
    assertThat(json(echo).path("path").asText()).isEqualTo("/a/b%20c?x=1&y=%2F");
    assertThat(echo.headers().firstValue("Set-Cookie")).hasValue("app=1; Path=/");

    // Server-sent events: the first event arrives while the server still waits to send the second.
    HttpResponse<InputStream> sse = agent.http.send(agent.request(proxy(port, "/sse")).GET().build(),
        HttpResponse.BodyHandlers.ofInputStream());
    try (SseReader events = new SseReader(sse)) {
      assertThat(sse.headers().firstValue("Content-Type")).hasValue("text/event-stream");
      assertThat(events.next().path("n").asInt()).isEqualTo(1);
      Files.writeString(ws.resolve("go"), "go");
      assertThat(events.next().path("n").asInt()).isEqualTo(2);
      assertThat(events.next()).isNull();
    } finally {
      Files.deleteIfExists(ws.resolve("go"));
    }
  }

  private static void authAndErrors(LaunchedAgent agent, Path ws) throws Exception {
    int port = startServer(agent, ws, "auth");
    JsonNode exposed = agent.ok("POST", "/api/expose-port", "{\"port\":" + port + "}");
    URI preview = URI.create(exposed.path("url").asText());
    String token = preview.getQuery().substring("sandbox-preview-token=".length());

    // Listed, and a second expose is refused as Cloudflare refuses it.
    JsonNode listed = agent.ok("GET", "/api/exposed-ports", null);
    assertThat(listed.path("ports").findValuesAsText("port")).contains(Integer.toString(port));
    TestAgent.Response twice = agent.call("POST", "/api/expose-port", "{\"port\":" + port + "}");
    assertThat(twice.status()).isEqualTo(409);
    assertThat(twice.body().path("code").asText()).isEqualTo("PORT_ALREADY_EXPOSED");

    // Without the bearer token: nothing, a wrong token, then the preview URL's exchange.
    HttpRequest.Builder anonymous = HttpRequest.newBuilder(agent.url.resolve(proxy(port, "/page"))).timeout(Duration.ofSeconds(30));
    assertThat(send(agent, anonymous.copy().GET()).statusCode()).isEqualTo(401);
    HttpResponse<String> wrong = send(agent, HttpRequest.newBuilder(agent.url.resolve(proxy(port, "/page?sandbox-preview-token=nope")))
        .GET());
    assertThat(wrong.statusCode()).isEqualTo(401);
    assertThat(TestAgent.JSON.readTree(wrong.body()).path("code").asText()).isEqualTo("UNAUTHORIZED");
    HttpResponse<String> exchange = send(agent, HttpRequest.newBuilder(preview.resolve("page?q=1&sandbox-preview-token="
        + token)).GET());
    assertThat(exchange.statusCode()).isEqualTo(302);
    assertThat(exchange.headers().firstValue("Location")).hasValue("/proxy/" + port + "/page?q=1");
    String cookie = exchange.headers().firstValue("Set-Cookie").orElseThrow();
    assertThat(cookie).contains("Path=/proxy/" + port + "/", "HttpOnly", "SameSite=Strict").doesNotContain("Expires");
    String pair = cookie.substring(0, cookie.indexOf(';'));
    HttpResponse<String> withCookie = send(agent, anonymous.copy().header("Cookie", pair).GET());
    assertThat(withCookie.statusCode()).isEqualTo(200);
    assertThat(json(withCookie).path("headers").has("Cookie")).as("the preview cookie stays with the agent").isFalse();
    // A navigation that started on another site gets a page that moves on by itself instead.
    HttpResponse<String> crossSite = send(agent, HttpRequest.newBuilder(preview).header("Sec-Fetch-Site", "cross-site").GET());
    assertThat(crossSite.statusCode()).isEqualTo(200);
    assertThat(crossSite.body()).contains("http-equiv=\"refresh\"", "url=/proxy/" + port + "/\"");
    assertThat(crossSite.headers().firstValue("Set-Cookie")).isPresent();

    // Unexposing revokes URL and cookie; exposing again makes a new token.
    agent.ok("DELETE", "/api/exposed-ports/" + port, null);
    HttpResponse<String> gone = send(agent, anonymous.copy().header("Cookie", pair).GET());
    assertThat(gone.statusCode()).isEqualTo(404);
    assertThat(TestAgent.JSON.readTree(gone.body()).path("code").asText()).isEqualTo("PORT_NOT_EXPOSED");
    assertThat(send(agent, agent.request(proxy(port, "/page")).GET()).statusCode()).isEqualTo(404);
    TestAgent.Response unexposeAgain = agent.call("DELETE", "/api/exposed-ports/" + port, null);
    assertThat(unexposeAgain.status()).isEqualTo(404);
    assertThat(unexposeAgain.body().path("code").asText()).isEqualTo("PORT_NOT_EXPOSED");
    agent.ok("POST", "/api/expose-port", "{\"port\":" + port + "}");
    assertThat(send(agent, anonymous.copy().header("Cookie", pair).GET()).statusCode()).isEqualTo(401);
    assertThat(send(agent, HttpRequest.newBuilder(preview).GET()).statusCode()).isEqualTo(401);

    // Bad ports, nothing listening, a trailing slash added.
    for (String bad : List.of("0", "65536", "-1", "x", "99999999999")) {
      HttpResponse<String> r = send(agent, agent.request("/proxy/" + bad + "/").GET());
      assertThat(r.statusCode()).as(bad).isEqualTo(400);
      assertThat(TestAgent.JSON.readTree(r.body()).path("code").asText()).isEqualTo("INVALID_PORT_NUMBER");
      TestAgent.Response e = agent.call("POST", "/api/expose-port", "{\"port\":" + (bad.equals("x") ? "\"x\"" : bad) + "}");
      assertThat(e.status()).as(bad).isEqualTo(400);
    }
    TestAgent.Response own = agent.call("POST", "/api/expose-port", "{\"port\":" + agent.url.getPort() + "}");
    assertThat(own.status()).isEqualTo(400);
    assertThat(own.body().path("code").asText()).isEqualTo("INVALID_PORT_NUMBER");
    int unused = PortWatchIT.freePort();
    agent.ok("POST", "/api/expose-port", "{\"port\":" + unused + "}");
    HttpResponse<String> nobody = send(agent, agent.request(proxy(unused, "/")).GET());
    assertThat(nobody.statusCode()).isEqualTo(502);
    assertThat(TestAgent.JSON.readTree(nobody.body()).path("code").asText()).isEqualTo("SERVICE_NOT_RESPONDING");
    HttpResponse<String> noSlash = send(agent, agent.request("/proxy/" + port + "?a=1").GET());
    assertThat(noSlash.statusCode()).isEqualTo(308);
    assertThat(noSlash.headers().firstValue("Location")).hasValue("/proxy/" + port + "/?a=1");
  }

  @Test
  void aServerThatStallsGetsATimeoutAndClientsThatHangUpReleaseTheirServerConnections() throws Exception {
    for (String isolation : List.of("none", "bwrap")) {
      try (ChildAgent agent = ChildAgent.start(List.of(), "--proxy-timeout-ms", "1000", "--isolation", isolation)) {
        int port = serveAndExpose(agent);

        String stalled = agent.call(ChildAgent.request("GET", "/proxy/" + port + "/stall", null), 30_000);
        assertThat(stalled).as(isolation).startsWith("HTTP/1.1 504").contains("\"UPSTREAM_TIMEOUT\"");

        int baseFds = agent.fds();
        int baseThreads = agent.connectionThreads();
        int rounds = 5;
        for (int i = 0; i < rounds; i++) {
          try (Socket s = agent.connect()) {
            s.setSoTimeout(10_000);
            s.getOutputStream().write(ChildAgent.request("GET", "/proxy/" + port + "/forever", null)
                .getBytes(StandardCharsets.UTF_8));
            InputStream in = s.getInputStream();
            StringBuilder seen = new StringBuilder();
            while (!seen.toString().contains("tick")) {
              int c = in.read();
              assertThat(c).as("the stream ended early: %s", seen).isNotNegative();
              seen.append((char) c);
            }
          }
        }
        Path closed = agent.dir.resolve("ws").resolve("closed.log");
        assertThat(ChildAgent.await(20_000, () -> {
          try {
            return Files.exists(closed) && Files.readAllLines(closed).size() == rounds;
          } catch (IOException e) {
            return false;
          }
        })).as("%s: the server saw each of its %d connections closed", isolation, rounds).isTrue();
        assertThat(ChildAgent.await(20_000, () -> agent.fds() <= baseFds + HostileClientsIT.SLACK
            && agent.connectionThreads() <= baseThreads + HostileClientsIT.SLACK))
            .as("%s: fds %d (base %d), threads %s (base %d)", isolation, agent.fds(), baseFds, agent.threadNames(),
                baseThreads).isTrue();
      }
    }
  }

  /**
   * Starts the test server in a child agent's workspace, exposes its port and waits until it
   * answers through the proxy; returns the port.
   */
  static int serveAndExpose(ChildAgent agent) throws Exception {
    Files.writeString(agent.dir.resolve("ws").resolve("server.py"), SERVER);
    int port = PortWatchIT.freePort();
    agent.call("POST", "/api/process/start", "{\"command\":\"exec python3 server.py " + port + "\"}");
    agent.call("POST", "/api/expose-port", "{\"port\":" + port + "}");
    assertThat(ChildAgent.await(20_000, () -> {
      try {
        return agent.call(ChildAgent.request("GET", "/proxy/" + port + "/warm", null), 10_000).startsWith("HTTP/1.1 200");
      } catch (IOException e) {
        return false;
      }
    })).as("the server answers through the proxy").isTrue();
    return port;
  }

  /** Writes the test server into the workspace and starts it; returns its port once it listens. */
  static int startServer(LaunchedAgent agent, Path ws, String id) throws Exception {
    Files.createDirectories(ws);
    Files.writeString(ws.resolve("server.py"), SERVER);
    int port = PortWatchIT.freePort();
    agent.ok("POST", "/api/process/start", "{\"command\":\"exec python3 server.py " + port + "\",\"processId\":\"" + id + "\"}");
    awaitListening(agent, port);
    return port;
  }

  static void awaitListening(LaunchedAgent agent, int port) {
    List<JsonNode> ready = PortWatchIT.watch(agent, "{\"port\":" + port + ",\"mode\":\"tcp\",\"interval\":100,\"timeoutMs\":30000}");
    assertThat(PortWatchIT.types(ready)).as("%s", ready).containsExactly("watching", "ready");
  }

  static String proxy(int port, String pathAndQuery) {
    return "/proxy/" + port + pathAndQuery;
  }

  static HttpResponse<String> send(LaunchedAgent agent, HttpRequest.Builder request) throws Exception {
    return agent.http.send(request.timeout(Duration.ofSeconds(60)).build(), HttpResponse.BodyHandlers.ofString());
  }

  static JsonNode json(HttpResponse<String> r) throws IOException {
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return TestAgent.JSON.readTree(r.body());
  }
}
