package dev.sandboxsdk.agent;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code --isolation}: what the agent reports, and how it starts where bwrap cannot be used (a
 * PATH of its own without bwrap stands in for a machine without it). What isolated commands can
 * see and do is tested through the SDK (LocalSandboxIsolationIT, LocalSandboxIsolatedContractIT).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class IsolationIT {
  @TempDir
  Path dir;

  @Test
  void bwrapIsReportedInTheReadyLineAndVersionAndCommandsRunInIt() throws Exception {
    try (LaunchedAgent agent = LaunchedAgent.start(List.of(), Map.of(), dir.resolve("agent.log"),
        "--workspace", dir.resolve("ws").toString(), "--isolation", "bwrap")) {
      JsonNode version = agent.ok("GET", "/api/version", null);
      assertThat(version.path("isolation").path("mode").asText()).isEqualTo("bwrap");
      assertThat(version.path("isolation").path("network").asBoolean(true)).isFalse();
      JsonNode r = agent.exec("{\"command\":\"hostname; ls /proc | grep -c '^[0-9]'\"}");
      assertThat(r.path("stdout").asText()).startsWith("sandbox\n");
      assertThat(Integer.parseInt(r.path("stdout").asText().split("\n")[1])).isLessThanOrEqualTo(4);
    }
  }

  @Test
  void noneIsTheDefaultAndHasTheHostsNetwork() throws Exception {
    try (LaunchedAgent agent = LaunchedAgent.start(List.of(), Map.of(), dir.resolve("agent.log"),
        "--workspace", dir.resolve("ws").toString())) {
      JsonNode version = agent.ok("GET", "/api/version", null);
      assertThat(version.path("isolation").path("mode").asText()).isEqualTo("none");
      assertThat(version.path("isolation").path("network").asBoolean(false)).isTrue();
    }
  }

  @Test
  void withoutBwrapOnThePathBwrapRefusesToStartAndAutoFallsBackSayingWhy() throws Exception {
    Path bin = Files.createDirectories(dir.resolve("bin"));
    for (String tool : List.of("setsid", "kill", "env", "mkfifo", "grep", "sh")) {
      Path real = Path.of("/usr/bin", tool);
      Files.createSymbolicLink(bin.resolve(tool), Files.exists(real) ? real : Path.of("/bin", tool));
    }
    Map<String, String> env = Map.of("PATH", bin.toString());
    Path log = dir.resolve("refused.log");
    Process refused = LaunchedAgent.launch(List.of(), env, log, "--workspace", dir.resolve("ws").toString(),
        "--isolation", "bwrap");
    assertThat(refused.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(refused.exitValue()).isEqualTo(1);
    assertThat(Files.readString(log)).contains(
        "container-agent: cannot start: --isolation bwrap: bwrap is not on the agent's PATH"
            + " (Debian/Ubuntu: apt-get install bubblewrap)");

    Process auto = LaunchedAgent.launch(List.of(), env, dir.resolve("auto.log"), "--workspace",
        dir.resolve("ws").toString(), "--isolation", "auto");
    try {
      BufferedReader out = new BufferedReader(new InputStreamReader(auto.getInputStream(), StandardCharsets.UTF_8));
      String line = out.readLine();
      assertThat(line).as("ready line; log: %s", LaunchedAgent.readQuietly(dir.resolve("auto.log")))
          .startsWith(Main.READY_PREFIX);
      JsonNode ready = TestAgent.JSON.readTree(line.substring(Main.READY_PREFIX.length()));
      assertThat(ready.path("isolation").asText()).isEqualTo("none");
      assertThat(ready.path("isolationUnavailable").asText()).startsWith("bwrap is not on the agent's PATH");
      assertThat(Files.readString(dir.resolve("auto.log")))
          .containsOnlyOnce("--isolation auto: bwrap is not on the agent's PATH");
    } finally {
      auto.destroy();
      auto.waitFor(20, TimeUnit.SECONDS);
    }
  }

  @Test
  void isolationCannotBeCombinedWithACommandUser() throws IOException, InterruptedException {
    Path log = dir.resolve("agent.log");
    Process p = LaunchedAgent.launch(List.of(), Map.of(), log, "--isolation", "bwrap", "--command-user", "1000:1000");
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).isEqualTo(2);
    assertThat(Files.readString(log)).contains("--isolation bwrap cannot be combined with --command-user");
  }
}
