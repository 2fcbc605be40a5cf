package dev.sandboxsdk.samples;

import dev.sandboxsdk.Command;
import dev.sandboxsdk.ExecEvent;
import dev.sandboxsdk.ExecOptions;
import dev.sandboxsdk.ExecResult;
import dev.sandboxsdk.LocalSandbox;
import dev.sandboxsdk.Sandbox;
import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;

/**
 * Three ways to stop a command, each checked by looking for the process afterwards with
 * {@code ps}: cancelling the future of {@code execAsync}, a timeout enforced by the agent, and
 * cancelling an {@code execStream} subscription.
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
    // The command writes its pid to a file so we can look for it (execAsync only reports it at the end).
    CompletableFuture<ExecResult> future = sandbox.execAsync("echo $$ > long-job.pid; sleep 60; echo finished");
    long pid = waitForPidFile(sandbox, "long-job.pid");
    System.out.printf("execAsync: started, pid %d: %s%n", pid, ps(sandbox, pid));

    long t0 = System.nanoTime();
    future.cancel(true);
    try {
      future.join();
    } catch (CancellationException expected) {
      System.out.println("execAsync: future cancelled, join() throws CancellationException");
    }
    // The SDK sends DELETE /api/execute/{id} at once, so this takes milliseconds; the closed
    // connection is the fallback (the agent notices it within one or two keep-alive intervals).
    awaitGone(sandbox, pid, t0, "execAsync");
  }

  /** The agent enforces the timeout: the group is killed, and the result says so. */
  private static void timeout(Sandbox sandbox) {
    ExecResult r = sandbox.exec("echo started; sleep 60; echo never printed",
        ExecOptions.builder().timeout(Duration.ofMillis(800)).build());
    System.out.printf("timeout: timedOut=%s exitCode=%d signal=%s after %d ms, output kept: %s%n",
        r.timedOut(), r.exitCode(), r.signal(), r.duration().toMillis(), r.stdout().strip());
    System.out.printf("timeout: isSuccess=%s (requireSuccess() would throw CommandFailedException)%n", r.isSuccess());
  }

  /** Cancelling the subscription kills the command at once and closes the connection. */
  private static void cancelStream(Sandbox sandbox) throws Exception {
    CompletableFuture<Long> cancelledPid = new CompletableFuture<>();
    sandbox.execStream("i=0; while :; do i=$((i+1)); echo tick $i; sleep 0.2; done")
        .subscribe(new Flow.Subscriber<>() {
          private Flow.Subscription subscription;
          private long pid;
          private int ticks;

          @Override
          public void onSubscribe(Flow.Subscription s) {
            subscription = s;
            s.request(1);
          }

          @Override
          public void onNext(ExecEvent event) {
            if (event instanceof ExecEvent.Start start) {
              pid = start.pid();
            } else if (event instanceof ExecEvent.Stdout out) {
              System.out.println("execStream: " + out.text().strip());
              if (++ticks == 3) {
                subscription.cancel(); // no further signals: no onComplete, no onError
                cancelledPid.complete(pid);
                return;
              }
            }
            subscription.request(1);
          }

          @Override
          public void onError(Throwable t) {
            cancelledPid.completeExceptionally(t);
          }

          @Override
          public void onComplete() {
            cancelledPid.completeExceptionally(new IllegalStateException("an endless loop completed?"));
          }
        });
    long pid = cancelledPid.get(30, TimeUnit.SECONDS);
    long t0 = System.nanoTime();
    System.out.printf("execStream: cancelled after 3 ticks, pid %d%n", pid);
    // The loop writes every 0.2 s, so the agent notices the closed connection almost at once.
    awaitGone(sandbox, pid, t0, "execStream");
  }

  private static long waitForPidFile(Sandbox sandbox, String file) throws InterruptedException {
    for (int i = 0; i < 100; i++) {
      ExecResult r = sandbox.exec(Command.of("cat", file));
      if (r.isSuccess() && !r.stdout().isBlank()) {
        return Long.parseLong(r.stdout().strip());
      }
      Thread.sleep(50);
    }
    throw new IllegalStateException(file + " did not appear");
  }

  private static void awaitGone(Sandbox sandbox, long pid, long t0, String what) throws InterruptedException {
    long deadline = t0 + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() < deadline) {
      if (ps(sandbox, pid).isEmpty()) {
        System.out.printf("%s: pid %d is gone %d ms after the cancel%n", what, pid, (System.nanoTime() - t0) / 1_000_000);
        return;
      }
      Thread.sleep(100);
    }
    System.out.printf("%s: pid %d still there after 10 s: %s%n", what, pid, ps(sandbox, pid));
  }

  /** The process's {@code ps} line, or "" if there is no such process (ps then exits with 1). */
  private static String ps(Sandbox sandbox, long pid) {
    return sandbox.exec(Command.of("ps", "-o", "pid=,stat=,args=", "-p", Long.toString(pid))).stdout().strip();
  }
}
