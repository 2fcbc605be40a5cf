package dev.sandboxsdk.bench.sdk;

import dev.sandboxsdk.Command;
import dev.sandboxsdk.ExecEvent;
import dev.sandboxsdk.ExecOptions;
import dev.sandboxsdk.local.Isolation;
import dev.sandboxsdk.local.LocalSandbox;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;

/**
 * Cancel-to-killed latency (see docs/performance.md, "Cancel"): for each of the three ways a
 * caller gives up on a command, the time from the cancel to the command being gone, checked
 * through /proc. Run from the repository root with {@code bash benchmarks/scripts/cancel.sh}; it
 * needs the SDK and the agent on the classpath.
 *
 * <ol>
 *   <li>{@code execAsync(...).cancel(true)};
 *   <li>cancelling an {@code execStream} subscription (after its start event);
 *   <li>interrupting a thread blocked in {@code exec}.
 * </ol>
 *
 * The command is {@code echo $$ > pidfile; exec sleep 300}: its pid is its process group's id and
 * the group's only member, so "gone" means /proc/PID no longer exists or is a zombie (state Z).
 * The agent runs with its defaults (keep-alive 2 s, grace 5 s: sleep dies of the SIGTERM), without
 * isolation (see main).
 */
public class CancelBench {
  static int rounds = 20;

  public static void main(String[] args) throws Exception {
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--rounds": rounds = Integer.parseInt(args[++i]); break;
        case "--smoke": rounds = 3; break; // seconds-long, for CI: every path still has to kill its command
        default: throw new IllegalArgumentException("unknown option " + args[i]);
      }
    }
    System.out.printf(Locale.ROOT, "CancelBench: %s %s, %d cores, rounds=%d%n",
        System.getProperty("java.vm.name"), System.getProperty("java.version"),
        Runtime.getRuntime().availableProcessors(), rounds);
    // Unisolated, as in the runs docs/performance.md reports: under bubblewrap the command has its
    // own PID namespace, and the pid it writes is not the one this program can watch in /proc.
    try (LocalSandbox sandbox = LocalSandbox.builder().keepAlive(true).isolation(Isolation.NONE).start()) {
      Path ws = sandbox.workspace();
      report("execAsync cancel(true)", measure(ws, round -> {
        String tag = "async-" + round;
        CompletableFuture<?> f = sandbox.execAsync(command(tag), ExecOptions.defaults());
        long pid = readPid(ws.resolve(tag + ".pid"));
        return new Running(pid, () -> f.cancel(true));
      }));
      report("execStream subscription cancel", measure(ws, round -> {
        String tag = "stream-" + round;
        CompletableFuture<Flow.Subscription> started = new CompletableFuture<>();
        sandbox.execStream(command(tag), ExecOptions.defaults()).subscribe(new Flow.Subscriber<ExecEvent>() {
          Flow.Subscription s;

          @Override
          public void onSubscribe(Flow.Subscription s) {
            this.s = s;
            s.request(Long.MAX_VALUE);
          }

          @Override
          public void onNext(ExecEvent e) {
            if (e instanceof ExecEvent.Start) {
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
        Flow.Subscription s = started.get(30, TimeUnit.SECONDS);
        long pid = readPid(ws.resolve(tag + ".pid"));
        return new Running(pid, s::cancel);
      }));
      report("exec interrupted", measure(ws, round -> {
        String tag = "interrupt-" + round;
        Thread caller = new Thread(() -> {
          try {
            sandbox.exec(command(tag), ExecOptions.defaults());
          } catch (RuntimeException expected) {
            // SandboxException: interrupted
          }
        }, "bench-exec");
        caller.start();
        long pid = readPid(ws.resolve(tag + ".pid"));
        return new Running(pid, caller::interrupt);
      }));
    }
  }

  interface Start {
    Running start(int round) throws Exception;
  }

  record Running(long pid, Runnable cancel) {}

  static Command command(String tag) {
    return Command.shell("echo $$ > " + tag + ".pid; exec sleep 300");
  }

  /** Milliseconds from cancel to gone, one per round. */
  static double[] measure(Path ws, Start start) throws Exception {
    double[] ms = new double[rounds];
    for (int i = 0; i < rounds; i++) {
      Running r = start.start(i);
      long t0 = System.nanoTime();
      r.cancel().run();
      while (alive(r.pid())) {
        if (System.nanoTime() - t0 > TimeUnit.SECONDS.toNanos(30)) {
          throw new IllegalStateException("pid " + r.pid() + " still alive 30 s after cancel");
        }
        java.util.concurrent.locks.LockSupport.parkNanos(200_000); // 0.2 ms resolution, no busy core
      }
      ms[i] = (System.nanoTime() - t0) / 1e6;
      Thread.sleep(100); // let the connection and the agent settle
    }
    return ms;
  }

  static void report(String what, double[] ms) {
    double[] sorted = ms.clone();
    Arrays.sort(sorted);
    double median = sorted.length % 2 == 1 ? sorted[sorted.length / 2]
        : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
    System.out.printf(Locale.ROOT, "%-32s n=%d median %.1f ms, max %.1f ms, min %.1f ms%n", what, ms.length, median,
        sorted[sorted.length - 1], sorted[0]);
    StringBuilder each = new StringBuilder("  in order:");
    for (double m : ms) {
      each.append(String.format(Locale.ROOT, " %.1f", m));
    }
    System.out.println(each);
  }

  /** True while /proc/PID exists and is not a zombie. */
  static boolean alive(long pid) {
    try {
      String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"), StandardCharsets.US_ASCII);
      int close = stat.lastIndexOf(')');
      return stat.charAt(close + 2) != 'Z';
    } catch (NoSuchFileException e) {
      return false;
    } catch (IOException e) {
      return !Files.notExists(Path.of("/proc", Long.toString(pid)));
    }
  }

  /** Waits for the command's pid file and for the command to have exec'd sleep. */
  static long readPid(Path file) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (System.nanoTime() < deadline) {
      try {
        String s = Files.readString(file).strip();
        if (!s.isEmpty()) {
          long pid = Long.parseLong(s);
          String cmdline = Files.readString(Path.of("/proc", s, "cmdline"), StandardCharsets.ISO_8859_1);
          if (cmdline.startsWith("sleep")) {
            return pid;
          }
        }
      } catch (NoSuchFileException | NumberFormatException e) {
        // not written yet
      }
      Thread.sleep(2);
    }
    throw new IllegalStateException("no pid in " + file + " after 30 s");
  }
}
