package dev.sandboxsdk.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandboxsdk.SandboxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LocalStateTest {
  @TempDir
  Path tmp;

  @Test
  void aRecordRoundTripsWithPrivateModesAndNoHalfWrittenFile() throws Exception {
    LocalState state = new LocalState(tmp);
    state.createDirectories("box");
    LocalState.Entry e = new LocalState.Entry();
    e.name = "box";
    e.createdAt = Instant.parse("2026-01-02T03:04:05.123Z");
    e.lastActivityAt = Instant.parse("2026-01-02T03:05:00Z");
    e.network = true;
    e.idleTimeoutMs = 60_000L;
    e.env.put("GREETING", "hi");
    e.labels.put("team", "core");
    e.agentArguments.add("--grace-ms=500");
    e.agent(ProcessHandle.current());
    state.write("box", e);

    LocalState.Entry back = state.read("box").orElseThrow();
    assertThat(back.name).isEqualTo("box");
    assertThat(back.createdAt).isEqualTo(e.createdAt);
    assertThat(back.lastActivityAt).isEqualTo(e.lastActivityAt);
    assertThat(back.stoppedAt).isNull();
    assertThat(back.network).isTrue();
    assertThat(back.idleTimeoutMs).isEqualTo(60_000L);
    assertThat(back.env).containsExactly(java.util.Map.entry("GREETING", "hi"));
    assertThat(back.labels).containsEntry("team", "core");
    assertThat(back.agentArguments).containsExactly("--grace-ms=500");
    assertThat(back.agentJvmPid).isEqualTo(ProcessHandle.current().pid());
    assertThat(back.runningAgent()).as("this JVM stands in for a live agent").isPresent();
    assertThat(state.names()).containsExactly("box");

    Path dir = state.dir("box");
    assertThat(Files.getPosixFilePermissions(dir)).isEqualTo(PosixFilePermissions.fromString("rwx------"));
    assertThat(Files.getPosixFilePermissions(state.checkpoints("box"))).isEqualTo(PosixFilePermissions.fromString("rwx------"));
    assertThat(Files.getPosixFilePermissions(dir.resolve(LocalState.RECORD)))
        .isEqualTo(PosixFilePermissions.fromString("rw-------"));
    try (var files = Files.list(dir)) {
      assertThat(files.map(p -> p.getFileName().toString())).doesNotContain(LocalState.RECORD + ".tmp");
    }
  }

  @Test
  void anAgentThatIsGoneOrFromAnotherBootDoesNotRun() throws Exception {
    Process p = new ProcessBuilder("true").start();
    p.waitFor();
    LocalState.Entry gone = new LocalState.Entry();
    gone.agent(p.toHandle());
    assertThat(gone.runningAgent()).isEmpty();

    LocalState.Entry elsewhere = new LocalState.Entry();
    ProcessHandle me = ProcessHandle.current();
    elsewhere.agent = new LocalState.Proc("another-boot/pid:[1]", me.pid(), 0);
    assertThat(elsewhere.runningAgent()).as("a pid from another boot means nothing here").isEmpty();

    LocalState.Entry reused = new LocalState.Entry();
    reused.agent = new LocalState.Proc(Workspaces.where(), me.pid(), 1_000L);
    assertThat(reused.runningAgent()).as("the same pid with another start time is another process").isEmpty();
  }

  @Test
  void namesAreUniqueAndAMissingSandboxHasNoRecordOrLock() {
    LocalState state = new LocalState(tmp);
    state.createDirectories("one");
    assertThatThrownBy(() -> state.createDirectories("one")).isInstanceOf(SandboxException.class)
        .hasMessageContaining("exists already");
    assertThat(state.read("none")).isEmpty();
    assertThat(state.names()).as("a directory without a record is not listed").isEqualTo(List.of());
    assertThatThrownBy(() -> state.locked("none", () -> null)).isInstanceOf(SandboxException.class)
        .hasMessageContaining("no longer exists");
    assertThat(state.locked("one", () -> state.locked("one", () -> "reentrant"))).isEqualTo("reentrant");
  }
}
