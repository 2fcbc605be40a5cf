package dev.sandboxsdk.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.ExposedPort;
import dev.sandboxsdk.SandboxNotFoundException;
import java.net.URI;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import okhttp3.HttpUrl;

/**
 * The port methods of a {@link RealSandbox}: {@code POST /api/expose-port},
 * {@code GET /api/exposed-ports} and {@code DELETE /api/exposed-ports/{port}}. Preview URLs are
 * built on the address this client uses for the agent (with any path prefix it has), so they
 * work wherever the client reaches the agent, e.g. a container's host-published port. Uses the
 * sandbox's client, token and error mapping. Thread-safe: it has no mutable state.
 */
final class RealPorts {
  private final RealSandbox sandbox;

  RealPorts(RealSandbox sandbox) {
    this.sandbox = sandbox;
  }

  ExposedPort expose(int port, String name) {
    checkPort(port);
    if (name != null && (name.isEmpty() || name.length() > 128 || name.chars().anyMatch(Character::isISOControl))) {
      throw new IllegalArgumentException("name must be 1 to 128 characters without control characters");
    }
    ObjectNode body = Wire.MAPPER.createObjectNode().put("port", port);
    if (name != null) {
      body.put("name", name);
    }
    JsonNode n = sandbox.call(sandbox.post(sandbox.url("api", "expose-port"), body), "exposePort " + port);
    return exposed(n);
  }

  void unexpose(int port) {
    checkPort(port);
    try {
      sandbox.call(sandbox.delete(sandbox.url("api", "exposed-ports", Integer.toString(port))), "unexposePort " + port);
    } catch (SandboxNotFoundException e) {
      if (!"PORT_NOT_EXPOSED".equals(e.code())) {
        throw e;
      }
      // Idempotent, as Cloudflare's SDK is: the port is not exposed either way.
    }
  }

  List<ExposedPort> list() {
    JsonNode n = sandbox.call(sandbox.get(sandbox.url("api", "exposed-ports")), "exposedPorts");
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
    HttpUrl url = sandbox.url("proxy", Integer.toString(port), "").newBuilder()
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
}
