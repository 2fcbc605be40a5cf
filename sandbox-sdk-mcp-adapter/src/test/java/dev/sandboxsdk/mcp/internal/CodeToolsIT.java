package dev.sandboxsdk.mcp.internal;

import static dev.sandboxsdk.mcp.internal.McpTestClient.args;
import static dev.sandboxsdk.mcp.internal.McpTestClient.sc;
import static dev.sandboxsdk.mcp.internal.McpTestClient.text;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * runCode with a context, listCodeContexts and deleteCodeContext through the MCP server on a real
 * local sandbox with the real python3 and node: state across calls, the value, errors as data, a
 * chart as MCP image content, and the stateless runCode unchanged beside it.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CodeToolsIT {
  private McpTestClient mcp;

  @BeforeAll
  void start() {
    mcp = McpTestClient.initialized(AdapterConfig.parse(new String[0], Map.of()));
  }

  @AfterAll
  void stop() throws Exception {
    mcp.close();
  }

  @Test
  void aNamedContextKeepsStateAndReturnsTheValue() {
    JsonNode one = mcp.call("runCode", args("language", "python", "context", "analysis",
        "code", "data = [3, 1, 2]\nprint('loaded', len(data))"));
    assertThat(one.has("isError")).as("%s", one).isFalse();
    assertThat(sc(one).get("stdout").asText()).isEqualTo("loaded 3\n");
    JsonNode two = mcp.call("runCode", args("language", "python", "context", "analysis", "code", "sorted(data)"));
    assertThat(sc(two).get("value").asText()).isEqualTo("[1, 2, 3]");
    assertThat(sc(two).get("executionCount").asInt()).isEqualTo(2);
    assertThat(sc(two).get("contextId").asText()).isEqualTo(sc(one).get("contextId").asText());

    JsonNode js = mcp.call("runCode", args("language", "javascript", "context", "web", "code", "let n = 20"));
    assertThat(js.has("isError")).isFalse();
    assertThat(sc(mcp.call("runCode", args("language", "javascript", "context", "web", "code", "n * 2 + 2")))
        .get("value").asText()).isEqualTo("42");

    JsonNode list = mcp.call("listCodeContexts", args());
    List<String> names = new ArrayList<>();
    sc(list).get("contexts").forEach(c -> names.add(c.get("name").asText() + ":" + c.get("language").asText()));
    assertThat(names).contains("analysis:python", "web:javascript");

    assertThat(sc(mcp.call("deleteCodeContext", args("context", "web"))).get("deleted").asBoolean()).isTrue();
    JsonNode again = mcp.call("deleteCodeContext", args("context", "web"));
    assertThat(again.path("isError").asBoolean()).isTrue();
    assertThat(text(again)).contains("no code context 'web'");
    JsonNode fresh = mcp.call("runCode", args("language", "javascript", "context", "web", "code", "typeof n"));
    assertThat(sc(fresh).get("value").asText()).isEqualTo("'undefined'");
  }

  @Test
  void anExceptionIsAnErrorResultWithItsTracebackAndTheContextLivesOn() {
    JsonNode failed = mcp.call("runCode", args("language", "python", "context", "errors",
        "code", "x = 1\nraise ValueError('bad value')"));
    assertThat(failed.path("isError").asBoolean()).isTrue();
    assertThat(sc(failed).get("error").get("name").asText()).isEqualTo("ValueError");
    assertThat(sc(failed).get("error").get("traceback").toString()).contains("bad value");
    assertThat(sc(failed).get("note").asText()).contains("fix the code");
    assertThat(sc(mcp.call("runCode", args("language", "python", "context", "errors", "code", "x + 1")))
        .get("value").asText()).isEqualTo("2");
  }

  @Test
  void aTimeoutInterruptsTheRunAndKeepsTheContext() {
    mcp.call("runCode", args("language", "python", "context", "slow", "code", "kept = 'yes'"));
    JsonNode r = mcp.call("runCode", args("language", "python", "context", "slow", "code", "while True: pass",
        "timeoutSeconds", 0.3));
    assertThat(sc(r).get("timedOut").asBoolean()).isTrue();
    assertThat(sc(r).get("restarted").asBoolean()).isFalse();
    assertThat(sc(mcp.call("runCode", args("language", "python", "context", "slow", "code", "kept")))
        .get("value").asText()).isEqualTo("'yes'");
  }

  @Test
  void aChartComesBackAsImageContent() throws Exception {
    boolean has = new ProcessBuilder("/usr/bin/python3", "-c", "import matplotlib").start().waitFor() == 0;
    Assumptions.assumeTrue(has || "true".equals(System.getenv("CI")),
        "matplotlib is not installed for /usr/bin/python3 (apt-get install python3-matplotlib): skipped");
    JsonNode r = mcp.call("runCode", args("language", "python", "context", "chart", "env", Map.of("PATH", "/usr/bin:/bin"),
        "code", "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [2, 4, 8])\nplt.title('growth');"));
    assertThat(r.has("isError")).as("%s", r).isFalse();
    JsonNode image = null;
    for (JsonNode c : r.get("content")) {
      if (c.get("type").asText().equals("image")) {
        image = c;
      }
    }
    assertThat(image).as("image content in %s", r.get("content")).isNotNull();
    assertThat(image.get("mimeType").asText()).isEqualTo("image/png");
    byte[] png = Base64.getDecoder().decode(image.get("data").asText());
    assertThat(Arrays.copyOf(png, 8)).containsExactly(0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n');
    assertThat(new String(png, 12, 4, StandardCharsets.US_ASCII)).isEqualTo("IHDR");
    assertThat(sc(r).get("outputs").toString()).contains("image/png"); // the title's Text value, then the figure
  }

  @Test
  void bashWithAContextIsAClearErrorAndWithoutOneRunsAsBefore() {
    JsonNode bad = mcp.call("runCode", args("language", "bash", "context", "sh", "code", "echo hi"));
    assertThat(bad.path("isError").asBoolean()).isTrue();
    assertThat(text(bad)).contains("python or javascript");
    JsonNode plain = mcp.call("runCode", args("language", "bash", "code", "echo hi"));
    assertThat(sc(plain).get("stdout").asText()).isEqualTo("hi\n");
    assertThat(sc(plain).has("context")).isFalse();
  }
}
