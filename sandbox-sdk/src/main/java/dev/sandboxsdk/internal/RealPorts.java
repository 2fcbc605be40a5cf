package dev.sandboxsdk.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.ExposedPort;
import dev.sandboxsdk.PortWaitOptions;
import dev.sandboxsdk.ProcessExitedException;
import dev.sandboxsdk.ProcessInfo;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxNotFoundException;
import dev.sandboxsdk.SandboxPorts;
import dev.sandboxsdk.SandboxTimeoutException;
import java.net.URI;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import okhttp3.HttpUrl;

/**
 * The {@link SandboxPorts} of a {@link RealSandbox}: {@code waitFor} over the agent's
 * {@code POST /api/port-watch} event stream (the agent checks from inside the sandbox's network
 * and ends the stream with {@code ready}, {@code process_exited} or {@code error}), and
 * {@code POST /api/expose-port},
 * {@code GET /api/exposed-ports} and {@code DELETE /api/exposed-ports/{port}}. Preview URLs are
 * built on the address this client uses for the agent (with any path prefix it has), so they
 * work wherever the client reaches the agent, e.g. a container's host-published port. Uses the
 * sandbox's client, token and error mapping. Thread-safe: it has no mutable state.
 */
final class RealPorts implements SandboxPorts {
  private static final Set<String> WATCH_FINAL = Set.of("ready", "process_exited", "error");

  private final RealSandbox sandbox;
  private final AgentHttp http;

  RealPorts(RealSandbox sandbox) {
    this.sandbox = sandbox;
    this.http = sandbox.http;
  }

  @Override
  public ExposedPort expose(int port, String name) {
    checkPort(port);
    if (name != null && (name.isEmpty() || name.length() > 128 || name.chars().anyMatch(Character::isISOControl))) {
      throw new IllegalArgumentException("name must be 1 to 128 characters without control characters");
    }
    ObjectNode body = Wire.MAPPER.createObjectNode().put("port", port);
    if (name != null) {
      body.put("name", name);
    }
    JsonNode n = http.call(http.post(http.url("api", "expose-port"), body), "ports().expose " + port);
    return exposed(n);
  }

  @Override
  public void unexpose(int port) {
    checkPort(port);
    try {
      http.call(http.delete(http.url("api", "exposed-ports", Integer.toString(port))),
          "ports().unexpose " + port);
    } catch (SandboxNotFoundException e) {
      if (!"PORT_NOT_EXPOSED".equals(e.code())) {
        throw e;
      }
      // Idempotent, as Cloudflare's SDK is: the port is not exposed either way.
    }
  }

  @Override
  public List<ExposedPort> exposed() {
    JsonNode n = http.call(http.get(http.url("api", "exposed-ports")), "ports().exposed");
    List<ExposedPort> out = new ArrayList<>();
    for (JsonNode p : n.path("ports")) {
      out.add(exposed(p));
    }
    return out;
  }

  private ExposedPort exposed(JsonNode n) {
    if (!n.path("port").canConvertToInt() || !n.path("url").isTextual()) {
      throw Wire.malformed("exposed port", "expected 'port' and 'url', got " + n);
    }
    int port = n.path("port").intValue();
    // The agent names the address it was reached at; keep its path and token, use ours for the rest.
    HttpUrl agentUrl = HttpUrl.parse(n.path("url").asText());
    if (agentUrl == null) {
      throw Wire.malformed("exposed port", "'url' is not an http URL");
    }
    HttpUrl url = http.url("proxy", Integer.toString(port), "").newBuilder()
        .encodedQuery(agentUrl.encodedQuery()).build();
    String name = n.path("name").isTextual() ? n.path("name").asText() : null;
    Instant at = null;
    if (n.path("exposedAt").isTextual()) {
      try {
        at = Instant.parse(n.path("exposedAt").asText());
      } catch (DateTimeParseException e) {
        throw Wire.malformed("exposed port", "'exposedAt' is not an ISO-8601 instant");
      }
    }
    return new ExposedPort(port, URI.create(url.toString()), name, at);
  }

  private static void checkPort(int port) {
    if (port < 1 || port > 65535) {
      throw new IllegalArgumentException("port must be 1..65535: " + port);
    }
  }

  @Override
  public void waitFor(int port, PortWaitOptions options) {
    await(port, options, null);
  }

  /**
   * Waits for the port; with a {@code processId}, fails as soon as that process ends.
   *
   * @throws ProcessExitedException if the process ended first
   */
  void await(int port, PortWaitOptions options, String processId) {
    checkPort(port);
    Objects.requireNonNull(options, "options == null");
    String what = processId != null ? "waitForPort " + port + " of process " + processId : "ports().waitFor " + port;
    EventCursor<JsonNode> cursor = new InterruptibleCursor<>(sandbox.streams.openStream(
        http.post(http.url("api", "port-watch"), body(port, options, processId)), what, e -> e,
        e -> WATCH_FINAL.contains(e.path("type").asText()), new Abort()), http.executor());
    try (cursor) {
      JsonNode e;
      while ((e = cursor.next()) != null) {
        switch (e.path("type").asText()) {
          case "ready":
            return;
          case "process_exited":
            throw exited(e, port, processId);
          case "error":
            throw failed(e, port);
          default:
            // watching, or an event a newer agent added
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new SandboxException(what + ": interrupted", e);
    } catch (SandboxException | IllegalStateException e) {
      throw e;
    } catch (Exception e) {
      throw new SandboxException(what + ": " + e, e);
    }
    throw new SandboxException(what + ": the watch ended without an outcome", null);
  }

  private static ObjectNode body(int port, PortWaitOptions options, String processId) {
    ObjectNode body = Wire.MAPPER.createObjectNode().put("port", port);
    if (options.mode() == PortWaitOptions.Mode.TCP) {
      body.put("mode", "tcp");
    } else {
      body.put("mode", "http").put("path", options.path())
          .put("statusMin", options.statusMin()).put("statusMax", options.statusMax());
    }
    if (options.interval() != null) {
      body.put("interval", options.interval().toMillis());
    }
    if (options.timeout() != null) {
      body.put("timeoutMs", Math.max(1, options.timeout().toMillis()));
    }
    if (processId != null) {
      body.put("processId", processId);
    }
    return body;
  }

  private ProcessExitedException exited(JsonNode e, int port, String processId) {
    ProcessInfo info;
    try {
      info = sandbox.processes.processInfo(processId);
    } catch (SandboxException gone) {
      info = null; // autoCleanup may have dropped the record already
    }
    return new ProcessExitedException("process " + processId + " ended (" + e.path("status").asText("exited")
        + ", exit code " + e.path("exitCode").asText("?") + ") before port " + port + " was ready", info);
  }

  private static SandboxException failed(JsonNode e, int port) {
    String code = e.path("code").asText("INTERNAL_ERROR");
    String reason = e.path("error").asText("the watch failed");
    if (code.equals("TIMEOUT")) {
      return new SandboxTimeoutException(reason, null); // the agent's sentence names the port, time and last check
    }
    return ErrorMapper.create(code.equals("INTERNAL_ERROR") ? 500 : 0, code,
        "waitForPort " + port + ": " + reason + " (" + code + ")", Map.of("port", (long) port));
  }
}
