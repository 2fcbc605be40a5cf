package dev.sandboxsdk.agent;

import static dev.sandboxsdk.agent.TerminalIT.awaitExit;
import static dev.sandboxsdk.agent.TerminalIT.awaitOutput;
import static dev.sandboxsdk.agent.TerminalIT.output;
import static dev.sandboxsdk.agent.TerminalIT.startTerminal;
import static dev.sandboxsdk.agent.TerminalIT.type;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The last output of a terminal's program, written just before it exits, is never lost: the
 * process only counts as finished once its output has been read, however late the agent gets
 * to read the terminal.
 */
@Tag("slow")
class TerminalTailIT {
  private static final int RUNS = 200;

  @RegisterExtension
  static final TestAgent agent = new TestAgent(b -> b.keepAliveMs(200).graceMs(1000).logWindowBytes(64 * 1024));

  @BeforeAll
  static void nativeSpawn() {
    org.junit.jupiter.api.Assumptions.assumeFalse("jdk".equals(System.getProperty("sandbox.test.spawn")));
  }

  @AfterEach
  void cleanUp() {
    agent.reset();
  }

  @Test
  void aPromptingProgramsLastLineIsAlwaysInItsOutput() throws Exception {
    List<String> lost = new ArrayList<>();
    for (int i = 0; i < RUNS; i++) {
      String id = "prompt-" + i;
      startTerminal(agent, id, 80, 24, Map.of(), "sh", "-c", "printf 'name? '; read n; echo \"hello, $n!\"");
      awaitOutput(agent, id, s -> s.contains("name? "));
      type(agent, id, "w\u00f6rld\r");
      assertThat(awaitExit(agent, id).get("exitCode").asInt()).isZero();
      String out = output(agent, id);
      if (!out.equals("name? w\u00f6rld\r\nhello, w\u00f6rld!\r\n")) {
        lost.add(id + ": " + out.replace("\r", "\\r").replace("\n", "\\n"));
      }
      if (i % 50 == 49) {
        agent.post("/api/process/cleanup", "");
      }
    }
    assertThat(lost).as("runs of %d whose last line was lost", RUNS).isEmpty();
  }

  @Test
  void manyTerminalsEndingAtOnceKeepTheirLastLines() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(8);
    try {
      List<Future<String>> runs = new ArrayList<>();
      for (int i = 0; i < RUNS; i++) {
        String id = "burst-" + i;
        runs.add(pool.submit(() -> {
          startTerminal(agent, id, 80, 24, Map.of(), "sh", "-c", "echo first; echo last-" + id);
          awaitExit(agent, id);
          String out = output(agent, id);
          return out.equals("first\r\nlast-" + id + "\r\n") ? null
              : id + ": " + out.replace("\r", "\\r").replace("\n", "\\n");
        }));
      }
      List<String> lost = new ArrayList<>();
      for (Future<String> run : runs) {
        String bad = run.get();
        if (bad != null) {
          lost.add(bad);
        }
      }
      assertThat(lost).as("runs of %d whose last line was lost", RUNS).isEmpty();
    } finally {
      pool.shutdownNow();
    }
  }
}
