package dev.sandboxsdk;

import dev.sandboxsdk.local.LocalSandbox;
import dev.sandboxsdk.local.Isolation;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * The three ways of giving up on a command kill it at once, not when the agent notices the closed
 * connection: the agent here writes keep-alives only every 10 s, so hang-up detection alone would
 * take 10 s or more (a write 10 s after the last, and usually a second one). The bound below is
 * loose, for a loaded machine; docs/performance.md ("Cancel") has the measured figures.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CancelAtOnceIT {
  /**
   * Half the 10 s keep-alive, far above the measured milliseconds: on the shared 2-core machine
   * (load averages up to 68 were seen while this ran) a 2 s bound failed now and then.
   */
  private static final Duration BOUND = Duration.ofSeconds(5);

  private LocalSandbox sandbox;
  private HostProbe probe;

  @BeforeAll
  void start() {
    // Unisolated: the pids commands write must be host pids (isolated commands' cancel and kill
    // are in the contract suite, LocalSandboxIsolatedContractIT).
    sandbox = LocalSandbox.builder().isolation(Isolation.NONE).keepAlive(true).agentArgument("--keep-alive-ms=10000")
        .start();
    probe = new HostProbe(sandbox.workspace());
  }

  @AfterAll
  void stop() {
    if (sandbox != null) {
      sandbox.close();
    }
  }

  private static Command sleeper(String tag) {
    return Command.shell("echo $$ > " + tag + ".pid; exec sleep 300");
  }

  private long goneWithin(long pid, Duration bound) throws InterruptedException {
    long t0 = System.nanoTime();
    assertThat(await(bound, () -> probe.groupMembers(pid).isEmpty()))
        .as("group %d is gone within %s of the cancel (keep-alive: 10 s)", pid, bound)
        .isTrue();
    return (System.nanoTime() - t0) / 1_000_000;
  }

  @Test
  void cancellingExecAsyncKillsTheCommandWithoutWaitingForAKeepAlive() throws Exception {
    CompletableFuture<ExecResult> f = sandbox.execAsync(sleeper("async"), ExecOptions.defaults());
    long pid = probe.readPid("async.pid", Duration.ofSeconds(10));

    assertThat(f.cancel(true)).isTrue();

    long ms = goneWithin(pid, BOUND);
    System.out.printf("[it] execAsync cancel: group gone after %d ms (keep-alive 10 s)%n", ms);
  }

  @Test
  void cancellingAnExecStreamSubscriptionKillsTheCommandWithoutWaitingForAKeepAlive() throws Exception {
    CompletableFuture<Flow.Subscription> started = new CompletableFuture<>();
    AtomicReference<Long> pid = new AtomicReference<>();
    sandbox.execStream(sleeper("stream"), ExecOptions.defaults()).subscribe(new Flow.Subscriber<>() {
      private Flow.Subscription s;

      @Override
      public void onSubscribe(Flow.Subscription s) {
        this.s = s;
        s.request(Long.MAX_VALUE);
      }

      @Override
      public void onNext(ExecEvent e) {
        if (e instanceof ExecEvent.Start) {
          pid.set(((ExecEvent.Start) e).pid());
          started.complete(s);
        }
      }

      @Override
      public void onError(Throwable t) {
        started.completeExceptionally(t);
      }

      @Override
      public void onComplete() {}
    });
    Flow.Subscription s = started.get(10, TimeUnit.SECONDS);
    assertThat(probe.readPid("stream.pid", Duration.ofSeconds(10))).isEqualTo(pid.get());

    s.cancel();

    long ms = goneWithin(pid.get(), BOUND);
    System.out.printf("[it] execStream cancel: group gone after %d ms (keep-alive 10 s)%n", ms);
  }

  @Test
  void interruptingABlockedExecKillsTheCommandWithoutWaitingForAKeepAlive() throws Exception {
    AtomicReference<Throwable> thrown = new AtomicReference<>();
    Thread caller = new Thread(() -> {
      try {
        sandbox.exec(sleeper("interrupt"), ExecOptions.defaults());
      } catch (Throwable e) {
        thrown.set(e);
      }
    }, "it-interrupted-exec");
    caller.start();
    long pid = probe.readPid("interrupt.pid", Duration.ofSeconds(10));
    long t0 = System.nanoTime();

    caller.interrupt();

    long ms = goneWithin(pid, BOUND);
    caller.join(BOUND.toMillis());
    long returned = (System.nanoTime() - t0) / 1_000_000;
    assertThat(caller.isAlive()).as("exec returned at once, not at the next heartbeat byte").isFalse();
    assertThat(returned).isLessThan(BOUND.toMillis() * 2);
    assertThat(thrown.get()).isInstanceOf(SandboxException.class).hasMessageContaining("interrupted");
    System.out.printf("[it] exec interrupt: group gone after %d ms, exec returned after %d ms (keep-alive 10 s)%n",
        ms, returned);
  }

  @Test
  void cancellingExecAsyncWithAListenerKillsTheCommandWithoutWaitingForAKeepAlive() throws Exception {
    CompletableFuture<ExecResult> f = sandbox.execAsync(sleeper("listener"),
        ExecOptions.builder().onOutput((stream, text) -> { }).build());
    long pid = probe.readPid("listener.pid", Duration.ofSeconds(10));

    assertThat(f.cancel(true)).isTrue();

    long ms = goneWithin(pid, BOUND);
    System.out.printf("[it] execAsync (listener) cancel: group gone after %d ms (keep-alive 10 s)%n", ms);
  }

  @Test
  void interruptingAnExecWithAListenerKillsTheCommandWithoutWaitingForAKeepAlive() throws Exception {
    AtomicReference<Throwable> thrown = new AtomicReference<>();
    AtomicReference<Boolean> flagRestored = new AtomicReference<>();
    List<String> seen = new CopyOnWriteArrayList<>();
    Thread caller = new Thread(() -> {
      try {
        sandbox.exec(Command.shell("echo $$ > interrupt-listener.pid; echo started; exec sleep 300"),
            ExecOptions.builder().onOutput((stream, text) -> seen.add(Thread.currentThread().getName() + ":" + text))
                .build());
      } catch (Throwable e) {
        thrown.set(e);
        flagRestored.set(Thread.currentThread().isInterrupted());
      }
    }, "it-interrupted-listener-exec");
    caller.start();
    long pid = probe.readPid("interrupt-listener.pid", Duration.ofSeconds(10));
    assertThat(await(Duration.ofSeconds(10), () -> !seen.isEmpty())).isTrue();
    long t0 = System.nanoTime();

    caller.interrupt();

    caller.join(BOUND.toMillis());
    long returned = (System.nanoTime() - t0) / 1_000_000;
    assertThat(caller.isAlive()).as("exec returned at once, not at the next keep-alive (10 s)").isFalse();
    long ms = goneWithin(pid, BOUND);
    assertThat(thrown.get()).isInstanceOf(SandboxException.class).hasMessageContaining("interrupted");
    assertThat(flagRestored.get()).as("the interrupt flag is restored").isTrue();
    assertThat(seen).as("the listener ran on the thread that called exec").containsExactly(
        "it-interrupted-listener-exec:started\n");
    System.out.printf("[it] exec (listener) interrupt: exec returned after %d ms, group gone %d ms later"
        + " (keep-alive 10 s)%n", returned, ms);
  }

  @Test
  void aListenerThatThrowsGetsTheCommandKilledWithoutWaitingForAKeepAlive() throws Exception {
    AtomicReference<Throwable> thrown = new AtomicReference<>();
    Thread caller = new Thread(() -> {
      try {
        sandbox.exec(Command.shell("echo $$ > throws.pid; echo hi; exec sleep 300"),
            ExecOptions.builder().onOutput((stream, text) -> {
              throw new IllegalStateException("listener failed");
            }).build());
      } catch (Throwable e) {
        thrown.set(e);
      }
    }, "it-listener-throws");
    caller.start();
    long pid = probe.readPid("throws.pid", Duration.ofSeconds(10));

    caller.join(10_000);

    assertThat(thrown.get()).isInstanceOf(SandboxException.class).hasMessageContaining("listener");
    long ms = goneWithin(pid, BOUND);
    System.out.printf("[it] listener threw: group gone %d ms after exec returned (keep-alive 10 s)%n", ms);
  }

  private static boolean await(Duration timeout, BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (System.nanoTime() < deadline) {
      if (condition.getAsBoolean()) {
        return true;
      }
      Thread.sleep(5);
    }
    return condition.getAsBoolean();
  }
}
