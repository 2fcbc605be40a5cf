package dev.sandboxsdk.bench.mcp;

import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.internal.AgentLauncher;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;

/**
 * The MCP layer by itself: an agent that the SDK and a stdio server (started with {@code
 * --agent-url}) both drive. With separate agents, as in the main comparison, the agents' own exec
 * times differ by about as much as the whole target (0.5 ms); here both paths end in one agent
 * process, so what differs is only what the MCP server and its pipes add. The agent is started
 * the way {@code LocalSandbox} starts one (same JVM flags, isolation and network defaults)
 * through the SDK's internal launcher, which hands out its token; the server reads the token
 * from a 0600 file.
 */
final class SharedAgent implements AutoCloseable {
  final AgentLauncher.Agent agent;
  final Sandbox sdk;
  final StdioServer stdio;

  private SharedAgent(AgentLauncher.Agent agent, Sandbox sdk, StdioServer stdio) {
    this.agent = agent;
    this.sdk = sdk;
    this.stdio = stdio;
  }

  static SharedAgent start() throws IOException {
    Path ws = Files.createTempDirectory(McpBench.tmp, "shared-agent-ws");
    AgentLauncher.Agent agent = AgentLauncher.start(null, null, ws, List.of(),
        List.of("--isolation", "auto", "--isolation-network", "off"), Duration.ofSeconds(60));
    try {
      Path tokenFile = McpBench.tmp.resolve("shared-agent.token");
      Files.writeString(tokenFile, agent.token());
      Files.setPosixFilePermissions(tokenFile, PosixFilePermissions.fromString("rw-------"));
      StdioServer stdio = StdioServer.start("--agent-url", agent.url().toString(),
          "--agent-token-file", tokenFile.toString());
      stdio.initialize();
      return new SharedAgent(agent, Sandbox.connect(agent.url(), agent.token()), stdio);
    } catch (IOException | RuntimeException e) {
      agent.stop(Duration.ofSeconds(10));
      throw e;
    }
  }

  private boolean closed;

  @Override
  public void close() {
    if (!closed) {
      closed = true;
      stdio.close();
      sdk.close();
      agent.stop(Duration.ofSeconds(10));
    }
  }
}
