package dev.sandboxsdk.mcp.internal;

import static dev.sandboxsdk.mcp.internal.McpTestClient.args;
import static dev.sandboxsdk.mcp.internal.McpTestClient.sc;
import static dev.sandboxsdk.mcp.internal.McpTestClient.text;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The egress tools against real local sandboxes of a server started with {@code --egress-policy}:
 * curl, told to use the sandbox's proxy even for loopback, reaches a loopback upstream while
 * {@code allow 127.0.0.1/32} stands and gets 403 once updateEgressPolicy removed it; listEgressEvents
 * shows both. A server without the option says its sandboxes have no egress proxy.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class EgressToolsIT {
  private McpTestClient mcp;
  private HttpServer upstream;
  private Path policy;

  @BeforeAll
  void start() throws Exception {
    upstream = dev.sandboxsdk.testkit.HelloUpstream.start(50);
    policy = Files.createTempFile("egress-policy-", ".json");
    Files.writeString(policy, "{\"mode\":\"allow-list\",\"rules\":[\"allow 127.0.0.1/32\"]}");
    mcp = McpTestClient.initialized(AdapterConfig.parse(new String[] {"--egress-policy", policy.toString()}, Map.of()));
  }

  @AfterAll
  void stop() throws Exception {
    mcp.close();
    upstream.stop(0);
    Files.deleteIfExists(policy);
  }

  /** curl through the sandbox's proxy, loopback included (NO_PROXY would otherwise skip it): "body status". */
  /**
   * listEgressEvents from sequence 0 once it lists {@code count} events, or as it is after 10 s:
   * the proxy records a connection when it ends, which can be just after the command has its answer.
   */
  private static JsonNode eventsOnce(McpTestClient client, int count) throws InterruptedException {
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
    JsonNode events = client.call("listEgressEvents", args("since", 0, "limit", 1000));
    while (!events.has("isError") && sc(events).get("events").size() < count && System.nanoTime() < deadline) {
      Thread.sleep(50);
      events = client.call("listEgressEvents", args("since", 0, "limit", 1000));
    }
    return events;
  }

  private String curl() {
    JsonNode r = mcp.call("exec", args("command", "curl -s -m 10 --proxy \"$HTTP_PROXY\" --noproxy '' -w ' %{http_code}'"
        + " http://127.0.0.1:" + upstream.getAddress().getPort() + "/"));
    return sc(r).get("stdout").asText();
  }

  @Test
  void theToolsReadAndChangeThePolicyAndListWhatItDecided() throws Exception {
    JsonNode got = mcp.call("getEgressPolicy", args());
    assertThat(got.has("isError")).as("%s", got).isFalse();
    assertThat(sc(got).get("mode").asText()).isEqualTo("allow-list");
    assertThat(sc(got).get("rules").toString()).isEqualTo("[\"allow 127.0.0.1/32\"]");
    assertThat(curl()).isEqualTo("hello from upstream 200");

    JsonNode set = mcp.call("updateEgressPolicy", args("mode", "allow-list", "rules", List.of("deny 127.0.0.1")));
    assertThat(set.has("isError")).as("%s", set).isFalse();
    assertThat(sc(set).get("rules").toString()).isEqualTo("[\"deny 127.0.0.1/32\"]");
    assertThat(text(set)).contains("deny 127.0.0.1/32");
    assertThat(curl()).endsWith(" 403");

    JsonNode events = eventsOnce(mcp, 2);
    assertThat(events.has("isError")).as("%s", events).isFalse();
    List<String> seen = new java.util.ArrayList<>();
    sc(events).get("events").forEach(e -> seen.add(e.get("allowed").asBoolean() + " " + e.get("rule").asText()));
    assertThat(seen).containsExactly("true allow 127.0.0.1/32", "false deny 127.0.0.1/32");
    assertThat(sc(events).get("count").asInt()).isEqualTo(2);
    assertThat(sc(events).get("more").asBoolean()).isFalse();
    long last = sc(events).get("lastSequence").asLong();
    JsonNode none = mcp.call("listEgressEvents", args("since", last));
    assertThat(sc(none).get("count").asInt()).isZero();
    assertThat(text(none)).contains("No connection attempts");
    JsonNode one = mcp.call("listEgressEvents", args("limit", 1));
    assertThat(sc(one).get("more").asBoolean()).isTrue();
    assertThat(text(one)).contains("since " + sc(one).get("lastSequence").asLong());
  }

  @Test
  void badPoliciesAreErrorsTheModelCanActOnAndChangeNothing() {
    mcp.call("getSandbox", args("sandboxId", "bad"));
    JsonNode agentRefused = mcp.call("updateEgressPolicy", args("sandboxId", "bad", "mode", "open",
        "rules", List.of("deny a.test", "allow *.example..com")));
    assertThat(agentRefused.get("isError").asBoolean()).as("%s", agentRefused).isTrue();
    assertThat(text(agentRefused)).contains("allow *.example..com").contains("rejected");
    JsonNode shape = mcp.call("updateEgressPolicy", args("sandboxId", "bad", "mode", "open", "rules", List.of("permit x")));
    assertThat(text(shape)).contains("Not a valid egress policy").contains("Nothing was changed");
    JsonNode mode = mcp.call("updateEgressPolicy", args("sandboxId", "bad", "mode", "closed"));
    assertThat(text(mode)).contains("must be one of off, allow-list, open");
    assertThat(sc(mcp.call("getEgressPolicy", args("sandboxId", "bad"))).get("rules").toString())
        .as("the policy stands").isEqualTo("[\"allow 127.0.0.1/32\"]");
  }

  @Test
  void withoutTheOptionSandboxesHaveNoEgressAndARemoteAgentRefusesIt() {
    try (McpTestClient plain = McpTestClient.initialized(AdapterConfig.defaults())) {
      JsonNode r = plain.call("getEgressPolicy", args());
      assertThat(r.get("isError").asBoolean()).as("%s", r).isTrue();
      assertThat(text(r)).contains("has no egress proxy").contains("--egress-policy");
    }
    assertThat(AdapterConfig.parse(new String[] {"--provider", "container", "--egress-policy", policy.toString()},
        Map.of()).egressPolicy().rules()).as("for containers too").containsExactly("allow 127.0.0.1/32");
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--agent-url", "http://127.0.0.1:1", "--egress-policy",
        policy.toString()}, Map.of("SANDBOX_AGENT_TOKEN", "t"))).isInstanceOf(AdapterConfig.UsageException.class)
        .hasMessageContaining("not to a remote agent");
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--egress-policy", "/no/such/file"}, Map.of()))
        .isInstanceOf(AdapterConfig.UsageException.class).hasMessageContaining("no such file");
  }

  @Test
  void aServerSecretGivesCommandsAPlaceholderAndTheEventsNameIt() throws Exception {
    String value = "sk-mcp-0123456789abcdef";
    AdapterConfig config = AdapterConfig.parse(new String[] {"--egress-policy", policy.toString(),
        "--egress-secret", "API_KEY=MCP_TEST_KEY@secret.test#X-Api-Key"}, Map.of("MCP_TEST_KEY", value));
    try (McpTestClient client = McpTestClient.initialized(config)) {
      JsonNode placeholder = client.call("exec", args("command", "printf %s \"$API_KEY\""));
      assertThat(sc(placeholder).get("stdout").asText()).as("%s", placeholder).matches("sandbox-secret-[0-9a-f]{32}");
      JsonNode sent = client.call("exec", args("command", "curl -s -m 10 --proxy \"$HTTP_PROXY\" --noproxy ''"
          + " -w ' %{http_code}' -H \"X-Api-Key: $API_KEY\" http://127.0.0.1:" + upstream.getAddress().getPort() + "/"));
      assertThat(sc(sent).get("stdout").asText()).as("%s", sent).contains("secret-to-unbound-host (API_KEY)")
          .endsWith(" 403");
      JsonNode events = eventsOnce(client, 1);
      assertThat(events.has("isError")).as("%s", events).isFalse();
      assertThat(sc(events).get("events")).singleElement().satisfies(e -> {
        assertThat(e.get("rule").asText()).isEqualTo("secret-to-unbound-host");
        assertThat(e.get("secrets").toString()).isEqualTo("[\"API_KEY\"]");
      });
      assertThat(events.toString() + placeholder + sent).doesNotContain(value);
    }
  }
}
