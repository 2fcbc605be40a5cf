package dev.sandboxsdk.agent.process;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class CommandEnvironmentTest {
  private static final String TOKEN = "SANDBOX_AGENT_TOKEN";

  @Test
  void anAgentWithoutTheBaseVariablesGivesCommandsTheDocumentedDefaults() {
    CommandEnvironment env = new CommandEnvironment(Map.of("SECRET", "x"), List.of(), Path.of("/ws"), "abc", TOKEN);

    assertThat(env.start()).containsOnlyKeys("PATH", "HOME", "LANG", "TERM", "TMPDIR", "SANDBOX_WORKSPACE")
        .containsEntry("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
        .containsEntry("HOME", System.getProperty("user.home")).containsEntry("LANG", "C.UTF-8")
        .containsEntry("TERM", "dumb").containsEntry("TMPDIR", "/tmp").containsEntry("SANDBOX_WORKSPACE", "/ws");
  }

  @Test
  void inheritedNamesComeAlongButNeverTheTokenAndTheMarkerAlwaysWins() {
    Map<String, String> agent = new HashMap<>(Map.of("PATH", "/p", "A", "1", TOKEN, "t", "LC_ALL", "C", "UNNAMED", "u"));
    CommandEnvironment env = new CommandEnvironment(agent, List.of("A", TOKEN, "MISSING"), Path.of("/ws"), "abc", TOKEN);
    Map<String, String> requested = new LinkedHashMap<>();
    requested.put("PATH", null);
    requested.put("B", "2");
    requested.put(CommandEnvironment.RUN_VAR, "forged");
    Map<String, String> target = new HashMap<>(Map.of("JUNK", "from the agent's own ProcessBuilder"));

    env.fill(target, requested, env.mark(7));

    assertThat(target).containsEntry("A", "1").containsEntry("B", "2").containsEntry("LC_ALL", "C")
        .containsEntry(CommandEnvironment.RUN_VAR, "abc.7")
        .doesNotContainKeys("PATH", TOKEN, "MISSING", "UNNAMED", "JUNK");
  }

  @Test
  void aCommandUsersHomeReplacesTheAgentsButAnExplicitlyInheritedHomeStillWins() {
    Map<String, String> agent = Map.of("HOME", "/root");
    assertThat(new CommandEnvironment(agent, List.of(), Path.of("/ws"), "abc", TOKEN, "/home/sandbox").start())
        .containsEntry("HOME", "/home/sandbox");
    assertThat(new CommandEnvironment(agent, List.of("HOME"), Path.of("/ws"), "abc", TOKEN, "/home/sandbox").start())
        .containsEntry("HOME", "/root");
    assertThat(new CommandEnvironment(agent, List.of(), Path.of("/ws"), "abc", TOKEN, null).start())
        .containsEntry("HOME", "/root");
  }
}
