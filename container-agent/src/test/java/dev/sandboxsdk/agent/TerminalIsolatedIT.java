package dev.sandboxsdk.agent;

import static dev.sandboxsdk.agent.TerminalIT.awaitExit;
import static dev.sandboxsdk.agent.TerminalIT.awaitOutput;
import static dev.sandboxsdk.agent.TerminalIT.output;
import static dev.sandboxsdk.agent.TerminalIT.shell;
import static dev.sandboxsdk.agent.TerminalIT.startTerminal;
import static dev.sandboxsdk.agent.TerminalIT.type;
import static dev.sandboxsdk.agent.TestAgent.obj;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Terminals under {@code --isolation bwrap}: the outer bwrap leads the session with the slave as
 * its controlling terminal, the command inside inherits it, and bwrap's own {@code /dev} shows it
 * as {@code /dev/console} (bwrap binds the terminal of its stdout there), so {@code tty} prints a
 * device. On an agent without the native spawn a terminal is refused with 501.
 */
class TerminalIsolatedIT {
  @RegisterExtension
  static final TestAgent agent = new TestAgent(b -> b.keepAliveMs(200).graceMs(1000).isolation("bwrap"));

  @AfterEach
  void cleanUp() {
    agent.reset();
  }

  @Test
  void ttyPrintsADeviceAndTheSizeIsSetInsideTheSandbox() throws Exception {
    startTerminal(agent, "tty", 100, 30, Map.of(), "sh", "-c", "tty; stty size; test -t 0 && echo stdin-is-a-tty");
    assertThat(awaitExit(agent, "tty").get("exitCode").asInt()).isZero();
    assertThat(output(agent, "tty")).isEqualTo("/dev/console\r\n30 100\r\nstdin-is-a-tty\r\n");
  }

  @Test
  void resizeCtrlCAndTypedInputWorkInsideTheSandbox() throws Exception {
    shell(agent, "sh");
    type(agent, "sh", "trap 'echo winch $(stty size)' WINCH\r");
    type(agent, "sh", "echo sl''eeping; sleep 67\r");
    awaitOutput(agent, "sh", s -> s.contains("sleeping"));
    Thread.sleep(300); // let the shell start sleep after its echo (no timing is asserted)
    type(agent, "sh", "\u0003");
    type(agent, "sh", "echo $((40+2))-after\r");
    assertThat(awaitOutput(agent, "sh", s -> s.contains("42-after"))).contains("42-after");
    assertThat(agent.post("/api/process/sh/resize", obj("cols", 90, "rows", 33)).status()).isEqualTo(200);
    type(agent, "sh", "stty size\r");
    assertThat(awaitOutput(agent, "sh", s -> s.contains("33 90\r\n"))).contains("33 90\r\n");
    type(agent, "sh", "exit 3\r");
    assertThat(awaitExit(agent, "sh").get("exitCode").asInt()).isEqualTo(3);
  }

  @Test
  void anAgentWithoutTheNativeSpawnRefusesTerminalsClearly() {
    try (TestAgent jdk = TestAgent.start(b -> b.spawn("jdk"))) {
      TestAgent.Response r = jdk.post("/api/process/start", "{\"argv\":[\"sh\"],\"pty\":{\"cols\":80,\"rows\":24}}");
      assertThat(r.status()).isEqualTo(501);
      assertThat(r.text("code")).isEqualTo("TERMINAL_UNAVAILABLE");
      assertThat(r.text("message")).contains("--spawn");
      assertThat(jdk.get("/api/process/list").body().get("processes")).isEmpty();
    }
  }
}
