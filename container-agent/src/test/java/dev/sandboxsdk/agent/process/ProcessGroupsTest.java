package dev.sandboxsdk.agent.process;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class ProcessGroupsTest {

  @Test
  void signalIsGivenInTheDashNameFormThatProcpsKillHandlesForSmallGroupNumbers() {
    // "kill -s TERM -- -50" skips group 50 with procps-ng 4.0 (seen with strace in a container,
    // where the first commands have pids below 100); "kill -TERM -- -50" does not.
    assertThat(ProcessGroups.killCommand("/usr/bin/kill", List.of(50L, 77_777L), Signal.SIGTERM))
        .containsExactly("/usr/bin/kill", "-TERM", "--", "-50", "-77777");
    assertThat(ProcessGroups.killCommand("kill", List.of(7L), Signal.SIGKILL))
        .containsExactly("kill", "-KILL", "--", "-7");
  }

  @Test
  void neverSignalsEveryProcessOrTheAgentsOwnGroup() {
    assertThat(ProcessGroups.killCommand("kill", List.of(1L, 0L, -5L), Signal.SIGKILL)).isEmpty();
    assertThat(ProcessGroups.killCommand("kill", List.of(), Signal.SIGTERM)).isEmpty();
    assertThat(ProcessGroups.killCommand("kill", List.of(0L, 42L), Signal.SIGINT))
        .containsExactly("kill", "-INT", "--", "-42");
  }

  @Test
  void theRealKillBinaryAcceptsTheCommandLine() throws Exception {
    // A group that cannot exist: kill(1) must parse the line and report "no such process" (1),
    // not print its usage (which it does when it misreads the arguments).
    String kill = ProcessGroups.which("kill", System.getenv("PATH"));
    Process p = new ProcessBuilder(ProcessGroups.killCommand(kill, List.of(4_000_000L), Signal.SIGTERM))
        .redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes());
    assertThat(p.waitFor()).isEqualTo(1);
    assertThat(out).doesNotContainIgnoringCase("usage");
  }
}
