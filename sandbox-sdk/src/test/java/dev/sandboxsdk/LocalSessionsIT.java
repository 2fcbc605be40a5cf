package dev.sandboxsdk;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandboxsdk.local.LocalSandbox;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code sandbox.sessions()} on a real {@link LocalSandbox} (isolated by bubblewrap where it
 * works, the default): state carries over through the public API, sessions are isolated,
 * streaming and async run in the session, and the handle's life cycle is what its Javadoc says.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class LocalSessionsIT {
  private static LocalSandbox sandbox;

  @BeforeAll
  static void start() {
    sandbox = LocalSandbox.start();
  }

  @AfterAll
  static void stop() {
    sandbox.close();
  }

  @Test
  void stateCarriesOverAndSessionsAreIsolated() {
    try (Session a = sandbox.sessions().create(SessionOptions.defaults().withEnv("WHO", "a"));
        Session b = sandbox.sessions().create(SessionOptions.defaults().withId("sdk-b").withEnv("WHO", "b"))) {
      assertThat(b.id()).isEqualTo("sdk-b");
      a.exec("mkdir -p d && cd d && export X='x y' && f() { echo \"f:$1\"; } && alias hi='echo hi'").requireSuccess();

      ExecResult r = a.exec("basename \"$PWD\"; echo \"$X $WHO\"; f 1; hi");
      assertThat(r.stdout()).isEqualTo("d\nx y a\nf:1\nhi\n");
      assertThat(b.exec("echo \"${X-none} $WHO\"; type f >/dev/null 2>&1 || echo no-f").stdout())
          .isEqualTo("none b\nno-f\n");
      assertThat(sandbox.exec("echo ${X-none}").stdout()).isEqualTo("none\n");

      ExecResult failed = a.exec("export LATE=1; exit 7");
      assertThat(failed.exitCode()).isEqualTo(7);
      assertThat(a.exec("echo $LATE").stdout()).isEqualTo("1\n");
    }
  }

  @Test
  void aTimeoutStopsTheCommandAndKeepsTheStateBefore() {
    try (Session s = sandbox.sessions().create()) {
      s.exec("export KEEP=1");
      ExecResult r = s.exec(Command.shell("export KEEP=2; sleep 30"), ExecOptions.builder()
          .timeout(Duration.ofMillis(500)).build());
      assertThat(r.timedOut()).isTrue();
      assertThat(s.exec("echo $KEEP").stdout()).isEqualTo("1\n");
    }
  }

  @Test
  void streamAndAsyncRunInTheSession() throws Exception {
    try (Session s = sandbox.sessions().create()) {
      s.exec("export V=streamed");
      RecordingSubscriber<ExecEvent> sub = new RecordingSubscriber<>();
      s.execStream("echo $V; V=after").subscribe(sub);
      sub.request(Long.MAX_VALUE);
      List<ExecEvent> events = sub.takeAllUntilComplete();
      StringBuilder out = new StringBuilder();
      events.stream().filter(e -> e instanceof ExecEvent.Stdout).forEach(e -> out.append(((ExecEvent.Stdout) e).text()));
      assertThat(out).hasToString("streamed\n");
      CompletableFuture<ExecResult> f = s.execAsync(Command.shell("echo $V"), ExecOptions.defaults());
      assertThat(f.get(30, TimeUnit.SECONDS).stdout()).isEqualTo("after\n");
    }
  }

  @Test
  void commandsOfOneSessionTakeTurns() throws Exception {
    try (Session s = sandbox.sessions().create()) {
      s.exec("N=0");
      List<CompletableFuture<ExecResult>> all = new ArrayList<>();
      CountDownLatch go = new CountDownLatch(1);
      for (int i = 0; i < 4; i++) {
        all.add(CompletableFuture.supplyAsync(() -> {
          try {
            go.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          return s.exec("n=$N; sleep 0.2; N=$((n+1))");
        }));
      }
      go.countDown();
      for (CompletableFuture<ExecResult> f : all) {
        assertThat(f.get(60, TimeUnit.SECONDS).exitCode()).isZero();
      }
      // no lost update: each command read the state the one before it saved
      assertThat(s.exec("echo $N").stdout()).isEqualTo("4\n");
    }
  }

  @Test
  void listGetDeleteAndErrors() {
    Session s = sandbox.sessions().create(SessionOptions.defaults().withId("sdk-listed").withCwd("/"));
    assertThat(s.exec("pwd").stdout()).isEqualTo("/\n");
    assertThat(sandbox.sessions().list()).extracting(SessionInfo::id).contains("sdk-listed");
    SessionInfo info = s.info();
    assertThat(info.commandCount()).isEqualTo(1);
    assertThat(info.busy()).isFalse();
    Session again = sandbox.sessions().get("sdk-listed").orElseThrow();
    assertThat(again.exec("pwd").stdout()).isEqualTo("/\n");

    assertThatThrownBy(() -> sandbox.sessions().create(SessionOptions.defaults().withId("sdk-listed")))
        .isInstanceOf(SandboxConflictException.class)
        .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo("SESSION_ALREADY_EXISTS"));
    assertThatThrownBy(() -> sandbox.sessions().create(SessionOptions.defaults().withId("no/slash")))
        .isInstanceOf(SandboxInvalidRequestException.class);

    s.delete();
    s.close(); // idempotent after delete
    assertThat(sandbox.sessions().get("sdk-listed")).isEmpty();
    assertThatThrownBy(() -> again.exec("true"))
        .isInstanceOf(SandboxNotFoundException.class)
        .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo("SESSION_NOT_FOUND"));
    assertThatThrownBy(() -> sandbox.sessions().delete("sdk-listed")).isInstanceOf(SandboxNotFoundException.class);
  }
}
