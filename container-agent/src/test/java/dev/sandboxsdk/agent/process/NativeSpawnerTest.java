package dev.sandboxsdk.agent.process;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NativeSpawnerTest {
  @TempDir Path dir;

  private Path file(String relative, String perms) throws IOException {
    Path p = dir.resolve(relative);
    Files.createDirectories(p.getParent());
    Files.writeString(p, "#!/bin/sh\n");
    Files.setPosixFilePermissions(p, PosixFilePermissions.fromString(perms));
    return p;
  }

  @Test
  void programsAreLookedUpLikeExecvpInTheCommandsPathRelativeToItsDirectory() throws IOException {
    file("first/tool", "rw-r--r--"); // not executable: skipped, as execvp does
    Path second = file("second/tool", "rwxr-xr-x");
    assertThat(NativeSpawner.resolve("tool", dir, "first:second")).isEqualTo(second.toString());
    assertThat(NativeSpawner.resolve("tool", dir, dir + "/first:" + dir + "/second")).isEqualTo(second.toString());
  }

  @Test
  void aNameWithASlashIsUsedAsItIsAndAMissingOneStaysBare() {
    assertThat(NativeSpawner.resolve("./tool", dir, "/usr/bin")).isEqualTo("./tool");
    assertThat(NativeSpawner.resolve("/bin/sh", dir, "")).isEqualTo("/bin/sh");
    assertThat(NativeSpawner.resolve("no-such-tool-here", dir, "/usr/bin:/bin")).isEqualTo("no-such-tool-here");
  }

  @Test
  void anEmptyPathEntryIsTheCommandsDirectory() throws IOException {
    Path here = file("tool", "rwxr-xr-x");
    assertThat(Path.of(NativeSpawner.resolve("tool", dir, "/nonexistent::/usr/bin")).normalize()).isEqualTo(here);
  }

  @Test
  void exitValuesFollowTheJdkExitStatusOr128PlusTheSignal() {
    NativeProcess exited = new NativeProcess(1, -1);
    assertThatThrownBy(exited::exitValue).isInstanceOf(IllegalThreadStateException.class);
    assertThat(exited.isAlive()).isTrue();
    exited.exited(3 << 8);
    assertThat(exited.exitValue()).isEqualTo(3);
    assertThat(exited.isAlive()).isFalse();
    assertThat(exited.onExit()).isCompleted();

    NativeProcess killed = new NativeProcess(2, -1);
    killed.exited(15);
    assertThat(killed.exitValue()).isEqualTo(143);

    NativeProcess dumped = new NativeProcess(3, -1);
    dumped.exited(0x80 | 6); // SIGABRT with a core dump
    assertThat(dumped.exitValue()).isEqualTo(134);
  }
}
