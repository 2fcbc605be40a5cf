package dev.sandboxsdk.agent;

import static dev.sandboxsdk.agent.TestAgent.obj;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Sessions as the container image runs them: the agent is root with only CAP_SETUID, CAP_SETGID,
 * CAP_SETPCAP and CAP_KILL (no CAP_CHOWN, no CAP_DAC_OVERRIDE), commands run as an unprivileged
 * uid. The commands must be able to save the state, the agent to remove it. Needs root: skipped
 * otherwise.
 */
class SessionCommandUserIT {
  static Path dir;
  static LaunchedAgent agent;
  static long uid;

  @BeforeAll
  static void startAgent() throws Exception {
    CommandUserIT.assumeRootWithSetpriv();
    uid = CommandUserIT.unusedUid();
    dir = Files.createTempDirectory("session-user-it");
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx--x--x"));
    Path workspace = Files.createDirectory(dir.resolve("ws"));
    Files.setAttribute(workspace, "unix:uid", (int) uid);
    Files.setAttribute(workspace, "unix:gid", (int) uid);
    agent = LaunchedAgent.start(CommandUserIT.CONTAINER_ROOT, Map.of(), dir.resolve("agent.log"),
        "--grace-ms", "1000", "--workspace", workspace.toString(), "--command-user", uid + ":" + uid);
  }

  @AfterAll
  static void stop() throws Exception {
    if (agent != null) {
      agent.close();
    }
    if (dir != null) {
      try (Stream<Path> files = Files.walk(dir)) {
        files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }

  @Test
  void theCommandUserSavesTheStateAndTheAgentRemovesIt() throws Exception {
    JsonNode created = agent.ok("POST", "/api/sessions", obj("id", "user-session", "env", Map.of("START", "yes")));
    assertThat(created.get("sessionId").asText()).isEqualTo("user-session");

    JsonNode first = agent.exec(obj("command", "id -u; echo $START; export NEXT=1; cd /tmp", "sessionId",
        "user-session"));
    assertThat(first.get("stdout").asText()).isEqualTo(uid + "\nyes\n");
    assertThat(first.get("stderr").asText()).isEmpty();
    JsonNode second = agent.exec(obj("command", "echo $START $NEXT; pwd", "sessionId", "user-session"));
    assertThat(second.get("stdout").asText()).isEqualTo("yes 1\n/tmp\n");
    assertThat(second.get("stderr").asText()).isEmpty();

    Path stateDir;
    try (Stream<Path> dirs = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
      stateDir = dirs.filter(p -> p.getFileName().toString().startsWith("sandbox-sessions-"))
          .filter(p -> Files.exists(p.resolve("user-session.state"))).findFirst().orElseThrow();
    }
    assertThat(Files.getAttribute(stateDir.resolve("user-session.state"), "unix:uid")).isEqualTo((int) uid);
    agent.ok("DELETE", "/api/sessions/user-session", null);
    try (Stream<Path> left = Files.list(stateDir)) {
      assertThat(left).isEmpty();
    }
  }
}
