package dev.sandboxsdk.mcp.internal;

import static dev.sandboxsdk.mcp.internal.McpTestClient.args;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/** With --agent-url the tools drive that one remote agent (here a real agent in a child JVM). */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class RemoteAgentIT {
  private Process agent;
  private Path dir;
  private String url;

  @BeforeAll
  void startAgent() throws Exception {
    dir = Files.createTempDirectory("remote-agent-it");
    Files.writeString(dir.resolve("token"), "agent-secret-token\n");
    String java = ProcessHandle.current().info().command().orElse("java");
    agent = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), "dev.sandboxsdk.agent.Main",
        "--port", "0", "--bind", "127.0.0.1", "--token-file", dir.resolve("token").toString(),
        "--workspace", dir.resolve("ws").toString())
        .redirectError(dir.resolve("agent.err").toFile())
        .start();
    BufferedReader out = new BufferedReader(new InputStreamReader(agent.getInputStream(), StandardCharsets.UTF_8));
    Pattern ready = Pattern.compile("^SANDBOX_AGENT_READY .*\"url\":\"([^\"]+)\"");
    for (String line; (line = out.readLine()) != null; ) {
      Matcher m = ready.matcher(line);
      if (m.find()) {
        url = m.group(1);
        break;
      }
    }
    assertThat(url).as("the agent's ready line; its stderr: %s", Files.readString(dir.resolve("agent.err")))
        .isNotNull();
  }

  @AfterAll
  void stopAgent() throws Exception {
    agent.destroy();
    agent.waitFor(10, TimeUnit.SECONDS);
    try (var paths = Files.walk(dir)) {
      paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }

  private AdapterConfig config(String tokenFile) {
    return AdapterConfig.parse(new String[] {"--agent-url", url, "--agent-token-file", tokenFile}, Map.of());
  }

  @Test
  void toolsRunOnTheRemoteAgentAsTheDefaultSandbox() {
    try (McpTestClient mcp = McpTestClient.initialized(config(dir.resolve("token").toString()))) {
      JsonNode r = mcp.call("exec", args("command", "pwd; echo remote"));
      assertThat(r.get("structuredContent").get("stdout").asText()).endsWith("/ws\nremote\n");
      JsonNode sb = mcp.call("getSandbox", args()).get("structuredContent").get("sandbox");
      assertThat(sb.get("mode").asText()).isEqualTo("remote");
      assertThat(sb.get("keepAlive").asBoolean()).isTrue();
      JsonNode other = mcp.call("getSandbox", args("sandboxId", "second"));
      assertThat(other.get("isError").asBoolean()).isTrue();
      assertThat(other.get("content").get(0).get("text").asText()).contains("one remote sandbox agent");
    }
  }

  @Test
  void destroyKillsTheRemoteProcessesButLeavesTheAgentRunning() {
    try (McpTestClient mcp = McpTestClient.initialized(config(dir.resolve("token").toString()))) {
      mcp.call("startProcess", args("command", "sleep 300", "processId", "remote-sleeper"));
      JsonNode done = mcp.call("destroy", args("force", true)).get("structuredContent");
      assertThat(done.get("killedProcesses").asInt()).isEqualTo(1);
      assertThat(agent.isAlive()).isTrue();
      JsonNode after = mcp.call("exec", args("command", "echo still here"));
      assertThat(after.get("structuredContent").get("stdout").asText()).isEqualTo("still here\n");
    }
  }

  @Test
  void aWrongAgentTokenIsAnErrorResultNamingTheFix() throws Exception {
    Path wrong = dir.resolve("wrong");
    Files.writeString(wrong, "not-the-token\n");
    try (McpTestClient mcp = McpTestClient.initialized(config(wrong.toString()))) {
      JsonNode r = mcp.call("exec", args("command", "true"));
      assertThat(r.get("isError").asBoolean()).isTrue();
      assertThat(r.get("content").get(0).get("text").asText()).contains("--agent-token-file");
    }
  }
}
