package dev.sandboxsdk.agent;

import static dev.sandboxsdk.agent.TestAgent.obj;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sandboxsdk.testkit.HostBait;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** Sessions under {@code --isolation bwrap}: the state lives in the sandbox's own /tmp. */
class SessionIsolatedIT extends SessionSuite {
  @RegisterExtension static final TestAgent agent = new TestAgent(b -> b.graceMs(1000).isolation("bwrap"));

  @Override
  TestAgent agent() {
    return agent;
  }

  /**
   * A command replaces the sessions' directory (in its own /tmp, which the agent writes through
   * the host path) with a link to a host directory: creating and deleting sessions afterwards never
   * writes, gives away or deletes anything there.
   */
  @Test
  void aSessionsDirectorySwappedForALinkToTheHostIsNeverWrittenThrough(@TempDir Path tmp) throws Exception {
    HostBait bait = HostBait.plant(tmp.resolve("bait"), 2);
    Files.writeString(bait.dir().resolve("planted.state"), HostBait.SECRET);
    TestAgent.Response swap = agent.post("/api/execute", obj("command", "d=$(ls -d /tmp/sandbox-sessions-*) && "
        + "mv \"$d\" /tmp/moved && ln -s " + bait.dir() + " \"$d\" && ls -ld \"$d\""));
    assertThat(swap.text("stdout")).as(swap.text("stderr")).contains("->");

    TestAgent.Response made = agent.post("/api/sessions", obj("id", "planted"));
    assertThat(made.status()).as(String.valueOf(made.body())).isEqualTo(200);
    assertThat(agent.delete("/api/sessions/planted").status()).isEqualTo(200);
    assertThat(bait.dir().resolve("planted.state.init")).doesNotExist();
    assertThat(bait.dir().resolve("planted.state")).hasContent(HostBait.SECRET);
    assertThat(bait.changes()).containsExactly("new: planted.state"); // the test's own, untouched
    agent.post("/api/execute", obj("command", "d=$(ls -d /tmp/sandbox-sessions-*) && rm \"$d\" && mv /tmp/moved \"$d\""));
  }
}
