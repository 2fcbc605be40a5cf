package dev.sandboxsdk.agent;

import static dev.sandboxsdk.agent.TestAgent.obj;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sandboxsdk.testkit.Await;
import dev.sandboxsdk.testkit.Procs;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Signals, tree kills, grace periods, kill-all and the concurrency cap, on real process groups. */
class KillIT {
  @RegisterExtension static final TestAgent agent = new TestAgent(b -> b.graceMs(1000));

  @AfterEach
  void cleanUp() {
    agent.reset();
  }

  static long startProcess(String id, String command) throws Exception {
    TestAgent.Response r = agent.post("/api/process/start", obj("command", command, "processId", id));
    assertThat(r.status()).as(String.valueOf(r.body())).isEqualTo(200);
    // Wait for the script to say it is set up (traps installed, children started).
    assertThat(Await.until(5000, () -> agent.get("/api/process/" + id + "/logs").text("stdout").contains("ready"))).isTrue();
    return r.body().get("pid").asLong();
  }

  @Test
  void killTakesDownTheWholeTreeOfAShellWithBackgroundChildren() throws Exception {
    long pgid = startProcess("tree", "sleep 300 & sleep 300 & (sleep 300; echo x) & echo ready; wait");
    List<Long> members = Procs.groupMembers(pgid);
    assertThat(members).as("shell plus its children").hasSizeGreaterThanOrEqualTo(4);

    TestAgent.Response r = agent.delete("/api/process/tree");
    assertThat(r.status()).isEqualTo(200);
    assertThat(r.text("signal")).isEqualTo("SIGTERM");

    assertThat(Await.until(5000, () -> members.stream().noneMatch(Procs::alive))).isTrue();
    assertThat(Await.until(5000, () -> agent.isFinished("tree"))).isTrue();
    JsonNode p = agent.processInfo("tree");
    assertThat(p.get("status").asText()).isEqualTo("killed");
    assertThat(p.get("signal").asText()).isEqualTo("SIGTERM");
    assertThat(p.get("exitCode").asInt()).isEqualTo(143);
  }

  @Test
  void aProcessThatIgnoresSigtermIsKilledAfterTheGracePeriod() throws Exception {
    // trap '' makes the shell and its children ignore SIGTERM.
    long pgid = startProcess("stubborn", "trap '' TERM; echo ready; sleep 300");
    long sent = System.nanoTime();
    agent.delete("/api/process/stubborn?graceMs=800");

    Thread.sleep(400);
    assertThat(Procs.alive(pgid)).as("still alive inside the grace period").isTrue();
    assertThat(Await.until(5000, () -> Procs.groupMembers(pgid).isEmpty())).isTrue();
    long tookMs = (System.nanoTime() - sent) / 1_000_000;
    assertThat(tookMs).isBetween(700L, 5000L);
    assertThat(Await.until(5000, () -> agent.isFinished("stubborn"))).isTrue();
    JsonNode p = agent.processInfo("stubborn");
    assertThat(p.get("signal").asText()).isEqualTo("SIGKILL");
    assertThat(p.get("exitCode").asInt()).isEqualTo(137);
  }

  @Test
  void sigintIsDeliveredToATrap() throws Exception {
    startProcess("interruptible", "trap 'echo got-INT; exit 7' INT; echo ready; while :; do sleep 0.05; done");
    TestAgent.Response r = agent.delete("/api/process/interruptible?signal=SIGINT");
    assertThat(r.text("signal")).isEqualTo("SIGINT");

    assertThat(Await.until(5000, () -> agent.isFinished("interruptible"))).isTrue();
    JsonNode p = agent.processInfo("interruptible");
    assertThat(p.get("exitCode").asInt()).isEqualTo(7);
    assertThat(p.get("status").asText()).isEqualTo("killed");
    assertThat(agent.get("/api/process/interruptible/logs").text("stdout")).contains("got-INT");
  }

  @Test
  void signalsMayBeGivenByNumberOrShortName() throws Exception {
    startProcess("byNumber", "echo ready; sleep 300");
    assertThat(agent.delete("/api/process/byNumber?signal=9").text("signal")).isEqualTo("SIGKILL");
    startProcess("byName", "echo ready; sleep 300");
    assertThat(agent.delete("/api/process/byName?signal=hup").text("signal")).isEqualTo("SIGHUP");
    assertThat(Await.until(5000, () -> agent.isFinished("byNumber") && agent.isFinished("byName"))).isTrue();
    assertThat(agent.processInfo("byName").get("signal").asText()).isEqualTo("SIGHUP");
    assertThat(agent.processInfo("byName").get("exitCode").asInt()).isEqualTo(129);
  }

