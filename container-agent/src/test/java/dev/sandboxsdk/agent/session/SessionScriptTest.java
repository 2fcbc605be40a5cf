package dev.sandboxsdk.agent.session;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The state filter and the wrapper, run by the real bash without an agent. */
class SessionScriptTest {
  @TempDir Path dir;

  @Test
  void bashsOwnVariablesAreNotStateAndTheUsersAre() {
    for (String own : List.of("BASH_VERSION", "BASHOPTS", "SHELLOPTS", "EUID", "UID", "PPID", "RANDOM", "SECONDS",
        "LINENO", "PIPESTATUS", "FUNCNAME", "PWD", "OLDPWD", "SHLVL", "_", "__sbx_f", "EPOCHSECONDS", "COMP_WORDS")) {
      assertThat(SessionScript.keeps(own)).as(own).isFalse();
    }
    for (String mine : List.of("A", "PATH", "HOME", "my_var", "_private", "BAS", "XBASH", "IFS", "PS1", "LANG")) {
      assertThat(SessionScript.keeps(mine)).as(mine).isTrue();
    }
    assertThat(SessionScript.keeps("1A")).isFalse();
    assertThat(SessionScript.keeps("A-B")).isFalse();
  }

  @Test
  void theSavedStateHoldsNoneOfBashsOwnVariablesAndRestoresUnderStrictOptions() throws Exception {
    Path state = dir.resolve("s.state");
    Files.writeString(state, SessionScript.initialState(null, Map.of("START", "it's")));
    assertThat(bash(state, "set -euo pipefail; X=1; readonly RO=2; export START").exit()).isZero();

    String saved = Files.readString(state);
    assertThat(saved).contains("declare -- X=\"1\"", "declare -r RO=\"2\"", "declare -x START=\"it's\"",
        "set -o errexit", "set -o nounset");
    for (String line : saved.split("\n")) {
      if (line.startsWith("declare ")) {
        String name = line.split(" ")[2].split("=")[0];
        assertThat(SessionScript.keeps(name)).as(line).isTrue();
      }
    }
    // errexit and nounset are back on, and the wrapper itself still works under them
    Result r = bash(state, "echo $X $RO \"$START\"; [[ -o errexit && -o nounset ]] && echo strict");
    assertThat(r.out()).isEqualTo("1 2 it's\nstrict\n");
    assertThat(r.exit()).isZero();
  }

  @Test
  void aSignalledCommandSavesNothingAndDiesByItsSignal() throws Exception {
    Path state = dir.resolve("s.state");
    Files.writeString(state, "");
    bash(state, "V=before");
    Result r = bash(state, "V=after; kill -TERM $$; sleep 5");
    assertThat(r.exit()).isEqualTo(143);
    assertThat(bash(state, "echo $V").out()).isEqualTo("before\n");
  }

  @Test
  void initialStateQuotesEverything() {
    assertThat(SessionScript.initialState("a b'c", Map.of("K", "$(x) 'y'")))
        .isEqualTo("cd -- 'a b'\\''c' || true\nexport K='$(x) '\\''y'\\'''\n");
  }

  private record Result(int exit, String out) {
  }

  private Result bash(Path state, String command) throws IOException, InterruptedException {
    List<String> argv = new ArrayList<>(new SessionScript(1 << 20).argv(state.toString(), command, false, Map.of()));
    Process p = new ProcessBuilder(argv).directory(dir.toFile()).redirectErrorStream(true).start();
    p.getOutputStream().close();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(20, TimeUnit.SECONDS)).isTrue();
    return new Result(p.exitValue(), out);
  }
}
