package dev.sandboxsdk;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandboxsdk.contract.ExecProbe;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * {@link ExecProbe} against scripted exec answers: it must fail, not answer "gone", whenever it
 * cannot tell. The contract suite proves its right answers on a real sandbox
 * ({@code LocalSandboxContractExecProbeIT}).
 */
class ExecProbeTest {
  private final List<Command> calls = new ArrayList<>();

  @Test
  void aProcessIsAliveUnlessItIsMissingOrAZombie() {
    ExecProbe probe = probe(c -> ok("""
        100
        100 (sh) S 1 100 100
        7 (sleep (x)) S 100 7 7
        8 (sh) Z 100 7 7
        """));

    assertThat(probe.aliveAmong(List.of(7L, 8L, 9L))).containsExactly(7L);
    assertThat(calls.get(0).argv()).startsWith("sh", "-c").endsWith("7/stat", "8/stat", "9/stat");
    assertThat(probe.groupMembers(7)).containsExactly(7L);
    assertThat(probe.groupMembers(100)).containsExactly(100L);
  }

  @Test
  void aListingWithoutTheProbesOwnShellFailsInsteadOfSayingEverythingIsGone() {
    ExecProbe unreadable = probe(c -> ok("100\n"));
    ExecProbe failed = probe(c -> result(3, "100\n", "cd: /proc: No such file or directory"));
    ExecProbe garbled = probe(c -> ok("100\n100 (sh) S 1 100 100\nnot a stat line\n"));

    assertThatThrownBy(() -> unreadable.alive(7)).isInstanceOf(AssertionError.class).hasMessageContaining("/proc/100");
    assertThatThrownBy(() -> unreadable.groupMembers(7)).isInstanceOf(AssertionError.class);
    assertThatThrownBy(() -> failed.aliveAmong(List.of(7L))).isInstanceOf(AssertionError.class)
        .hasMessageContaining("No such file");
    assertThatThrownBy(() -> garbled.groupMembers(7)).isInstanceOf(AssertionError.class)
        .hasMessageContaining("not a stat line");
  }

  @Test
  void existsIsTrueOrFalseOnlyForTestsOwnAnswers() {
    assertThat(probe(c -> result(0, "", "")).exists("a")).isTrue();
    assertThat(probe(c -> result(1, "", "")).exists("a")).isFalse();
    assertThatThrownBy(() -> probe(c -> result(127, "", "sh: not found")).exists("a"))
        .isInstanceOf(AssertionError.class);
    assertThat(calls.get(0).argv()).endsWith("/ws/a");
  }

  @Test
  void readPidWaitsForAWholeLineAndFailsWhenNoneAppears() throws Exception {
    List<String> answers = new ArrayList<>(List.of("", "12", "123\n"));
    ExecProbe probe = probe(c -> answers.size() > 1 ? ok(answers.remove(0)) : ok(answers.get(0)));

    assertThat(probe.readPid("x.pid", Duration.ofSeconds(5))).isEqualTo(123);
    assertThatThrownBy(() -> probe(c -> result(1, "", "no such file")).readPid("/abs/y.pid", Duration.ofMillis(100)))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("/abs/y.pid");
  }

  @Test
  void aProbeCallThatTimesOutCannotTell() {
    ExecProbe probe = probe(c -> new ExecResult(124, "", "", "sh", Duration.ofSeconds(10), true, false, null, 5));

    assertThatThrownBy(() -> probe.realPath("/tmp")).isInstanceOf(AssertionError.class).hasMessageContaining("timed out");
  }

  private ExecProbe probe(Function<Command, ExecResult> answer) {
    Sandbox fake = (Sandbox) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {Sandbox.class},
        (proxy, method, args) -> {
          if (method.getName().equals("exec") && args.length == 2 && args[0] instanceof Command) {
            calls.add((Command) args[0]);
            return answer.apply((Command) args[0]);
          }
          if (method.getName().equals("toString")) {
            return "fake";
          }
          throw new UnsupportedOperationException(method.toString());
        });
    return new ExecProbe(fake, "/ws");
  }

  private static ExecResult ok(String stdout) {
    return result(0, stdout, "");
  }

  private static ExecResult result(int exit, String stdout, String stderr) {
    return new ExecResult(exit, stdout, stderr, "sh", Duration.ofMillis(1), false, false, null, 5);
  }
}