  @Test
  void killIsIdempotent() throws Exception {
    startProcess("once", "echo ready; sleep 300");
    assertThat(agent.delete("/api/process/once").status()).isEqualTo(200);
    assertThat(Await.until(5000, () -> agent.isFinished("once"))).isTrue();
    TestAgent.Response again = agent.delete("/api/process/once");
    assertThat(again.status()).isEqualTo(200);
    assertThat(again.text("status")).isEqualTo("killed");

    agent.post("/api/process/start", obj("command", "true", "processId", "alreadyDone"));
    assertThat(Await.until(5000, () -> agent.isFinished("alreadyDone"))).isTrue();
    TestAgent.Response done = agent.delete("/api/process/alreadyDone");
    assertThat(done.status()).isEqualTo(200);
    assertThat(done.text("status")).isEqualTo("completed");
    assertThat(agent.processInfo("alreadyDone").get("status").asText()).as("killing a finished process changes nothing").isEqualTo("completed");
  }

  @Test
  void killingAFinishedProcessStillKillsChildrenItLeftBehind() throws Exception {
    long pgid = startProcess("parent", "sleep 300 & echo ready");
    assertThat(Await.until(5000, () -> agent.isFinished("parent"))).isTrue();
    assertThat(Procs.groupMembers(pgid)).as("the orphaned sleep").hasSize(1);

    agent.delete("/api/process/parent");
    assertThat(Await.until(5000, () -> Procs.groupMembers(pgid).isEmpty())).isTrue();
  }

  @Test
  void killAllAlsoStopsChildrenLeftBehindByExecsAndCleanedUpProcesses() throws Exception {
    TestAgent.Response exec = agent.post("/api/execute", obj("command", "sleep 300 & echo x"));
    long execGroup = exec.body().get("pid").asLong();
    long bgGroup = startProcess("forgotten", "sleep 300 & echo ready");
    assertThat(Await.until(5000, () -> agent.isFinished("forgotten"))).isTrue();
    agent.post("/api/process/cleanup", "");
    assertThat(Procs.groupMembers(execGroup)).hasSize(1);
    assertThat(Procs.groupMembers(bgGroup)).hasSize(1);

    agent.delete("/api/process/kill-all");
    assertThat(Procs.groupMembers(execGroup)).isEmpty();
    assertThat(Procs.groupMembers(bgGroup)).isEmpty();
  }

  @Test
  void fiveHundredBackgroundProcessesStartListAndDieWithKillAll() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(8);
    List<Long> pids = new ArrayList<>();
    try {
      List<Future<TestAgent.Response>> starts = new ArrayList<>();
      for (int i = 0; i < 500; i++) {
        String json = obj("argv", List.of("sleep", "300"), "processId", "bulk-" + i);
        starts.add(pool.submit(() -> agent.post("/api/process/start", json)));
      }
      for (Future<TestAgent.Response> f : starts) {
        TestAgent.Response r = f.get();
        assertThat(r.status()).as(String.valueOf(r.body())).isEqualTo(200);
        pids.add(r.body().get("pid").asLong());
      }
    } finally {
      pool.shutdownNow();
    }
    JsonNode running = agent.get("/api/process/list?status=running").body().get("processes");
    assertThat(running).hasSize(500);
    assertThat(pids).allMatch(Procs::alive);

    TestAgent.Response killed = agent.delete("/api/process/kill-all");
    assertThat(killed.body().get("cleanedCount").asInt()).isEqualTo(500);
    assertThat(agent.get("/api/process/list?status=running").body().get("processes")).isEmpty();
    assertThat(agent.get("/api/process/list?status=killed").body().get("processes")).hasSize(500);
    assertThat(Await.until(5000, () -> pids.stream().noneMatch(Procs::alive))).isTrue();
  }

  @Test
  void theProcessCapIsEnforcedWith429() throws Exception {
    try (TestAgent small = TestAgent.start(b -> b.maxProcesses(2))) {
      assertThat(small.post("/api/process/start", obj("command", "sleep 30")).status()).isEqualTo(200);
      assertThat(small.post("/api/process/start", obj("command", "sleep 30")).status()).isEqualTo(200);
      TestAgent.Response third = small.post("/api/process/start", obj("command", "sleep 30"));
      assertThat(third.status()).isEqualTo(429);
      assertThat(third.text("code")).isEqualTo("TOO_MANY_PROCESSES");
      TestAgent.Response exec = small.post("/api/execute", obj("command", "true"));
      assertThat(exec.status()).as("sync execs count too").isEqualTo(429);

      small.delete("/api/process/kill-all");
      assertThat(small.post("/api/execute", obj("command", "echo again")).text("stdout"))
          .as("slots are released when processes end").isEqualTo("again\n");
    }
  }
}
