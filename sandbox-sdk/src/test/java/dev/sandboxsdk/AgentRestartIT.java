package dev.sandboxsdk;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The agent is restarted on the same port: handles and log streams of the old run fail with an
 * error that says so, because every answer carries the agent's boot id ({@code Sandbox-Boot-Id})
 * and the client remembers the first one it saw.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class AgentRestartIT {

  @Test
  void everyAnswerCarriesABootIdThatIsNewForEachRunAndVersionReportsIt() throws Exception {
    String first;
    int port;
    try (ItAgent agent = ItAgent.start()) {
      port = agent.url().getPort();
      first = bootIdOf(agent, "/api/ping", null);
      assertThat(first).as("boot id of an unauthenticated answer").isNotBlank();
      assertThat(bootIdOf(agent, "/api/version", agent.token())).isEqualTo(first);
      assertThat(bootIdOf(agent, "/api/version", "wrong-token")).as("a 401 carries it too").isEqualTo(first);
      try (Sandbox client = agent.connect(agent.url())) {
        assertThat(client.exec("true").exitCode()).isZero();
      }
    }
    try (ItAgent again = ItAgent.start(port, "it-" + UUID.randomUUID())) {
      assertThat(bootIdOf(again, "/api/ping", null)).as("boot id after a restart").isNotEqualTo(first);
    }
  }

  @Test
  void aRestartWithANewTokenFailsOldHandlesWithSandboxAuthExceptionSayingTheAgentWasRestarted() throws Exception {
    ItAgent agent = ItAgent.start();
    int port = agent.url().getPort();
    try (Sandbox client = agent.connect(agent.url())) {
      SandboxProcess p = client.startProcess("echo up; sleep 60");
      LogTail tail = new LogTail();
      client.streamProcessLogs(p.id()).subscribe(tail);
      assertThat(tail.firstOutput.get(10, TimeUnit.SECONDS)).isEqualTo("up\n");

      agent.close(); // SIGTERM: the agent stops its processes and exits
      try (ItAgent restarted = ItAgent.start(port, "it-" + UUID.randomUUID())) {
        assertThat(restarted.url().getPort()).isEqualTo(port);

        Throwable info = catchThrowable(p::info);
        Throwable stream = new LogTail().openAndAwaitError(client, p.id());
        Throwable old = tail.end.handle((v, t) -> t).get(30, TimeUnit.SECONDS);

        System.out.printf("[it] restart with a new token: handle -> %s; new log stream -> %s; the stream open"
            + " across the stop -> %s, %s%n", info, stream, tail.exit.getNow(null), old == null ? "onComplete" : old);
        assertThat(info).isInstanceOf(SandboxAuthException.class).hasMessageContaining("was restarted");
        assertThat(stream).isInstanceOf(SandboxAuthException.class).hasMessageContaining("was restarted");
        // An orderly stop kills the process first, so the open stream saw its end and completed.
        assertThat(old).as("the open stream ended normally").isNull();
        assertThat(tail.exit.getNow(null)).isNotNull()
            .satisfies(exit -> assertThat(exit.status()).isEqualTo(ProcessStatus.KILLED));
      }
    } finally {
      agent.close();
    }
  }

  @Test
  void aRestartWithTheSameTokenFailsOldHandlesWithProcessNotFoundSayingTheAgentWasRestarted() throws Exception {
    String token = "it-" + UUID.randomUUID();
    ItAgent agent = ItAgent.start(0, token);
    int port = agent.url().getPort();
    try (Sandbox client = agent.connect(agent.url())) {
      SandboxProcess p = client.startProcess("echo up; sleep 60");
      LogTail tail = new LogTail();
      client.streamProcessLogs(p.id()).subscribe(tail);
      assertThat(tail.firstOutput.get(10, TimeUnit.SECONDS)).isEqualTo("up\n");

      agent.kill(); // a crash: the open stream breaks and starts reconnecting
      long t0 = System.nanoTime();
      try (ItAgent restarted = ItAgent.start(port, token)) {
        long restartMillis = (System.nanoTime() - t0) / 1_000_000;
        Throwable info = catchThrowable(p::info);
        Throwable kill = catchThrowable(p::kill);
        Throwable stream = new LogTail().openAndAwaitError(client, p.id());
        Throwable old = tail.end.handle((v, t) -> t).get(30, TimeUnit.SECONDS);
        System.out.printf("[it] restart with the same token (after %d ms): handle -> %s; kill -> %s; new log stream"
            + " -> %s; the stream open across the crash -> %s%n", restartMillis, info, kill, stream, old);
        // It reconnects for about 3 s: it meets the new agent (and its 404) if that was up by
        // then, else it gives up with the connection error.
        assertThat(old).isInstanceOfAny(ProcessNotFoundException.class, SandboxConnectionException.class);
        if (old instanceof ProcessNotFoundException) {
          assertThat(old).hasMessageContaining("was restarted");
        }

        assertThat(info).isInstanceOf(ProcessNotFoundException.class).hasMessageContaining("was restarted");
        assertThat(kill).isInstanceOf(ProcessNotFoundException.class).hasMessageContaining("was restarted");
        assertThat(stream).isInstanceOf(ProcessNotFoundException.class).hasMessageContaining("was restarted");
        assertThat(client.exec("echo works").stdout()).as("the client itself keeps working").isEqualTo("works\n");
      }
    } finally {
      agent.close();
    }
  }

  @Test
  void anUnknownProcessOnTheSameRunSaysNothingAboutARestart() throws Exception {
    try (ItAgent agent = ItAgent.start(); Sandbox client = agent.connect(agent.url())) {
      assertThat(client.exec("true").exitCode()).isZero();
      Throwable t = catchThrowable(() -> client.killProcess("no-such-process", Signal.SIGTERM));
      assertThat(t).isInstanceOf(ProcessNotFoundException.class);
      assertThat(t.getMessage()).doesNotContain("restarted");
    }
  }

  private static String bootIdOf(ItAgent agent, String path, String token) throws Exception {
    OkHttpClient http = new OkHttpClient();
    Request.Builder r = new Request.Builder().url(agent.url().resolve(path).toString());
    if (token != null) {
      r.header("Authorization", "Bearer " + token);
    }
    try (Response response = http.newCall(r.build()).execute()) {
      return response.header("Sandbox-Boot-Id");
    } finally {
      http.dispatcher().executorService().shutdown();
      http.connectionPool().evictAll();
    }
  }

  /** Subscribes to a log stream; records the first output and how it ends. */
  private static final class LogTail implements Flow.Subscriber<LogEvent> {
    final CompletableFuture<String> firstOutput = new CompletableFuture<>();
    final CompletableFuture<Void> end = new CompletableFuture<>();
    final CompletableFuture<LogEvent.Exit> exit = new CompletableFuture<>();

    Throwable openAndAwaitError(Sandbox client, String id) throws Exception {
      client.streamProcessLogs(id).subscribe(this);
      return end.handle((v, t) -> t).get(20, TimeUnit.SECONDS);
    }

    @Override
    public void onSubscribe(Flow.Subscription s) {
      s.request(Long.MAX_VALUE);
    }

    @Override
    public void onNext(LogEvent e) {
      if (e instanceof LogEvent.Exit) {
        exit.complete((LogEvent.Exit) e);
      }
      if (e instanceof LogEvent.Output) {
        firstOutput.complete(((LogEvent.Output) e).text());
      }
    }

    @Override
    public void onError(Throwable t) {
      end.completeExceptionally(t);
    }

    @Override
    public void onComplete() {
      end.complete(null);
    }
  }
}
