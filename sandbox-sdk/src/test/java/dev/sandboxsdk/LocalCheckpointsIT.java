package dev.sandboxsdk;

import dev.sandboxsdk.local.LocalSandbox;
import dev.sandboxsdk.local.Isolation;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Where a {@link LocalSandbox} keeps checkpoints: a directory given with {@code
 * checkpointDirectory} outlives the sandbox, so a later sandbox on the same workspace restores
 * them; isolated commands cannot see it; without one they go with the sandbox.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class LocalCheckpointsIT {
  @TempDir
  Path tmp;

  @Test
  void aGivenDirectoryKeepsCheckpointsForTheNextSandboxAndIsHiddenFromIsolatedCommands() throws Exception {
    Path ws = tmp.resolve("ws");
    Path dir = tmp.resolve("checkpoints");
    Checkpoint c;
    try (LocalSandbox first = LocalSandbox.builder().workspace(ws).checkpointDirectory(dir).start()) {
      first.files().writeString("notes.txt", "first version\n");
      c = first.checkpoints().create("kept");
      assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(dir))).isEqualTo("rwx------");
      if (first.isolation() == Isolation.ISOLATED) {
        // bubblewrap shows commands the workspace and their own /tmp, not the host's directories.
        ExecResult look = first.exec(Command.of("ls", dir.toString()), ExecOptions.defaults());
        assertThat(look.exitCode()).as("%s", look).isNotZero();
      }
    }
    try (LocalSandbox second = LocalSandbox.builder().workspace(ws).checkpointDirectory(dir).start()) {
      assertThat(second.checkpoints().list()).containsExactly(c);
      second.files().writeString("notes.txt", "second version\n");
      second.files().writeString("later.txt", "made after the checkpoint\n");
      second.checkpoints().restore(c.id());
      assertThat(second.files().readString("notes.txt")).isEqualTo("first version\n");
      assertThat(second.files().exists("later.txt")).isFalse();
      second.checkpoints().delete(c.id());
      try (Stream<Path> left = Files.list(dir)) {
        assertThat(left).isEmpty();
      }
    }
  }

  @Test
  void withoutADirectoryCheckpointsGoWithTheSandbox() throws Exception {
    Path ws = tmp.resolve("ws2");
    try (LocalSandbox first = LocalSandbox.builder().workspace(ws).start()) {
      first.files().writeString("a.txt", "a\n");
      assertThat(first.checkpoints().create("temporary").sizeBytes()).isPositive();
      assertThat(first.checkpoints().list()).hasSize(1);
    }
    try (LocalSandbox second = LocalSandbox.builder().workspace(ws).start()) {
      assertThat(second.checkpoints().list()).isEmpty();
      assertThat(second.files().readString("a.txt")).isEqualTo("a\n");
    }
  }
}
