package dev.sandboxsdk.agent;

import static dev.sandboxsdk.agent.TestAgent.obj;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sandboxsdk.testkit.Await;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Processes that leave their process group ({@code setsid}, job control with {@code set -m}, a
 * double fork into a new group) are still the agent's: kill, kill-all and shutdown stop them.
 */
class EscapedProcessIT {
  @RegisterExtension static final TestAgent agent = new TestAgent(b -> b.graceMs(1000));

  final String tag = "7" + (100_000 + ThreadLocalRandom.current().nextInt(800_000));

  @AfterEach
  void reset() {
    agent.reset();
    for (long pid : Tagged.pids(tag)) {
      ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
    }
  }

  /** A shell that starts three sleeps outside its own group, then waits. */
  String escaping(String n) {
    return "setsid sleep " + tag + "." + n + "1 & set -m; sleep " + tag + "." + n + "2 & (sleep " + tag + "." + n
        + "3 &); sleep " + tag + "." + n + "4";
  }

  @Test
  void killAllStopsProcessesThatLeftTheirGroupButNotWhatARunningExecStarted() throws Exception {
    agent.post("/api/process/start", obj("command", escaping("1"), "processId", "escaper"));
    agent.post("/api/process/start", obj("command", escaping("2") + " & exit 0", "processId", "finishedEscaper"));
    HttpRequest execRequest = agent.request("/api/execute").POST(HttpRequest.BodyPublishers.ofString(
        obj("command", "setsid sleep " + tag + ".91 & sleep 30; echo done"))).build();
    CompletableFuture<HttpResponse<String>> exec = agent.http.sendAsync(execRequest, HttpResponse.BodyHandlers.ofString());
    assertThat(Await.until(10_000, () -> Tagged.sleeps(tag) == 9)).as("started: " + Tagged.pids(tag)).isTrue();
    long execEscapee = Tagged.pidOf(tag + ".91");

    agent.delete("/api/process/kill-all");

    assertThat(Await.until(3_000, () -> Tagged.sleepPids(tag).equals(List.of(execEscapee))))
        .as("left: %s", Tagged.sleepPids(tag)).isTrue();
    assertThat(exec).isNotDone();
  }

  @Test
  void killingOneProcessAlsoStopsWhatItStartedOutsideItsGroupAndNothingElse() throws Exception {
    agent.post("/api/process/start", obj("command", escaping("1"), "processId", "target"));
    agent.post("/api/process/start", obj("command", escaping("2"), "processId", "bystander"));
    assertThat(Await.until(10_000, () -> Tagged.sleeps(tag) == 8)).as("started: " + Tagged.pids(tag)).isTrue();

    agent.delete("/api/process/target");

    assertThat(Await.until(5_000, () -> Tagged.sleeps(tag) == 4)).as("left: %s", Tagged.sleepPids(tag)).isTrue();
    for (long pid : Tagged.sleepPids(tag)) {
      assertThat(Tagged.cmdline(pid)).contains(tag + ".2");
    }
  }
}
