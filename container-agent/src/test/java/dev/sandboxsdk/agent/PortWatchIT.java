package dev.sandboxsdk.agent;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.assertj.core.api.Assertions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * POST /api/port-watch on the packaged agent, with real servers started as background processes:
 * without isolation (the agent connects itself) and with {@code --isolation bwrap} and no network,
 * where the servers listen in the sandbox's own network namespace and only a check run inside it
 * can see them.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class PortWatchIT {
  @TempDir
  Path dir;

  @Test
  void watchesPortsWithoutIsolation() throws Exception {
    try (LaunchedAgent agent = LaunchedAgent.start(List.of(), Map.of(), dir.resolve("agent.log"),
        "--workspace", dir.resolve("ws").toString())) {
      keyCases(agent, false);
    }
  }

  @Test
  void watchesPortsInsideTheSandboxNetworkOfAnIsolatedAgent() throws Exception {
    try (LaunchedAgent agent = LaunchedAgent.start(List.of(), Map.of(), dir.resolve("agent.log"),
        "--workspace", dir.resolve("ws").toString(), "--isolation", "bwrap")) {
      assertThat(agent.ok("GET", "/api/version", null).path("isolation").path("network").asBoolean(true)).isFalse();
      keyCases(agent, true);
    }
  }

  private static void keyCases(LaunchedAgent agent, boolean isolated) throws Exception {
    // tcp: a server that starts listening after a delay.
    int port = freePort();
    startServer(agent, "tcp-server", port, 1);
    List<JsonNode> tcp = watch(agent, "{\"port\":" + port + ",\"mode\":\"tcp\",\"processId\":\"tcp-server\",\"interval\":200,"
        + "\"timeoutMs\":30000}");
    assertThat(types(tcp)).as("%s", tcp).containsExactly("watching", "ready");
    assertThat(tcp.get(1).path("port").asInt()).isEqualTo(port);
    assertThat(tcp.get(1).has("statusCode")).isFalse();
    // What Cloudflare's waitForPort sends for tcp: path and status range too, which tcp ignores (a 404
    // path and a range without 200 would fail an http check of this server).
    List<JsonNode> tcpAsCloudflare = watch(agent, "{\"port\":" + port + ",\"mode\":\"tcp\",\"path\":\"/no-such-file\","
        + "\"statusMin\":500,\"statusMax\":599,\"interval\":500,\"timeoutMs\":30000}");
    assertThat(types(tcpAsCloudflare)).as("%s", tcpAsCloudflare).containsExactly("watching", "ready");
    assertThat(tcpAsCloudflare.get(1).has("statusCode")).isFalse();
    if (isolated) {
      // The server is in the sandbox's network namespace: the host (like the agent's JVM) cannot reach it.
      Assertions.assertThatThrownBy(() -> {
        try (Socket s = new Socket()) {
          s.connect(new InetSocketAddress("127.0.0.1", port), 1000);
        }
      }).isInstanceOf(ConnectException.class);
    }

    // http: the default range, a path outside it, and a range that includes its status.
    List<JsonNode> http = watch(agent, "{\"port\":" + port + ",\"mode\":\"http\",\"path\":\"/\"}");
    assertThat(types(http)).as("%s", http).containsExactly("watching", "ready");
    assertThat(http.get(1).path("statusCode").asInt()).isEqualTo(200);
    List<JsonNode> missing = watch(agent, "{\"port\":" + port + ",\"path\":\"no-such-file\",\"interval\":100,\"timeoutMs\":1500}");
    assertThat(types(missing)).as("%s", missing).containsExactly("watching", "error");
    assertThat(missing.get(1).path("code").asText()).isEqualTo("TIMEOUT");
    assertThat(missing.get(1).path("error").asText()).contains("HTTP status 404 not in expected range 200-399");
    List<JsonNode> in404 = watch(agent, "{\"port\":" + port + ",\"path\":\"/no-such-file\",\"statusMin\":404,\"statusMax\":404}");
    assertThat(types(in404)).as("%s", in404).containsExactly("watching", "ready");
    assertThat(in404.get(1).path("statusCode").asInt()).isEqualTo(404);

    // A process that exits before it listens ends the watch at once, with its exit code.
    int unused = freePort();
    agent.ok("POST", "/api/process/start", "{\"command\":\"sleep 0.5; exit 3\",\"processId\":\"quitter\"}");
    long t0 = System.nanoTime();
    List<JsonNode> exited = watch(agent, "{\"port\":" + unused + ",\"mode\":\"tcp\",\"processId\":\"quitter\",\"interval\":5000}");
    assertThat(types(exited)).as("%s", exited).containsExactly("watching", "process_exited");
    assertThat(exited.get(1).path("exitCode").asInt()).isEqualTo(3);
    assertThat(exited.get(1).path("processId").asText()).isEqualTo("quitter");
    assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0)).as("not held up by the 5 s interval").isLessThan(4000);

    // Nothing ever listens: the timeout ends the watch with an error.
    t0 = System.nanoTime();
    List<JsonNode> timeout = watch(agent, "{\"port\":" + unused + ",\"mode\":\"tcp\",\"timeoutMs\":1000,\"interval\":100}");
    assertThat(types(timeout)).as("%s", timeout).containsExactly("watching", "error");
    assertThat(timeout.get(1).path("code").asText()).isEqualTo("TIMEOUT");
    assertThat(timeout.get(1).path("error").asText()).contains("not ready within 1000 ms");
    assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0)).isBetween(900L, 8000L);
    agent.ok("DELETE", "/api/process/kill-all", null);
  }

  @Test
  void invalidRequestsAreRejectedWithAJsonErrorBeforeTheStream() throws Exception {
    try (LaunchedAgent agent = LaunchedAgent.start(List.of(), Map.of(), dir.resolve("agent.log"),
        "--workspace", dir.resolve("ws").toString())) {
      for (String body : List.of("{\"port\":0}", "{\"port\":70000}", "{\"port\":-1}", "{\"port\":8080,\"interval\":-1}",
          "{}", "{\"port\":\"8080\"}", "{\"port\":8080,\"mode\":\"udp\"}", "{\"port\":8080,\"path\":\"/a b\"}",
          "{\"port\":8080,\"path\":\"/a\\r\\nX: y\"}", "{\"port\":8080,\"mode\":\"tcp\",\"path\":\"/a b\"}",
          "{\"port\":8080,\"statusMin\":500,\"statusMax\":200}", "{\"port\":8080,\"statusMin\":99}",
          "{\"port\":8080,\"timeoutMs\":0}", "{\"port\":8080,\"prot\":1}")) {
        TestAgent.Response r = agent.call("POST", "/api/port-watch", body);
        assertThat(r.status()).as("%s -> %s", body, r.body()).isEqualTo(400);
        assertThat(r.body().path("code").asText()).isEqualTo("VALIDATION_FAILED");
      }
      TestAgent.Response unknown = agent.call("POST", "/api/port-watch", "{\"port\":8080,\"processId\":\"nobody\"}");
      assertThat(unknown.status()).as("%s", unknown.body()).isEqualTo(404);
      assertThat(unknown.body().path("code").asText()).isEqualTo("PROCESS_NOT_FOUND");
      assertThat(agent.call("GET", "/api/port-watch", null).status()).isEqualTo(405);
    }
  }

  /** A background HTTP server on {@code port} in the workspace, listening after {@code delay} seconds. */
  static void startServer(LaunchedAgent agent, String id, int port, int delay) {
    agent.ok("POST", "/api/process/start", "{\"command\":\"sleep " + delay + "; exec python3 -m http.server " + port
        + " --bind 127.0.0.1\",\"processId\":\"" + id + "\"}");
  }

  static List<JsonNode> watch(LaunchedAgent agent, String body) {
    try (SseReader sse = agent.stream("/api/port-watch", body)) {
      assertThat(sse.status()).as("%s", body).isEqualTo(200);
      return sse.rest();
    }
  }

  static List<String> types(List<JsonNode> events) {
    List<String> types = new ArrayList<>();
    for (JsonNode e : events) {
      types.add(e.path("type").asText());
    }
    return types;
  }

  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }
}
