package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.ExposedPort;
import dev.sandboxsdk.PortWaitOptions;
import dev.sandboxsdk.ProcessExitedException;
import dev.sandboxsdk.SandboxInvalidRequestException;
import dev.sandboxsdk.SandboxTimeoutException;
import java.time.Duration;
import java.util.Map;

/**
 * The port tool group: {@code waitForPort}, {@code exposePort}, {@code unexposePort},
 * {@code listExposedPorts}. A preview URL carries its own token (a capability for that one
 * port, revoked by unexposePort), never the agent's token. Thread-safe.
 */
final class PortTools implements ToolGroup {
  static final Duration DEFAULT_WAIT = Duration.ofSeconds(60);

  private final Sandboxes sandboxes;

  PortTools(Sandboxes sandboxes) {
    this.sandboxes = sandboxes;
  }

  @Override
  public void register(Map<String, ToolHandler> tools) {
    tools.put("waitForPort", ToolHandler.blocking(this::waitForPort));
    tools.put("exposePort", ToolHandler.blocking(this::exposePort));
    tools.put("unexposePort", ToolHandler.blocking(this::unexposePort));
    tools.put("listExposedPorts", ToolHandler.blocking(this::listExposedPorts));
  }

  ToolOutcome waitForPort(ObjectNode args, CallContext ctx) {
    Sandboxes.Entry sb = sandboxes.require(SandboxTools.sandboxId(args));
    int port = args.get("port").asInt();
    boolean tcp = "tcp".equals(args.path("mode").asText("http"));
    PortWaitOptions.Builder options = PortWaitOptions.builder()
        .mode(tcp ? PortWaitOptions.Mode.TCP : PortWaitOptions.Mode.HTTP)
        .timeout(SandboxTools.seconds(args, "timeoutSeconds", DEFAULT_WAIT));
    if (!tcp) {
      options.path(args.path("path").asText("/"))
          .status(args.path("statusMin").asInt(200), args.path("statusMax").asInt(399));
    } else if (args.hasNonNull("path") || args.hasNonNull("statusMin") || args.hasNonNull("statusMax")) {
      throw new ToolException("path, statusMin and statusMax apply to mode \"http\" only.");
    }
    long started = System.nanoTime();
    String processId = args.hasNonNull("processId") ? args.get("processId").asText() : null;
    try {
      ctx.interruptibly(() -> { // a cancelled wait ends now, not at its timeout
        if (processId != null) {
          sb.sandbox().attachProcess(processId).waitForPort(port, options.build());
        } else {
          sb.sandbox().ports().waitFor(port, options.build());
        }
        return null;
      });
    } catch (ProcessExitedException e) {
      throw new ToolException(e.getMessage() + ". getProcessLogs with processId '" + processId
          + "' shows why it ended.");
    } catch (SandboxTimeoutException e) {
      throw new ToolException(e.getMessage() + ". If the server is still starting, call waitForPort again;"
          + " otherwise check its output with getProcessLogs.");
    }
    return ToolOutcome.ok(Json.object().put("port", port).put("ready", true).put("mode", tcp ? "tcp" : "http")
        .put("waitedMs", (System.nanoTime() - started) / 1_000_000).put("sandboxId", sb.id()));
  }

  ToolOutcome exposePort(ObjectNode args) {
    Sandboxes.Entry sb = sandboxes.require(SandboxTools.sandboxId(args));
    int port = args.get("port").asInt();
    ExposedPort e;
    try {
      e = sb.sandbox().ports().expose(port, args.hasNonNull("name") ? args.get("name").asText() : null);
    } catch (SandboxInvalidRequestException ex) {
      if ("PORT_ALREADY_EXPOSED".equals(ex.code())) {
        throw new ToolException("Port " + port + " is exposed already: listExposedPorts shows its URL.");
      }
      throw ex;
    }
    return ToolOutcome.ok(SandboxTools.withSandbox(json(e), sb));
  }

  ToolOutcome unexposePort(ObjectNode args) {
    Sandboxes.Entry sb = sandboxes.require(SandboxTools.sandboxId(args));
    int port = args.get("port").asInt();
    sb.sandbox().ports().unexpose(port);
    return ToolOutcome.ok(SandboxTools.withSandbox(Json.object().put("port", port).put("exposed", false), sb));
  }

  ToolOutcome listExposedPorts(ObjectNode args) {
    Sandboxes.Entry sb = sandboxes.require(SandboxTools.sandboxId(args));
    ArrayNode ports = Json.array();
    sb.sandbox().ports().exposed().forEach(e -> ports.add(json(e)));
    ObjectNode r = Json.object().put("count", ports.size());
    r.set("ports", ports);
    return ToolOutcome.ok(SandboxTools.withSandbox(r, sb));
  }

  private static ObjectNode json(ExposedPort e) {
    return Json.object().put("port", e.port()).put("url", e.url().toString()).put("name", e.name())
        .put("exposedAt", e.exposedAt() == null ? null : e.exposedAt().toString());
  }
}
