package dev.sandboxsdk.container;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.command.InspectContainerResponse;
import com.github.dockerjava.api.exception.NotFoundException;
import dev.sandboxsdk.Checkpoint;
import dev.sandboxsdk.ManagedSandbox;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxInfo;
import dev.sandboxsdk.SandboxSpec;
import dev.sandboxsdk.contract.CreatedSandboxes;
import dev.sandboxsdk.contract.ItGitRemote;
import dev.sandboxsdk.contract.ItLifecycleMain;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Named container sandboxes: create (with a repository cloned in), shutdown (engine stop: the
 * processes gone, the container and its volume kept), wake (engine start), list from this JVM and
 * a second one, idle shutdown, destroy (container and volumes gone).
 */
@ExtendWith(ContainerEngine.class)
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class ContainerLifecycleIT {
  /** Podman's name for the host, as containers on its default network reach it. */
  private static final String HOST_FROM_CONTAINER = System.getProperty("sandbox.test.hostFromContainer",
      "host.containers.internal");

  @TempDir
  Path tmp;

  private final String run = HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt());
  private final CreatedSandboxes created = new CreatedSandboxes();
  private final ContainerProvider provider = ContainerProvider.fromEnvironment();

  @AfterEach
  void destroyAll() {
    created.destroyAll();
    provider.close();
  }

  private ManagedSandbox create(SandboxSpec.Builder spec) {
    return created.add(provider.create(spec.image(ContainerEngine.IMAGE).build()));
  }

  @Test
  void aNamedContainerKeepsItsFilesAcrossShutdownAndWakeAndAnotherJvmFindsIt() throws Exception {
    String name = "life-" + run;
    Instant before = Instant.now().minusSeconds(1);
    ManagedSandbox s;
    try (ItGitRemote remote = ItGitRemote.serve(Files.createDirectories(tmp.resolve("remote")), "0.0.0.0")) {
      s = create(SandboxSpec.builder().name(name).network(true).keepAlive().label("team", "core")
          .gitRepository(remote.url(HOST_FROM_CONTAINER)));
    }
    assertThat(s.exec("cat repo/README.md").stdout()).isEqualTo(ItGitRemote.README);
    s.files().writeString("notes.txt", "kept across a shutdown\n");
    s.startProcess("sleep 4242");
    assertThat(s.exec("pgrep -fx 'sleep 4242' >/dev/null && echo runs").stdout()).isEqualTo("runs\n");

    SandboxInfo running = provider.list().stream().filter(i -> i.name().equals(name)).findFirst().orElseThrow();
    assertThat(running.state().wireName()).isEqualTo("running");
    assertThat(running.labels()).containsEntry("team", "core");
    assertThat(running.createdAt()).isBetween(before, Instant.now());
    assertThat(running.endpoint()).isNotNull();
    assertThat(running.lastActivityAt()).as("the agent's own word").isNotNull().isAfterOrEqualTo(running.createdAt());
    List<String> volumes;
    try (DockerClient docker = ContainerEngine.client()) {
      InspectContainerResponse c = docker.inspectContainerCmd(s.id()).exec();
      assertThat(c.getName()).isEqualTo("/sandbox-" + name);
      volumes = c.getMounts().stream().filter(m -> m.getName() != null).map(InspectContainerResponse.Mount::getName)
          .toList();
      assertThat(volumes).isNotEmpty();
    }

    Checkpoint saved = s.checkpoints().create("before-shutdown");
    long t0 = System.nanoTime();
    s.shutdown();
    long shutdownMs = (System.nanoTime() - t0) / 1_000_000;
    SandboxInfo stopped = s.info();
    assertThat(stopped.state().wireName()).isEqualTo("stopped");
    assertThat(stopped.lastActivityAt()).isNotNull().isAfterOrEqualTo(running.createdAt());
    assertThat(stopped.endpoint()).isNull();
    assertThatThrownBy(() -> s.exec("true")).isInstanceOf(SandboxException.class)
        .hasMessageContaining("is stopped").hasMessageContaining("wake()");
    assertThat(provider.removeExited()).as("named sandboxes are not left-overs").isZero();
    assertThat(provider.get(name)).isPresent();

    t0 = System.nanoTime();
    s.wake();
    long wakeMs = (System.nanoTime() - t0) / 1_000_000;
    System.out.println("ContainerLifecycleIT: shutdown " + shutdownMs + " ms, wake " + wakeMs + " ms"); // for the report
    assertThat(s.exec("cat notes.txt; cat repo/README.md; pgrep -fx 'sleep 4242' || echo no-sleep").stdout())
        .isEqualTo("kept across a shutdown\n" + ItGitRemote.README + "no-sleep\n");
    SandboxInfo woken = s.info();
    assertThat(woken.state().wireName()).isEqualTo("running");
    assertThat(woken.lastActivityAt()).isAfterOrEqualTo(stopped.lastActivityAt());
    assertThat(s.checkpoints().list()).extracting(Checkpoint::id).as("checkpoints survive a stop").containsExactly(saved.id());

    s.shutdown();
    s.close(); // a named container outlives its handle

    // A second JVM finds it stopped by name, wakes it and reads its files; the container keeps running after.
    List<String> out = runChild("list", "wake", name, "exec", name, "cat notes.txt", "list");
    assertThat(out).anyMatch(l -> l.startsWith("SANDBOX " + name + " stopped "))
        .contains("WOKE", "EXEC kept across a shutdown")
        .anyMatch(l -> l.startsWith("SANDBOX " + name + " running "));
    ManagedSandbox again = provider.get(name).orElseThrow();
    assertThat(again.info().state().wireName()).isEqualTo("running");
    assertThat(again.exec("cat notes.txt").stdout()).isEqualTo("kept across a shutdown\n");

    again.destroy();
    assertThat(provider.get(name)).isEmpty();
    assertThat(provider.list()).noneMatch(i -> i.name().equals(name));
    try (DockerClient docker = ContainerEngine.client()) {
      assertThatThrownBy(() -> docker.inspectContainerCmd("sandbox-" + name).exec()).isInstanceOf(NotFoundException.class);
      for (String v : volumes) {
        assertThatThrownBy(() -> docker.inspectVolumeCmd(v).exec()).as("volume " + v).isInstanceOf(NotFoundException.class);
      }
    }
  }

  @Test
  void anIdleNamedContainerStopsAndKeepsItsFiles() throws Exception {
    String name = "idle-" + run;
    ManagedSandbox s = create(SandboxSpec.builder().name(name).idleTimeout(Duration.ofSeconds(2)));
    s.files().writeString("idle.txt", "still here\n");
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (!s.info().isStopped() && System.nanoTime() < deadline) {
      Thread.sleep(250);
    }
    SandboxInfo info = s.info();
    assertThat(info.state().wireName()).isEqualTo("stopped");
    assertThat(info.lastActivityAt()).isNotNull().isAfterOrEqualTo(info.createdAt());
    provider.removeExited();
    s.wake();
    assertThat(s.exec("cat idle.txt").stdout()).isEqualTo("still here\n");
  }

  @Test
  void namesAreUniqueOnTheEngine() {
    String name = "twice-" + run;
    create(SandboxSpec.builder().name(name).keepAlive());
    assertThatThrownBy(() -> create(SandboxSpec.builder().name(name).keepAlive()))
        .isInstanceOf(SandboxException.class).hasMessageContaining("named '" + name + "' exists already");
  }

  private List<String> runChild(String... actions) throws Exception {
    List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-cp", System.getProperty("java.class.path"), ItLifecycleMain.class.getName(), ContainerProvider.class.getName()));
    cmd.addAll(List.of(actions));
    Process child = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    child.getOutputStream().close();
    String out = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(child.waitFor(120, TimeUnit.SECONDS)).as("the second JVM finishes").isTrue();
    return out.lines().toList();
  }
}
