package dev.sandboxsdk.mcp.internal;

import static dev.sandboxsdk.mcp.internal.McpTestClient.args;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/** watchFiles against a real local sandbox: changes made by a real background process. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class WatchFilesToolIT {
  private McpTestClient mcp;

  @BeforeAll
  void start() {
    mcp = McpTestClient.initialized(AdapterConfig.defaults());
  }

  @AfterAll
  void stop() {
    mcp.close();
  }

  private static List<String> events(JsonNode result) {
    List<String> out = new ArrayList<>();
    result.get("structuredContent").get("events").forEach(e -> out.add(e.get("type").asText() + " "
        + e.get("path").asText()));
    return out;
  }

  @Test
  void changesMadeWhileWatchingAreReturnedAndSentAsProgress() {
    mcp.call("exec", args("command", "mkdir -p w1"));
    mcp.call("startProcess", args("command", "sleep 1; echo a > w1/a.txt; mkdir w1/sub; echo b > w1/sub/b.txt;"
        + " rm w1/a.txt"));
    JsonNode r = mcp.call("watchFiles", args("path", "w1", "seconds", 4), "w1");
    assertThat(r.has("isError")).as("%s", r).isFalse();
    JsonNode sc = r.get("structuredContent");
    assertThat(sc.get("watching").asBoolean()).isTrue();
    assertThat(sc.get("ended").asText()).isEqualTo("timeLimit");
    assertThat(events(r)).contains("create a.txt", "create sub", "create sub/b.txt", "delete a.txt");
    assertThat(mcp.progress("w1")).extracting(p -> p.get("message").asText())
        .contains("watching w1", "create a.txt", "delete a.txt");
  }

  @Test
  void theEventCapEndsTheCallEarlyAndSaysSo() throws InterruptedException {
    mcp.call("exec", args("command", "mkdir -p w2"));
    mcp.call("startProcess", args("command", "sleep 1; for i in $(seq 1 30); do echo $i > w2/f$i; done"));
    long t0 = System.nanoTime();
    JsonNode r = mcp.call("watchFiles", args("path", "w2", "seconds", 60, "maxEvents", 5));
    assertThat((System.nanoTime() - t0) / 1_000_000_000.0).as("seconds until it returned").isLessThan(30);
    JsonNode sc = r.get("structuredContent");
    assertThat(sc.get("ended").asText()).isEqualTo("maxEvents");
    assertThat(sc.get("count").asInt()).isEqualTo(5);
    assertThat(sc.get("note").asText()).contains("maxEvents (5)");
    // Its 60 s limit goes with it (just after the answer): a pending limit would keep the call's events until then.
    for (int i = 0; i < 50 && mcp.server.tools().pendingTimeLimits() > 0; i++) {
      Thread.sleep(100);
    }
    assertThat(mcp.server.tools().pendingTimeLimits()).isZero();
  }

  @Test
  void aMissingDirectoryOrAPathOutsideTheWorkspaceIsAnErrorResult() {
    JsonNode missing = mcp.call("watchFiles", args("path", "no-such-dir", "seconds", 2));
    assertThat(missing.get("isError").asBoolean()).isTrue();
    assertThat(missing.get("content").get(0).get("text").asText()).contains("no-such-dir")
        .contains("Not found").contains("listFiles shows what exists");
    JsonNode outside = mcp.call("watchFiles", args("path", "/etc", "seconds", 2));
    assertThat(outside.get("isError").asBoolean()).isTrue();
    assertThat(outside.get("content").get(0).get("text").asText()).as("as for the file tools")
        .contains("Not allowed").contains("workspace");
  }
}
