package dev.sandboxsdk;

import dev.sandboxsdk.local.LocalSandbox;
import dev.sandboxsdk.local.Isolation;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sandboxsdk.testkit.Await;
import dev.sandboxsdk.testkit.Procs;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The agent dies (SIGKILL) or freezes (SIGSTOP, for longer than the liveness window) while a
 * call is in flight: every kind of call ends with {@link SandboxConnectionException} or
 * {@link SandboxTimeoutException} within its documented bound, never with a success and never
 * hanging. A frozen agent that is resumed (SIGCONT) serves again and has killed the command of a
 * call whose connection the client gave up on.
 *
 * <p>The agent runs with a keep-alive of 250 ms, so the SDK's liveness window is
 * 2 x 250 + 1000 = 1500 ms.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class AgentFaultsIT {
  private static final long KEEP_ALIVE_MS = 250;
  private static final long WINDOW_MS = 2 * KEEP_ALIVE_MS + 1000;
  /** LogCursor's reconnect backoff: 100 + 200 + 400 + 800 + 1600 ms. */
  private static final long LOG_BACKOFF_MS = 3100;
  private static final long LOG_RETRIES = 5;
  /** Slack for a loaded machine on top of every bound. */
  private static final long SLACK_MS = 5000;
  private static final AtomicInteger IDS = new AtomicInteger();

  enum Fault { SIGKILL, SIGSTOP }

  enum Call { EXEC, EXEC_ASYNC, EXEC_STREAM, STREAM_PROCESS_LOGS }

  @ParameterizedTest(name = "{0} during {1}")
  @EnumSource(Fault.class)
  void execEndsWithAConnectionOrTimeoutErrorWithinItsBound(Fault fault) throws Exception {
    run(fault, Call.EXEC);
  }

  @ParameterizedTest(name = "{0} during execAsync")
  @EnumSource(Fault.class)
  void execAsyncEndsWithAConnectionOrTimeoutErrorWithinItsBound(Fault fault) throws Exception {
    run(fault, Call.EXEC_ASYNC);
  }

  @ParameterizedTest(name = "{0} during execStream")
  @EnumSource(Fault.class)
  void execStreamEndsWithAConnectionOrTimeoutErrorWithinItsBound(Fault fault) throws Exception {
    run(fault, Call.EXEC_STREAM);
  }

  @ParameterizedTest(name = "{0} during streamProcessLogs")
  @EnumSource(Fault.class)
  void streamProcessLogsEndsWithAConnectionOrTimeoutErrorWithinItsBound(Fault fault) throws Exception {
    run(fault, Call.STREAM_PROCESS_LOGS);
  }

  /**
   * A client from {@code Sandbox.builder()} whose first call is the exec has never asked
   * {@code /api/version} for the window: the keep-alive header on the exec's own answer tells it,
   * so a frozen agent is noticed within the window, not after the 31 s allowed for the longest
   * keep-alive the protocol permits.
   */
  @Test
  void aFreshRemoteClientsFirstExecNoticesAFrozenAgentWithinTheWindow() throws Exception {
    LocalSandbox local = LocalSandbox.builder().isolation(Isolation.NONE).keepAlive(true)
        .gracePeriod(Duration.ofMillis(500)).agentArgument("--keep-alive-ms=" + KEEP_ALIVE_MS).start();
    long agentPid = local.agentPid();
    java.lang.reflect.Field field = LocalSandbox.class.getDeclaredField("agent");
    field.setAccessible(true);
    String token = ((dev.sandboxsdk.internal.AgentLauncher.Agent) field.get(local)).token();
    boolean stopped = false;
    try (Sandbox remote = Sandbox.builder().baseUrl(local.baseUrl()).token(token).build()) {
      CompletableFuture<Object> outcome = CompletableFuture.supplyAsync(
          () -> remote.exec("echo $$ > fresh.pid; exec sleep 60"));
      long commandPid = Procs.readPid(local.workspace().resolve("fresh.pid"), Duration.ofSeconds(20));
      Thread.sleep(3 * KEEP_ALIVE_MS);
      assertThat(outcome).isNotDone();

      long t0 = System.nanoTime();
      signal("STOP", agentPid);
      stopped = true;
      Throwable error = awaitFailure(outcome, WINDOW_MS + SLACK_MS);
      long millis = (System.nanoTime() - t0) / 1_000_000;
      System.out.printf("[it] SIGSTOP during a fresh remote client's first exec: %s after %d ms (window %d ms)%n",
          error.getClass().getSimpleName(), millis, WINDOW_MS);
      assertThat(error).isInstanceOfAny(SandboxConnectionException.class, SandboxTimeoutException.class);
      assertThat(millis).as("within the window plus slack, not 31 s").isLessThan(WINDOW_MS + SLACK_MS);
      signal("CONT", agentPid);
      stopped = false;
      assertThat(Await.until(Duration.ofSeconds(10), () -> !Procs.alive(commandPid)))
          .as("the agent killed the command of the call the client gave up on").isTrue();
    } finally {
      if (stopped) {
        signal("CONT", agentPid);
      }
      local.close();
    }
  }

  /** The documented bound: how long after the fault the call must have ended. */
  private static long boundMillis(Fault fault, Call call) {
    if (call == Call.STREAM_PROCESS_LOGS) {
      // The stream and each of its reconnects wait one window (SIGSTOP: the kernel still accepts
      // connections, nobody answers) or fail at once (SIGKILL: refused), with backoff in between.
      return (fault == Fault.SIGSTOP ? (LOG_RETRIES + 1) * WINDOW_MS : 0) + LOG_BACKOFF_MS;
    }
    return fault == Fault.SIGSTOP ? WINDOW_MS : 0;
  }

  private static void run(Fault fault, Call call) throws Exception {
    // Unisolated: the test watches the command by the host pid it writes (isolated, $$ is a pid in
    // the command's own namespace).
    LocalSandbox sandbox = LocalSandbox.builder().isolation(Isolation.NONE).keepAlive(true).gracePeriod(Duration.ofMillis(500))
        .agentArgument("--keep-alive-ms=" + KEEP_ALIVE_MS).start();
    long agentPid = sandbox.agentPid();
    String pidFile = "fault-" + IDS.incrementAndGet() + ".pid";
    Path pidPath = sandbox.workspace().resolve(pidFile);
    // The command writes its pid, then becomes a long sleep (same pid, own process group).
    String script = "echo $$ > " + pidFile + "; exec sleep 60";
    long commandPid = -1;
    boolean stopped = false;
    try {
      CompletableFuture<Object> outcome = start(sandbox, call, script);
      commandPid = Procs.readPid(pidPath, Duration.ofSeconds(20));
      Thread.sleep(3 * KEEP_ALIVE_MS); // the call is past its first heartbeat or keep-alive
      assertThat(outcome).as("the call is still running before the fault").isNotDone();

      long t0 = System.nanoTime();
      signal(fault == Fault.SIGKILL ? "KILL" : "STOP", agentPid);
      stopped = fault == Fault.SIGSTOP;
      long bound = boundMillis(fault, call);
      Throwable error = awaitFailure(outcome, bound + SLACK_MS);
      long millis = (System.nanoTime() - t0) / 1_000_000;

      System.out.printf("[it] fault %s during %s: %s after %d ms (documented bound %d ms)%n", fault, call,
          error.getClass().getSimpleName(), millis, bound);
      assertThat(error).as("what %s sees after %s", call, fault)
          .isInstanceOfAny(SandboxConnectionException.class, SandboxTimeoutException.class);
      if (fault == Fault.SIGSTOP) {
        // The window counts from the last byte (a heartbeat or keep-alive), up to one interval before the fault.
        assertThat(millis).as("not before the liveness window").isGreaterThanOrEqualTo(WINDOW_MS - KEEP_ALIVE_MS - 100);
      }
      assertThat(millis).as("ended within the bound plus slack").isLessThan(bound + SLACK_MS);

      if (fault == Fault.SIGSTOP) {
        signal("CONT", agentPid);
        stopped = false;
        afterResume(sandbox, call, commandPid);
      } else {
        assertThat(Await.until(Duration.ofSeconds(10), () -> !Procs.alive(agentPid))).isTrue();
        // The agent's watchdog (a process of its own) SIGKILLs what the dead agent started.
        long pid = commandPid;
        boolean gone = Await.until(Duration.ofSeconds(10), () -> !Procs.alive(pid));
        System.out.printf("[it] after SIGKILL of the agent during %s, its command was %s %d ms after the fault%n",
            call, gone ? "killed by the watchdog" : "NOT killed", (System.nanoTime() - t0) / 1_000_000);
        assertThat(gone).as("the watchdog killed the command of the dead agent").isTrue();
      }
    } finally {
      if (stopped) {
        signal("CONT", agentPid);
      }
      sandbox.close();
      if (commandPid > 0 && Procs.alive(commandPid)) {
        signal("KILL", commandPid); // a sleep our own agent started, orphaned by the SIGKILL
      }
    }
  }

  /**
   * After SIGCONT: the agent answers again at once, and a command whose call the client gave up
   * on is killed by the agent (it notices the hang-up at its next write); a background process
   * whose log stream gave up keeps running and can be streamed again.
   */
  private static void afterResume(LocalSandbox sandbox, Call call, long commandPid) throws Exception {
    long t1 = System.nanoTime();
    ExecResult r = sandbox.exec("echo back");
    System.out.printf("[it] after SIGCONT: exec answered in %d ms%n", (System.nanoTime() - t1) / 1_000_000);
    assertThat(r.stdout()).isEqualTo("back\n");
    if (call == Call.STREAM_PROCESS_LOGS) {
      assertThat(Procs.alive(commandPid)).as("a background process does not depend on a reader").isTrue();
      List<ProcessInfo> running = sandbox.listProcesses().stream().filter(p -> p.status() == ProcessStatus.RUNNING).toList();
      assertThat(running).extracting(ProcessInfo::pid).contains(commandPid);
      FirstEvent again = new FirstEvent();
      sandbox.streamProcessLogs(running.get(0).id()).subscribe(again);
      assertThat(again.first.get(10, TimeUnit.SECONDS)).as("a new log stream works").isInstanceOf(LogEvent.Info.class);
      again.cancel();
    } else {
      boolean gone = Await.until(Duration.ofSeconds(10), () -> !Procs.alive(commandPid));
      System.out.printf("[it] after SIGCONT: the command of the abandoned %s was %s after %d ms%n", call,
          gone ? "killed" : "NOT killed", (System.nanoTime() - t1) / 1_000_000);
      assertThat(gone).as("the agent killed the command of the call the client gave up on").isTrue();
    }
  }

  private static CompletableFuture<Object> start(LocalSandbox sandbox, Call call, String script) {
    switch (call) {
      case EXEC: {
        CompletableFuture<Object> f = new CompletableFuture<>();
        Thread t = new Thread(() -> {
          try {
            f.complete(sandbox.exec(script));
          } catch (Throwable e) {
            f.completeExceptionally(e);
          }
        }, "fault-exec");
        t.setDaemon(true);
        t.start();
        return f;
      }
      case EXEC_ASYNC:
        return sandbox.execAsync(script).thenApply(r -> r);
      case EXEC_STREAM: {
        Outcome<ExecEvent> s = new Outcome<>();
        sandbox.execStream(script).subscribe(s);
        return s.done;
      }
      case STREAM_PROCESS_LOGS: {
        SandboxProcess p = sandbox.startProcess(script);
        Outcome<LogEvent> s = new Outcome<>();
        sandbox.streamProcessLogs(p.id()).subscribe(s);
        return s.done;
      }
      default:
        throw new IllegalArgumentException(call.toString());
    }
  }

  /** The failure the call ended with; fails the test if it succeeded or is still running. */
  private static Throwable awaitFailure(CompletableFuture<Object> outcome, long millis) throws InterruptedException {
    Object value;
    try {
      value = outcome.get(millis, TimeUnit.MILLISECONDS);
    } catch (ExecutionException | CompletionException e) {
      return e.getCause();
    } catch (TimeoutException e) {
      throw new AssertionError("the call did not end within " + millis + " ms of the fault");
    }
    throw new AssertionError("the call succeeded after the fault: " + value);
  }

  private static void signal(String name, long pid) throws Exception {
    Process p = new ProcessBuilder("kill", "-" + name, Long.toString(pid)).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes());
    assertThat(p.waitFor()).as("kill -%s %d: %s", name, pid, out).isZero();
  }

  /** Requests everything; completes {@link #done} with null on onComplete, exceptionally on onError. */
  private static final class Outcome<T> implements Flow.Subscriber<T> {
    final CompletableFuture<Object> done = new CompletableFuture<>();

    @Override
    public void onSubscribe(Flow.Subscription s) {
      s.request(Long.MAX_VALUE);
    }

    @Override
    public void onNext(T item) {}

    @Override
    public void onError(Throwable t) {
      done.completeExceptionally(t);
    }

    @Override
    public void onComplete() {
      done.complete("onComplete");
    }
  }

  /** Captures the first event, then can cancel. */
  private static final class FirstEvent implements Flow.Subscriber<LogEvent> {
    final CompletableFuture<LogEvent> first = new CompletableFuture<>();
    private volatile Flow.Subscription subscription;

    @Override
    public void onSubscribe(Flow.Subscription s) {
      subscription = s;
      s.request(Long.MAX_VALUE);
    }

    @Override
    public void onNext(LogEvent item) {
      first.complete(item);
    }

    @Override
    public void onError(Throwable t) {
      first.completeExceptionally(t);
    }

    @Override
    public void onComplete() {}

    void cancel() {
      subscription.cancel();
    }
  }
}
