package dev.sandboxsdk.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.PortWaitOptions;
import dev.sandboxsdk.ProcessExitedException;
import dev.sandboxsdk.ProcessInfo;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxTimeoutException;
import java.util.Map;
import java.util.Set;

/**
 * {@code waitForPort} of a {@link RealSandbox} and its processes, over the agent's
 * {@code POST /api/port-watch} event stream: the agent runs the checks from inside the sandbox's
 * network and ends the stream with {@code ready}, {@code process_exited} or {@code error}.
 * Stateless and thread-safe.
 */
final class PortWatch {
  private static final Set<String> FINAL = Set.of("ready", "process_exited", "error");

  private final RealSandbox sandbox;

  PortWatch(RealSandbox sandbox) {
    this.sandbox = sandbox;
  }

  /**
   * Waits for the port; with a {@code processId}, fails as soon as that process ends.
   *
   * @throws ProcessExitedException if the process ended first
   */
  void await(int port, PortWaitOptions options, String processId) {
    if (port < 1 || port > 65535) {
      throw new IllegalArgumentException("port must be 1-65535: " + port);
    }
    java.util.Objects.requireNonNull(options, "options == null");
    String what = "waitForPort " + port + (processId != null ? " of process " + processId : "");
    EventCursor<JsonNode> cursor = new InterruptibleCursor<>(sandbox.openStream(
        sandbox.post(sandbox.url("api", "port-watch"), body(port, options, processId)), what, e -> e,
        e -> FINAL.contains(e.path("type").asText()), new Abort()), sandbox.executor());
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
      info = sandbox.processInfo(processId);
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
