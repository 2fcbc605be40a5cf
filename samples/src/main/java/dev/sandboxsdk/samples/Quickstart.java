package dev.sandboxsdk.samples;

import dev.sandboxsdk.Command;
import dev.sandboxsdk.ExecEvent;
import dev.sandboxsdk.ExecOptions;
import dev.sandboxsdk.ExecResult;
import dev.sandboxsdk.local.LocalSandbox;
import dev.sandboxsdk.ProcessInfo;
import dev.sandboxsdk.SandboxProcess;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.regex.Pattern;

/**
 * The tour: starts a local sandbox (no Docker), runs commands, streams output, starts and kills
 * a background process, and shuts everything down. Prints what happens at each step.
 */
public final class Quickstart {
  private Quickstart() {}

  public static void main(String[] args) throws Exception {
    long t0 = System.nanoTime();
    try (LocalSandbox sandbox = LocalSandbox.start()) {
      say("started a local sandbox at %s in %d ms (workspace %s)", sandbox.baseUrl(), ms(t0), sandbox.workspace());

      ExecResult hello = sandbox.exec("echo \"hello from $(uname -s), pid $$\"");
      say("exec: exit %d, stdout: %s", hello.exitCode(), hello.stdout().strip());

      ExecResult argv = sandbox.exec(Command.of("printf", "%s|", "no shell", "$HOME", "; rm -rf /"), ExecOptions.defaults());
      say("exec argv (no shell, nothing injected): %s", argv.stdout());

      ExecResult failed = sandbox.exec("ls /no/such/dir");
      say("a failing command is data, not an exception: exit %d, stderr: %s", failed.exitCode(),
          failed.stderr().strip());

      ExecResult slow = sandbox.exec(Command.shell("sleep 10"), dev.sandboxsdk.ExecOptions.builder()
          .timeout(Duration.ofMillis(500)).build());
      say("timeout really stops work: timedOut=%s exit %d after %d ms", slow.timedOut(), slow.exitCode(),
          slow.duration().toMillis());

      say("execStream, events as they arrive:");
      CompletableFuture<Void> done = new CompletableFuture<>();
      sandbox.execStream("for i in 1 2 3; do echo step $i; sleep 0.2; done").subscribe(new Flow.Subscriber<>() {
        private Flow.Subscription subscription;

        @Override
        public void onSubscribe(Flow.Subscription s) {
          subscription = s;
          s.request(1);
        }

        @Override
        public void onNext(ExecEvent event) {
          if (event instanceof ExecEvent.Stdout) {
            say("  stdout: %s", ((ExecEvent.Stdout) event).text().strip());
          } else if (event instanceof ExecEvent.Complete) {
            say("  complete: exit %d", ((ExecEvent.Complete) event).exitCode());
          }
          subscription.request(1);
        }

        @Override
        public void onError(Throwable t) {
          done.completeExceptionally(t);
        }

        @Override
        public void onComplete() {
          done.complete(null);
        }
      });
      done.get();

      SandboxProcess server = sandbox.startProcess(
          "echo 'server: listening on 8080'; while :; do sleep 1; done");
      String line = server.waitForLog(Pattern.compile("listening on (\\d+)"), Duration.ofSeconds(10)).line();
      say("background process %s (pid %d) is ready: %s", server.id(), server.pid(), line);
      say("processes: %s", sandbox.listProcesses().stream().map(p -> p.id() + "=" + p.status().wireName()).toList());
      server.kill();
      ProcessInfo end = server.waitForExit(Duration.ofSeconds(10));
      say("killed it: status %s, exit code %d, signal %s", end.status().wireName(), end.exitCode(), end.signal());
      say("cleaned up %d finished process record(s)", sandbox.cleanupCompletedProcesses());
    }
    say("closed the sandbox: the agent and everything it started are gone (total %d ms)", ms(t0));
  }

  private static long ms(long t0) {
    return (System.nanoTime() - t0) / 1_000_000;
  }

  private static void say(String format, Object... args) {
    System.out.println(String.format(format, args));
  }
}
