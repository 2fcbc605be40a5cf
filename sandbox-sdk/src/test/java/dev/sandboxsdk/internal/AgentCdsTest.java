package dev.sandboxsdk.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AgentCdsTest {
  @TempDir
  Path tmp;
  private Path jar;
  private Path dir;

  @BeforeEach
  void setUp() throws Exception {
    jar = Files.write(tmp.resolve("agent.jar"), new byte[] {1, 2, 3});
    dir = tmp.resolve("cds");
    System.setProperty(AgentCds.DIR_PROPERTY, dir.toString());
  }

  @AfterEach
  void tearDown() {
    System.clearProperty(AgentCds.DIR_PROPERTY);
    System.clearProperty(AgentCds.PROPERTY);
  }

  @Test
  void theFirstLaunchDumpsAndTheArchiveIsUsedOnlyOnceTheAgentExitedNormally() throws Exception {
    AgentCds.Plan first = AgentCds.plan(true, jar.toString(), List.of());
    assertThat(first.jvmOptions()).singleElement().asString().startsWith("-XX:ArchiveClassesAtExit=" + dir);
    assertThat(Files.getPosixFilePermissions(dir)).hasSize(3); // rwx for the owner only

    Files.write(first.dump(), new byte[] {9, 9});
    first.agentExited(137); // killed: the dump may be cut
    assertThat(first.dump()).doesNotExist();
    assertThat(first.archive()).doesNotExist();

    AgentCds.Plan second = AgentCds.plan(true, jar.toString(), List.of());
    assertThat(second.archive()).isEqualTo(first.archive());
    Files.write(second.dump(), new byte[] {9, 9});
    second.agentExited(143); // SIGTERM: the JVM dumps on that exit path too
    assertThat(second.archive()).hasBinaryContent(new byte[] {9, 9});
    assertThat(second.dump()).doesNotExist();

    AgentCds.Plan third = AgentCds.plan(true, jar.toString(), List.of());
    assertThat(third.jvmOptions()).containsExactly("-XX:SharedArchiveFile=" + second.archive());
    assertThat(third.dump()).isNull();
  }

  @Test
  void anotherJarOrJdkBuildGetsAnotherArchive() throws Exception {
    String before = AgentCds.key(jar.toString());
    Files.setLastModifiedTime(jar, FileTime.fromMillis(Files.getLastModifiedTime(jar).toMillis() - 60_000));
    String touched = AgentCds.key(jar.toString());
    Files.write(jar, new byte[] {1, 2, 3, 4});
    String rebuilt = AgentCds.key(jar.toString());
    assertThat(List.of(before, touched, rebuilt)).doesNotHaveDuplicates();
    Path other = Files.write(tmp.resolve("jackson.jar"), new byte[] {5});
    assertThat(AgentCds.key(jar + File.pathSeparator + other)).isNotEqualTo(rebuilt);
  }

  @Test
  void noArchiveForADirectoryAnotherJavaTheCallersOwnCdsOptionsOrWhenTurnedOff() throws Exception {
    Path classes = Files.createDirectory(tmp.resolve("classes"));
    assertThat(AgentCds.plan(true, jar + File.pathSeparator + classes, List.of()).jvmOptions()).isEmpty();
    assertThat(AgentCds.plan(false, jar.toString(), List.of()).jvmOptions()).isEmpty();
    assertThat(AgentCds.plan(true, jar.toString(), List.of("-Xshare:off")).jvmOptions()).isEmpty();
    assertThat(AgentCds.plan(true, jar.toString(), List.of("-XX:SharedArchiveFile=/x.jsa")).jvmOptions()).isEmpty();
    System.setProperty(AgentCds.PROPERTY, "false");
    assertThat(AgentCds.plan(true, jar.toString(), List.of()).jvmOptions()).isEmpty();
    assertThat(dir).doesNotExist();
  }

  @Test
  void abandonedDumpsAndLongUnusedArchivesAreRemovedWhenANewArchiveIsPlanned() throws Exception {
    Files.createDirectories(dir);
    Path abandoned = Files.write(dir.resolve("agent-old.1234.dump"), new byte[] {1});
    Path fresh = Files.write(dir.resolve("agent-new.5678.dump"), new byte[] {1});
    Path unused = Files.write(dir.resolve("agent-0123456789ab.jsa"), new byte[] {1});
    long now = System.currentTimeMillis();
    Files.setLastModifiedTime(abandoned, FileTime.fromMillis(now - 2 * 3600_000L));
    Files.setLastModifiedTime(unused, FileTime.fromMillis(now - 31L * 24 * 3600_000L));
    AgentCds.plan(true, jar.toString(), List.of());
    assertThat(abandoned).doesNotExist();
    assertThat(unused).doesNotExist();
    assertThat(fresh).exists(); // another launch may still be dumping
  }
}
