package dev.sandboxsdk.mcp.internal;

import static dev.sandboxsdk.mcp.internal.McpTestClient.args;
import static dev.sandboxsdk.mcp.internal.McpTestClient.isError;
import static dev.sandboxsdk.mcp.internal.McpTestClient.sc;
import static dev.sandboxsdk.mcp.internal.McpTestClient.text;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * exec's {@code session} and the session tools, through the in-process MCP client against a real
 * local sandbox: a session is created by the first exec that names it, keeps cd, export and
 * functions for the next one (also over the streamed path), stays apart from other sessions and
 * from plain exec, and is listed and deleted by its tools.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SessionToolsIT {
  private McpTestClient mcp;

  @BeforeAll
  void start() {
    mcp = McpTestClient.initialized(AdapterConfig.parse(new String[0], Map.of()));
  }

  @AfterAll
  void stop() throws Exception {
    mcp.close();
  }

  private JsonNode exec(String session, String command) {
    JsonNode r = mcp.call("exec", session == null ? args("command", command) : args("command", command, "session", session));
    assertThat(isError(r)).as("%s", r).isFalse();
    return sc(r);
  }

  @Test
  void aNamedSessionIsCreatedOnFirstUseAndKeepsItsStateAcrossCalls() {
    JsonNode first = exec("build", "mkdir -p proj && cd proj && export MODE=debug && greet() { echo \"hi $1\"; }");
    assertThat(first.get("session").asText()).isEqualTo("build");

    JsonNode next = exec("build", "basename \"$PWD\"; echo $MODE; greet model");
    assertThat(next.get("stdout").asText()).isEqualTo("proj\ndebug\nhi model\n");
    // with progress the command runs on the streamed path, in the same session
    JsonNode streamed = sc(mcp.call("exec", args("command", "echo $MODE; export MODE=release", "session", "build"),
        "tok-1"));
    assertThat(streamed.get("stdout").asText()).isEqualTo("debug\n");
    assertThat(exec("build", "echo $MODE").get("stdout").asText()).isEqualTo("release\n");

    assertThat(exec("other", "echo ${MODE-unset}").get("stdout").asText()).isEqualTo("unset\n");
    JsonNode plain = exec(null, "echo ${MODE-unset}");
    assertThat(plain.get("stdout").asText()).isEqualTo("unset\n");
    assertThat(plain.has("session")).isFalse();

    JsonNode failed = mcp.call("exec", args("command", "export LAST=1; exit 4", "session", "build"));
    assertThat(isError(failed)).isTrue();
    assertThat(sc(failed).get("exitCode").asInt()).isEqualTo(4);
    assertThat(exec("build", "echo $LAST").get("stdout").asText()).isEqualTo("1\n");
  }

  @Test
  void listSessionsAndDeleteSession() {
    exec("listed", "true");
    JsonNode list = mcp.call("listSessions", args());
    assertThat(isError(list)).as("%s", list).isFalse();
    List<String> names = new ArrayList<>();
    sc(list).get("sessions").forEach(s -> names.add(s.get("session").asText()));
    assertThat(names).contains("listed");
    assertThat(text(list)).contains("listed");

    JsonNode deleted = mcp.call("deleteSession", args("session", "listed"));
    assertThat(isError(deleted)).as("%s", deleted).isFalse();
    assertThat(sc(deleted).get("deleted").asBoolean()).isTrue();
    JsonNode again = mcp.call("deleteSession", args("session", "listed"));
    assertThat(isError(again)).isTrue();
    assertThat(text(again)).contains("has no session 'listed'");
    // the next exec naming it starts a fresh one
    assertThat(exec("listed", "echo ${GONE-fresh}").get("stdout").asText()).isEqualTo("fresh\n");
  }

  @Test
  void aSessionNameTheSchemaRefusesIsAnInvalidParamsError() {
    JsonNode r = mcp.request("tools/call", McpTestClient.callParams("exec", args("command", "true", "session",
        "../x"), null));
    assertThat(r.toString()).contains("does not match");
  }
}
