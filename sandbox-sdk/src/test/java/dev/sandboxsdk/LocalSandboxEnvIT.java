package dev.sandboxsdk;

import dev.sandboxsdk.local.LocalSandbox;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The embedding application's environment (database passwords, cloud credentials, an MCP
 * server's token) does not reach sandboxed commands, nor even the agent's JVM, unless named with
 * {@link LocalSandbox.Builder#inheritEnv}.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class LocalSandboxEnvIT {
  /** What commands get of this JVM's environment without inheritEnv, plus what the sandbox sets. */
  private static final Set<String> DOCUMENTED = Set.of("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMPDIR",
      "SANDBOX_WORKSPACE", "SANDBOX_AGENT_RUN", "PWD", "SHLVL", "_", "OLDPWD");

  /** Variables of this test JVM that a command must not see: every one outside the documented set. */
  private static List<String> undocumented() {
    List<String> names = new ArrayList<>();
    System.getenv().forEach((name, value) -> {
      if (!DOCUMENTED.contains(name) && name.matches("[A-Za-z_][A-Za-z0-9_]*") && !value.contains("\n")) {
        names.add(name);
      }
    });
    names.sort(null);
    return names;
  }

  private static Set<String> names(String envOutput) {
    Set<String> names = new TreeSet<>();
    for (String line : envOutput.split("\n")) {
      int eq = line.indexOf('=');
      if (eq > 0) {
        names.add(line.substring(0, eq));
      }
    }
    return names;
  }

  @Test
  void commandsAndTheAgentSeeNoneOfThisJvmsEnvironmentBeyondTheDocumentedNames() throws Exception {
    List<String> mine = undocumented();
    // Maven, the JDK and any shell leave some (JAVA_HOME, MAVEN_*, USER, HOSTNAME, ...).
    assertThat(mine).as("this JVM's own variables to look for").isNotEmpty();
    try (LocalSandbox sandbox = LocalSandbox.builder().gracePeriod(Duration.ofMillis(500)).start()) {
      Set<String> seen = names(sandbox.exec("env").stdout());
      assertThat(seen).doesNotContainAnyElementsOf(mine).doesNotContain("SANDBOX_AGENT_TOKEN")
          .contains("PATH", "HOME", "LANG", "TERM", "TMPDIR", "SANDBOX_WORKSPACE", "SANDBOX_AGENT_RUN");

      String agentEnv = new String(Files.readAllBytes(Path.of("/proc", Long.toString(sandbox.agentPid()), "environ")),
          StandardCharsets.UTF_8);
      assertThat(names(agentEnv.replace('\0', '\n'))).as("the agent JVM's own environment")
          .doesNotContainAnyElementsOf(mine).doesNotContain("SANDBOX_AGENT_TOKEN");
      String agentArgs = new String(Files.readAllBytes(Path.of("/proc", Long.toString(sandbox.agentPid()), "cmdline")),
          StandardCharsets.UTF_8);
      assertThat(agentArgs).as("the agent's command line").contains("--token-stdin").doesNotContain("--token-file");
      // The token reached the agent all the same: calls are authenticated with it.
      assertThat(sandbox.exec("echo ok").stdout()).isEqualTo("ok\n");
    }
  }

  @Test
  void inheritEnvPassesExactlyTheNamedVariables() throws Exception {
    List<String> mine = undocumented();
    assertThat(mine).as("this JVM's own variables to look for").isNotEmpty();
    String named = mine.get(0);
    try (LocalSandbox sandbox = LocalSandbox.builder().gracePeriod(Duration.ofMillis(500))
        .inheritEnv(named, "SURELY_NOT_SET_ANYWHERE_42").start()) {
      String out = sandbox.exec("env").stdout();
      assertThat(out).contains(named + "=" + System.getenv(named));
      assertThat(names(out)).doesNotContainAnyElementsOf(mine.subList(1, mine.size()))
          .doesNotContain("SURELY_NOT_SET_ANYWHERE_42");
    }
  }

  @Test
  void inheritEnvRefusesBadNamesAndTheSandboxsOwnVariables() {
    for (String bad : List.of("1A", "A-B", "", "SANDBOX_AGENT_TOKEN", "SANDBOX_AGENT_RUN", "SANDBOX_WORKSPACE")) {
      assertThatThrownBy(() -> LocalSandbox.builder().inheritEnv(bad)).as(bad)
          .isInstanceOf(IllegalArgumentException.class);
    }
  }
}
