package dev.sandboxsdk.samples;

import dev.sandboxsdk.Command;
import dev.sandboxsdk.ExecEvent;
import dev.sandboxsdk.ExecOptions;
import dev.sandboxsdk.ExecResult;
import dev.sandboxsdk.local.LocalSandbox;
import dev.sandboxsdk.Sandbox;
import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;

/**
 * Three ways to stop a command: cancelling the future of {@code execAsync}, a timeout enforced by
 * the agent, and cancelling an {@code execStream} subscription. The commands write a heartbeat
 * file (the time, every few tenths of a second), so that we can see when they stopped: a later
 * command cannot look for their process with {@code ps}, since an isolated command sees only its
 * own processes. Each beat is written to a temporary file and renamed into place: a command killed
 * between {@code >} truncating the file and {@code date} writing it would otherwise leave it empty.
 */
public final class Cancellation {
  private Cancellation() {}

  public static void main(String[] args) throws Exception {
    try (LocalSandbox sandbox = LocalSandbox.start()) {
      cancelFuture(sandbox);
      timeout(sandbox);
      cancelStream(sandbox);
    }
  }

  /** {@code future.cancel(true)} asks the agent to kill the command and hangs up the HTTP call. */
  private static void cancelFuture(Sandbox sandbox) throws Exception {
    CompletableFuture<ExecResult> future = sandbox.execAsync(
        "while :; do date +%s%N > beat.tmp; mv beat.tmp heartbeat-async; sleep 0.05; done");
    waitForFile(sandbox, "heartbeat-async");
    System.out.println("execAsync: started, its heartbeat is ticking");

    long cancelledAt = System.currentTimeMillis();
    future.cancel(true);
    try {
      future.join();
    } catch (CancellationException expected) {
      System.out.println("execAsync: future cancelled, join() throws CancellationException");
    }
    // The SDK sends DELETE /api/execute/{id} at once, so this takes milliseconds; the closed
    // connection is the fallback (the agent notices it within one or two keep-alive intervals).
    awaitStopped(sandbox, "heartbeat-async", cancelledAt, "execAsync");
  }

  /** The agent enforces the timeout: the group is killed, and the result says so. */
  private static void timeout(Sandbox sandbox) {
    ExecResult r = sandbox.exec(Command.shell("echo started; sleep 60; echo never printed"),
        ExecOptions.builder().timeout(Duration.ofMillis(800)).build());
    System.out.printf("timeout: timedOut=%s exitCode=%d signal=%s after %d ms, output kept: %s%n",
        r.timedOut(), r.exitCode(), r.signal(), r.duration().toMillis(), r.stdout().strip());
    System.out.printf("timeout: isSuccess=%s (requireSuccess() would throw CommandFailedException)%n", r.isSuccess());
  }

  /** Cancelling the subscription kills the command at once and closes the connection. */
  private static void cancelStream(Sandbox sandbox) throws Exception {
    CompletableFuture<Long> cancelledAt = new CompletableFuture<>();
    sandbox.execStream("i=0; while :; do i=$((i+1)); echo tick $i; date +%s%N > beat2.tmp; mv beat2.tmp heartbeat-stream; sleep 0.2; done")
        .subscribe(new Flow.Subscriber<>() {
          private Flow.Subscription subscription;
          private int ticks;

          @Override
          public void onSubscribe(Flow.Subscription s) {
            subscription = s;
            s.request(1);
          }

          @Override
          public void onNext(ExecEvent event) {
            if (event instanceof ExecEvent.Stdout out) {
              System.out.println("execStream: " + out.text().strip());
              if (++ticks == 3) {
                subscription.cancel(); // no further signals: no onComplete, no onError
                cancelledAt.complete(System.currentTimeMillis());
                return;
              }
            }
            subscription.request(1);
          }

          @Override
          public void onError(Throwable t) {
            cancelledAt.completeExceptionally(t);
          }

          @Override
          public void onComplete() {
            cancelledAt.completeExceptionally(new IllegalStateException("an endless loop completed?"));
          }
        });
    long at = cancelledAt.get(30, TimeUnit.SECONDS);
    System.out.println("execStream: cancelled after 3 ticks");
    awaitStopped(sandbox, "heartbeat-stream", at, "execStream");
  }

  private static void waitForFile(Sandbox sandbox, String file) throws InterruptedException {
    for (int i = 0; i < 100; i++) {
      if (!read(sandbox, file).isEmpty()) {
        return;
      }
      Thread.sleep(50);
    }
    throw new IllegalStateException(file + " did not appear");
  }

  /**
   * Waits until the heartbeat has stayed the same for 0.6 s (three of the slower loop's periods),
   * then prints when its last beat was written, relative to the cancel.
   */
  private static void awaitStopped(Sandbox sandbox, String file, long cancelledAt, String what)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    String last = read(sandbox, file);
    long sameSince = System.nanoTime();
    while (System.nanoTime() < deadline) {
      Thread.sleep(100);
      String now = read(sandbox, file);
      if (!now.equals(last)) {
        last = now;
        sameSince = System.nanoTime();
      } else if (System.nanoTime() - sameSince > TimeUnit.MILLISECONDS.toNanos(600)) {
        long lastBeat = Long.parseLong(last) / 1_000_000;
        System.out.printf("%s: stopped; its last heartbeat was %d ms from the cancel%n", what, lastBeat - cancelledAt);
        return;
      }
    }
    System.out.printf("%s: still running 10 s after the cancel%n", what);
  }

  private static String read(Sandbox sandbox, String file) {
    ExecResult r = sandbox.exec(Command.of("cat", file), ExecOptions.defaults());
    return r.isSuccess() ? r.stdout().strip() : "";
  }
}
