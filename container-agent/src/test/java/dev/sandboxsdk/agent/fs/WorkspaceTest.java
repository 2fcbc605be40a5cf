package dev.sandboxsdk.agent.fs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Resolution from the workspace's descriptor: links inside are followed, links out never. */
class WorkspaceTest {
  @TempDir
  Path tmp;
  Path ws;
  Path host;
  Workspace workspace;

  @BeforeEach
  void setUp() throws Exception {
    ws = Files.createDirectory(tmp.resolve("ws"));
    host = Files.createDirectory(tmp.resolve("host"));
    Files.writeString(host.resolve("secret"), "HOST");
    Files.createDirectories(ws.resolve("a/b"));
    Files.writeString(ws.resolve("a/b/file"), "inside");
    workspace = Workspace.open(ws, null);
  }

  @Test
  void aPathInsideIsHeldByItsDirectoryAndReadThroughIt() throws Exception {
    try (Anchor a = workspace.resolve("path", "a/b/file", true, false)) {
      assertThat(a.name()).isEqualTo("file");
      assertThat(a.logical()).isEqualTo(ws.toRealPath().resolve("a/b/file"));
      assertThat(Files.readString(a.path())).isEqualTo("inside");
    }
    try (Anchor a = workspace.resolve("path", ws + "/a/b", true, false)) {
      assertThat(a.name()).as("a directory is held itself").isNull();
      assertThat(Files.isDirectory(a.path())).isTrue();
    }
  }

  @Test
  void linksInsideTheWorkspaceAreFollowedRelativeAndAbsolute() throws Exception {
    Files.createSymbolicLink(ws.resolve("rel"), Path.of("a/b"));
    Files.createSymbolicLink(ws.resolve("abs"), ws.resolve("a"));
    try (Anchor a = workspace.resolve("path", "rel/file", true, false)) {
      assertThat(Files.readString(a.path())).isEqualTo("inside");
      assertThat(a.logical()).isEqualTo(ws.toRealPath().resolve("a/b/file"));
    }
    try (Anchor a = workspace.resolve("path", "abs/b/file", true, false)) {
      assertThat(Files.readString(a.path())).isEqualTo("inside");
    }
    try (Anchor a = workspace.resolve("path", "rel", false, false)) {
      assertThat(Files.isSymbolicLink(a.path())).as("not followed at the end when asked").isTrue();
    }
  }

  @Test
  void linksLeadingOutAreRefusedWithoutNamingWhereTheyLead() throws Exception {
    Files.createSymbolicLink(ws.resolve("out"), host);
    Files.createSymbolicLink(ws.resolve("proc"), Path.of("/proc/self"));
    Files.createSymbolicLink(ws.resolve("up"), Path.of("../host"));
    Files.createSymbolicLink(ws.resolve("missing"), tmp.resolve("no-such-dir"));
    for (String p : new String[] {"out/secret", "proc/environ", "up/secret", "out", "missing/x", "missing"}) {
      assertThatThrownBy(() -> workspace.resolve("path", p, true, false).close())
          .as(p).isInstanceOfSatisfying(AgentException.class, e -> {
            assertThat(e.code()).isEqualTo(ErrorCode.PERMISSION_DENIED);
            assertThat(e.getMessage()).doesNotContain(host.toString()).doesNotContain("no-such-dir")
                .doesNotContain("/proc");
          });
    }
    assertThatThrownBy(() -> workspace.resolve("path", "../host/secret", true, false))
        .isInstanceOfSatisfying(AgentException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.PERMISSION_DENIED));
  }

  @Test
  void missingDirectoriesAreMadeOnlyWhenAsked() throws Exception {
    assertThatThrownBy(() -> workspace.resolve("path", "x/y/z", false, false))
        .isInstanceOfSatisfying(AgentException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.FILE_NOT_FOUND));
    try (Anchor a = workspace.resolve("path", "x/y/z", false, true)) {
      assertThat(a.name()).isEqualTo("z");
      assertThat(Files.isDirectory(ws.resolve("x/y"), LinkOption.NOFOLLOW_LINKS)).isTrue();
    }
  }

  @Test
  void aLoopOfLinksFailsAsALoop() throws Exception {
    Files.createSymbolicLink(ws.resolve("loop1"), Path.of("loop2"));
    Files.createSymbolicLink(ws.resolve("loop2"), Path.of("loop1"));
    assertThatThrownBy(() -> workspace.resolve("path", "loop1/x", true, false))
        .isInstanceOfSatisfying(AgentException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.TOO_MANY_LINKS));
  }

  @Test
  void aRecursiveListOfAChainDeeperThanTheCapIsRefusedNotAStackOverflow() throws Exception {
    Path d = ws;
    for (int i = 0; i < Tree.MAX_DEPTH + 20; i++) {
      d = Files.createDirectory(d.resolve("d"));
    }
    try (Anchor a = workspace.resolve("path", ".", true, false)) {
      assertThatThrownBy(() -> Tree.list(a, true, true, "path", ".", e -> true))
          .isInstanceOfSatisfying(AgentException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.PAYLOAD_TOO_LARGE));
    }
  }
}
