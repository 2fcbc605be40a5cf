package dev.sandboxsdk.mcp.internal;

import dev.sandboxsdk.ExposedPort;
import dev.sandboxsdk.PortWaitOptions;
import dev.sandboxsdk.ProcessExitedException;
import dev.sandboxsdk.SandboxInvalidRequestException;
import dev.sandboxsdk.SandboxTimeoutException;
import java.time.Duration;
import java.util.List;
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
    tools.put("waitForPort", ToolHandler.blocking(PortArgs.WaitFor.class, this::waitForPort));
    tools.put("exposePort", ToolHandler.blocking(PortArgs.Expose.class, this::exposePort));
    tools.put("unexposePort", ToolHandler.blocking(PortArgs.Unexpose.class, this::unexposePort));
    tools.put("listExposedPorts", ToolHandler.blocking(PortArgs.Listing.class, this::listExposedPorts));
  }

  // ---- results, in the order their fields are written

  record Ready(int port, boolean ready, String mode, long waitedMs, String sandboxId) {
  }

  /** An exposed port as listExposedPorts lists it. */
  record Port(int port, String url, String name, String exposedAt) {
    static Port of(ExposedPort e) {
      return new Port(e.port(), e.url().toString(), e.name(), e.exposedAt() == null ? null : e.exposedAt().toString());
    }
  }

  record Exposed(int port, String url, String name, String exposedAt, String sandboxId) {
  }

  record Unexposed(int port, boolean exposed, String sandboxId) {
  }

  record Listed(int count, List<Port> ports, String sandboxId) {
  }

  ToolOutcome waitForPort(PortArgs.WaitFor args, CallContext ctx) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    int port = args.port();
    boolean tcp = "tcp".equals(args.mode());
    PortWaitOptions.Builder options = PortWaitOptions.builder()
        .mode(tcp ? PortWaitOptions.Mode.TCP : PortWaitOptions.Mode.HTTP)
        .timeout(SandboxTools.seconds(args.timeoutSeconds(), DEFAULT_WAIT));
    if (!tcp) {
      options.path(args.path() != null ? args.path() : "/")
          .status(args.statusMin() != null ? args.statusMin() : 200, args.statusMax() != null ? args.statusMax() : 399);
    } else if (args.path() != null || args.statusMin() != null || args.statusMax() != null) {
      throw new ToolException("path, statusMin and statusMax apply to mode \"http\" only.");
    }
    long started = System.nanoTime();
    String processId = args.processId();
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
    return ToolOutcome.ok(SandboxTools.json(new Ready(port, true, tcp ? "tcp" : "http",
        (System.nanoTime() - started) / 1_000_000, sb.id())));
  }

  ToolOutcome exposePort(PortArgs.Expose args) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    int port = args.port();
    ExposedPort e;
    try {
      e = sb.sandbox().ports().expose(port, args.name());
    } catch (SandboxInvalidRequestException ex) {
      if ("PORT_ALREADY_EXPOSED".equals(ex.code())) {
        throw new ToolException("Port " + port + " is exposed already: listExposedPorts shows its URL.");
      }
      throw ex;
    }
    Port p = Port.of(e);
    return ToolOutcome.ok(SandboxTools.json(new Exposed(p.port(), p.url(), p.name(), p.exposedAt(), sb.id())));
  }

  ToolOutcome unexposePort(PortArgs.Unexpose args) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    int port = args.port();
    sb.sandbox().ports().unexpose(port);
    return ToolOutcome.ok(SandboxTools.json(new Unexposed(port, false, sb.id())));
  }

  ToolOutcome listExposedPorts(PortArgs.Listing args) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    List<Port> ports = sb.sandbox().ports().exposed().stream().map(Port::of).toList();
    return ToolOutcome.ok(SandboxTools.json(new Listed(ports.size(), ports, sb.id())));
  }
}
