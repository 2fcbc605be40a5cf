package dev.sandboxsdk;

import dev.sandboxsdk.local.LocalProvider;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandboxsdk.contract.CreatedSandboxes;
import dev.sandboxsdk.contract.ItGitRemote;
import dev.sandboxsdk.contract.ItLifecycleMain;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The lifecycle of named sandboxes of a {@link LocalProvider}: create (with a repository cloned
 * in), shutdown (the agent and its processes gone, the files kept), wake, list from this JVM and
 * from a second one, idle shutdown, destroy. Runs with the default isolation (bubblewrap where it works).
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class LocalProviderIT {
  @TempDir
  Path tmp;

  private final CreatedSandboxes created = new CreatedSandboxes();
  private LocalProvider provider;

  private LocalProvider provider() {
    if (provider == null) {
      provider = LocalProvider.builder().stateDirectory(tmp.resolve("state")).gracePeriod(Duration.ofSeconds(1)).build();
    }
    return provider;
  }

  private ManagedSandbox create(SandboxSpec spec) {
    return created.add(provider().create(spec));
  }

  @AfterEach
  void destroyAll() {
    created.destroyAll();
  }

  @Test
  void aNamedSandboxKeepsItsFilesAcrossShutdownAndWakeAndAnotherJvmFindsIt() throws Exception {
    Instant before = Instant.now();
    ManagedSandbox a;
    try (ItGitRemote remote = ItGitRemote.serve(Files.createDirectories(tmp.resolve("remote")), "127.0.0.1")) {
      a = create(SandboxSpec.builder().name("life-a").network(true).keepAlive()
          .gitRepository(remote.url("127.0.0.1")).label("team", "core").build());
    }
    assertThat(a.id()).isEqualTo("life-a");
    assertThat(a.exec("cat repo/README.md").stdout()).isEqualTo(ItGitRemote.README);
    a.files().writeString("notes.txt", "kept across a shutdown\n");
    String marker = "sleep 4242." + ProcessHandle.current().pid();
    a.startProcess(marker);
    waitFor(() -> commandLineRuns(marker), "the background command to start");

    Path dir = tmp.resolve("state/sandboxes/life-a");
    assertThat(Files.getPosixFilePermissions(dir)).isEqualTo(PosixFilePermissions.fromString("rwx------"));
    assertThat(Files.getPosixFilePermissions(dir.resolve("sandbox.json"))).isEqualTo(PosixFilePermissions.fromString("rw-------"));
    assertThat(Files.readString(dir.resolve("sandbox.json"))).doesNotContain("token");
    SandboxInfo running = only(provider().list());
    assertThat(running.name()).isEqualTo("life-a");
    assertThat(running.state().wireName()).isEqualTo("running");
    assertThat(running.provider()).isEqualTo("local");
    assertThat(running.labels()).containsEntry("team", "core");
    assertThat(running.createdAt()).isBetween(before, Instant.now());
    assertThat(running.lastActivityAt()).isAfterOrEqualTo(running.createdAt());
    assertThat(running.endpoint()).isNotNull();

    Checkpoint saved = a.checkpoints().create("before-shutdown");
    a.files().writeString("notes.txt", "changed after the checkpoint\n");
    long t0 = System.nanoTime();
    a.shutdown();
    long shutdownMs = (System.nanoTime() - t0) / 1_000_000;
    assertThat(commandLineRuns(marker)).as("the sandbox's processes are gone").isFalse();
    assertThat(Files.readString(provider().workspace("life-a").resolve("notes.txt"))).isEqualTo("changed after the checkpoint\n");
    assertThat(Files.list(dir.resolve("checkpoints")).count()).as("the checkpoint is kept, outside the workspace").isPositive();
    SandboxInfo stopped = a.info();
    assertThat(stopped.state().wireName()).isEqualTo("stopped");
    assertThat(stopped.isStopped()).isTrue();
    assertThat(stopped.endpoint()).isNull();
    assertThat(stopped.createdAt()).isEqualTo(running.createdAt());
    assertThat(stopped.lastActivityAt()).isAfterOrEqualTo(running.lastActivityAt());
    assertThatThrownBy(() -> a.exec("true")).isInstanceOf(SandboxException.class)
        .hasMessageContaining("'life-a' is stopped").hasMessageContaining("wake()");
    assertThat(only(provider().list())).satisfies(i -> {
      assertThat(i.state().wireName()).isEqualTo("stopped");
      assertThat(i.lastActivityAt()).isEqualTo(stopped.lastActivityAt());
    });
    a.shutdown(); // a no-op when stopped

    t0 = System.nanoTime();
    a.wake();
    long wakeMs = (System.nanoTime() - t0) / 1_000_000;
    System.out.println("LocalProviderIT: shutdown " + shutdownMs + " ms, wake " + wakeMs + " ms"); // for the report
    assertThat(a.exec("cat notes.txt; cat repo/README.md").stdout())
        .isEqualTo("changed after the checkpoint\n" + ItGitRemote.README);
    assertThat(a.checkpoints().list()).extracting(Checkpoint::id).containsExactly(saved.id());
    a.checkpoints().restore(saved.id(), true);
    assertThat(a.files().readString("notes.txt")).isEqualTo("kept across a shutdown\n");
    assertThat(commandLineRuns(marker)).as("processes do not come back").isFalse();
    assertThat(only(provider().list())).satisfies(i -> {
      assertThat(i.state().wireName()).isEqualTo("running");
      assertThat(i.lastActivityAt()).isAfterOrEqualTo(stopped.lastActivityAt());
    });
    a.wake(); // a no-op when running
    assertThat(provider().get("life-a").orElseThrow().exec("echo shared").stdout()).isEqualTo("shared\n");
    ManagedSandbox second = provider().get("life-a").orElseThrow();
    second.shutdown();
    a.wake();
    assertThatThrownBy(() -> second.exec("true")).isInstanceOf(SandboxException.class)
        .hasMessageContaining("'life-a' runs again").hasMessageContaining("call wake() on this handle");
    second.wake(); // connects again: the agent runs already
    assertThat(second.exec("echo again").stdout()).isEqualTo("again\n");

    ManagedSandbox b = create(SandboxSpec.builder().name("life-b").keepAlive().build());
    b.files().writeString("b.txt", "from the first JVM\n");
    b.shutdown();
    a.close(); // releases the handle; a named sandbox stays
    assertThatThrownBy(a::wake).hasMessageContaining("is closed");
    assertThat(provider().get("life-a").orElseThrow().info().state().wireName()).isEqualTo("running");

    // A second JVM: lists both, cannot use life-a (it runs here), wakes life-b and uses it.
    List<String> out = runChild("list", "exec", "life-a", "echo no", "wake", "life-b", "exec", "life-b", "cat b.txt",
        "list");
    assertThat(out).anyMatch(l -> l.startsWith("SANDBOX life-a running "))
        .anyMatch(l -> l.startsWith("SANDBOX life-b stopped "))
        .anyMatch(l -> l.startsWith("ERROR the local sandbox 'life-a' runs in another JVM (pid "
            + ProcessHandle.current().pid()))
        .contains("WOKE", "EXEC from the first JVM")
        .anyMatch(l -> l.startsWith("SANDBOX life-b running "));
    // The child has exited, and with it the agent it ran: life-b is stopped again, its files kept.
    SandboxInfo bAfter = provider().get("life-b").orElseThrow().info();
    assertThat(bAfter.state().wireName()).isEqualTo("stopped");
    b.wake();
    assertThat(b.exec("cat b.txt").stdout()).isEqualTo("from the first JVM\n");

    // A second JVM that holds life-b: here it is running elsewhere; shutdown() here stops it there.
    b.shutdown();
    Process holder = startChild("wake", "life-b", "hold");
    try (BufferedReader r = new BufferedReader(new InputStreamReader(holder.getInputStream(), StandardCharsets.UTF_8))) {
      assertThat(r.readLine()).isEqualTo("WOKE");
      assertThat(r.readLine()).isEqualTo("HOLDING");
      assertThat(b.info().state().wireName()).isEqualTo("running");
      assertThat(b.info().endpoint()).isNull();
      assertThatThrownBy(() -> b.exec("true")).hasMessageContaining("runs in another JVM (pid " + holder.pid());
      b.shutdown();
      assertThat(b.info().state().wireName()).isEqualTo("stopped");
      b.wake();
      assertThat(b.exec("cat b.txt").stdout()).isEqualTo("from the first JVM\n");
    } finally {
      holder.getOutputStream().close();
      holder.waitFor(30, TimeUnit.SECONDS);
    }

    b.destroy();
    assertThat(Files.exists(tmp.resolve("state/sandboxes/life-b"))).isFalse();
    assertThat(provider().get("life-b")).isEmpty();
    assertThatThrownBy(() -> b.exec("true")).isInstanceOf(IllegalStateException.class);
    provider().get("life-a").orElseThrow().destroy();
    assertThat(provider().list()).isEmpty();
    assertThat(Files.exists(dir)).isFalse();
    assertThat(commandLineRuns(marker)).isFalse();
  }

  @Test
  void anIdleNamedSandboxStopsAndKeepsItsFiles() {
    ManagedSandbox s = create(SandboxSpec.builder().name("idle").idleTimeout(Duration.ofSeconds(1)).build());
    s.files().writeString("idle.txt", "still here\n");
    waitFor(() -> s.info().isStopped(), "the idle sandbox to stop");
    SandboxInfo info = only(provider().list());
    assertThat(info.state().wireName()).isEqualTo("stopped");
    assertThat(info.lastActivityAt()).isNotNull().isAfterOrEqualTo(info.createdAt());
    assertThat(Files.exists(provider().workspace("idle").resolve("idle.txt"))).isTrue();
    assertThatThrownBy(() -> s.exec("true")).hasMessageContaining("is stopped");
    s.wake();
    assertThat(s.exec("cat idle.txt").stdout()).isEqualTo("still here\n");
  }

  @Test
  void anUnnamedSandboxIsRemovedWithItsHandle() {
    ManagedSandbox s = provider().create(SandboxSpec.builder().keepAlive().build());
    assertThat(s.id()).matches("local-[0-9a-f]{12}");
    assertThat(provider().list()).extracting(SandboxInfo::name).containsExactly(s.id());
    s.exec("echo x > x.txt");
    Path ws = provider().workspace(s.id());
    assertThat(Files.exists(ws.resolve("x.txt"))).isTrue();
    s.close();
    assertThat(Files.exists(ws)).isFalse();
    assertThat(provider().list()).isEmpty();
  }

  @Test
  void namesAreUniqueAndAFailedCloneLeavesNothing() {
    create(SandboxSpec.builder().name("twice").keepAlive().build());
    assertThatThrownBy(() -> provider().create(SandboxSpec.builder().name("twice").build()))
        .isInstanceOf(SandboxException.class).hasMessageContaining("named 'twice' exists already");
    assertThatThrownBy(() -> provider().create(SandboxSpec.builder().name("bad-clone").keepAlive()
        .gitRepository("http://127.0.0.1:1/none.git").build())).isInstanceOf(SandboxException.class);
    assertThat(provider().get("bad-clone")).isEmpty();
    assertThat(Files.exists(tmp.resolve("state/sandboxes/bad-clone"))).isFalse();
    assertThatThrownBy(() -> SandboxSpec.builder().name("no/slash")).isInstanceOf(IllegalArgumentException.class);
    assertThat(provider().get("no/slash")).isEqualTo(Optional.empty());
  }

  // ---- helpers

  private static SandboxInfo only(List<SandboxInfo> list) {
    assertThat(list).hasSize(1);
    return list.get(0);
  }

  private static boolean commandLineRuns(String commandLine) {
    return ProcessHandle.allProcesses().anyMatch(p -> p.info().commandLine().map(c -> c.contains(commandLine))
        .orElse(false));
  }

  private static void waitFor(java.util.function.BooleanSupplier condition, String what) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out waiting for " + what);
      }
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError(e);
      }
    }
  }

  private Process startChild(String... actions) throws Exception {
    List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-cp", System.getProperty("java.class.path"), ItLifecycleMain.class.getName(), "local:" + tmp.resolve("state")));
    cmd.addAll(List.of(actions));
    return new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
  }

  private List<String> runChild(String... actions) throws Exception {
    Process child = startChild(actions);
    child.getOutputStream().close();
    String out = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(child.waitFor(60, TimeUnit.SECONDS)).as("the second JVM finishes").isTrue();
    return out.lines().toList();
  }
}
