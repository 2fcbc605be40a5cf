package dev.sandboxsdk.bench.sdk;

import dev.sandboxsdk.Command;
import dev.sandboxsdk.local.Isolation;
import dev.sandboxsdk.local.LocalSandbox;
import dev.sandboxsdk.Terminal;
import dev.sandboxsdk.TerminalOptions;
import dev.sandboxsdk.TerminalOutput;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Flow;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Terminal benchmark (see docs/performance.md, "Terminals"), through the SDK and a LocalSandbox:
 *
 * <ul>
 *   <li>keystroke to echo: one byte written with {@code Terminal.write} to a terminal running
 *       {@code cat}, timed until the terminal's echo of it arrives from {@code output()}
 *       ({@code --keys}, default 500; p50, p99, max);
 *   <li>many terminals: opens {@code --terminals} (default 50, then 200) terminals running a
 *       shell, each with its output subscribed, and times an {@code exec("true")} and a
 *       keystroke-to-echo round trip on the last one while all are open; prints the agent's
 *       descriptors before, with all open, and after they were killed.
 * </ul>
 *
 * <p>Run from the repository root: {@code bash benchmarks/scripts/terminal.sh [--keys 500]
 * [--terminals 50,200] [--isolation none|required]}.
 */
public class TerminalBench {
  static int keys = 500;
  static int[] terminals = {50, 200};
  static Isolation isolation = Isolation.NONE;

  public static void main(String[] args) throws Exception {
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--keys": keys = Integer.parseInt(args[++i]); break;
        case "--terminals": terminals = Arrays.stream(args[++i].split(",")).mapToInt(Integer::parseInt).toArray(); break;
        case "--isolation": isolation = Isolation.valueOf(args[++i].toUpperCase(Locale.ROOT)); break;
        default: throw new IllegalArgumentException("unknown option " + args[i]
            + " (--keys N, --terminals N[,N...], --isolation none|required)");
      }
    }
    System.out.printf(Locale.ROOT, "TerminalBench: %s %s, %d cores, isolation %s%n",
        System.getProperty("java.vm.name"), System.getProperty("java.version"),
        Runtime.getRuntime().availableProcessors(), isolation);
    try (LocalSandbox sandbox = LocalSandbox.builder().isolation(isolation).start()) {
      sandbox.exec("true");
      latency(sandbox);
      for (int n : terminals) {
        many(sandbox, n);
      }
    }
  }

  /** Unbounded demand; chunks go to a queue. */
  static final class Chunks implements Flow.Subscriber<TerminalOutput> {
    final LinkedBlockingQueue<TerminalOutput> queue = new LinkedBlockingQueue<>();

    @Override public void onSubscribe(Flow.Subscription s) { s.request(Long.MAX_VALUE); }
    @Override public void onNext(TerminalOutput item) { queue.add(item); }
    @Override public void onError(Throwable t) { t.printStackTrace(); }
    @Override public void onComplete() { }

    /** Waits until {@code n} more bytes have arrived. */
    void awaitBytes(int n) throws InterruptedException {
      int got = 0;
      while (got < n) {
        TerminalOutput o = queue.poll(10, TimeUnit.SECONDS);
        if (o == null) {
          throw new IllegalStateException("no echo within 10 s");
        }
        got += o.bytes().length;
      }
    }
  }

  static void latency(LocalSandbox sandbox) throws Exception {
    // raw mode without echo of its own: cat -u copies each byte at once; the terminal echoes it
    Terminal t = sandbox.terminals().open(TerminalOptions.builder()
        .command(Command.of("sh", "-c", "stty raw -echo; echo ready; exec cat -u")).build());
    Chunks out = new Chunks();
    t.output().subscribe(out);
    out.awaitBytes("ready\n".length()); // raw mode: no \r added
    long[] nanos = new long[keys];
    byte[] key = {'x'};
    for (int i = -50; i < keys; i++) { // 50 warm-up keystrokes
      long t0 = System.nanoTime();
      t.write(key);
      out.awaitBytes(1);
      if (i >= 0) {
        nanos[i] = System.nanoTime() - t0;
      }
    }
    t.kill();
    Arrays.sort(nanos);
    System.out.printf(Locale.ROOT, "keystroke to echo over %d keys: p50 %.2f ms, p99 %.2f ms, max %.2f ms%n", keys,
        nanos[keys / 2] / 1e6, nanos[(int) (keys * 0.99)] / 1e6, nanos[keys - 1] / 1e6);
  }

  static void many(LocalSandbox sandbox, int n) throws Exception {
    long fdsBefore = fds(sandbox.agentPid());
    List<Terminal> open = new ArrayList<>();
    List<Chunks> outputs = new ArrayList<>();
    long t0 = System.nanoTime();
    try {
      for (int i = 0; i < n; i++) {
        Terminal t = sandbox.terminals().open(TerminalOptions.builder()
            .command(Command.of("sh", "-c", "stty raw -echo; echo ready; exec cat -u")).build());
        Chunks c = new Chunks();
        t.output().subscribe(c);
        open.add(t);
        outputs.add(c);
      }
      for (Chunks c : outputs) {
        c.awaitBytes("ready\n".length()); // raw mode: no \r added
      }
      double openS = (System.nanoTime() - t0) / 1e9;
      long fdsOpen = fds(sandbox.agentPid());
      long[] exec = new long[20];
      long[] echo = new long[20];
      for (int i = 0; i < 20; i++) {
        long e0 = System.nanoTime();
        sandbox.exec("true");
        exec[i] = System.nanoTime() - e0;
        Terminal t = open.get(i * (n - 1) / 19);
        Chunks c = outputs.get(i * (n - 1) / 19);
        e0 = System.nanoTime();
        t.write("y");
        c.awaitBytes(1);
        echo[i] = System.nanoTime() - e0;
      }
      Arrays.sort(exec);
      Arrays.sort(echo);
      System.out.printf(Locale.ROOT, "%d terminals open (all ready after %.1f s): exec(\"true\") median %.1f ms, max %.1f ms;"
          + " keystroke to echo median %.2f ms, max %.2f ms; agent fds %d before, %d with all open%n", n, openS,
          exec[10] / 1e6, exec[19] / 1e6, echo[10] / 1e6, echo[19] / 1e6, fdsBefore, fdsOpen);
    } finally {
      open.forEach(Terminal::kill);
      for (Terminal t : open) {
        t.waitForExit(java.time.Duration.ofSeconds(30));
      }
      sandbox.cleanupCompletedProcesses();
    }
    Thread.sleep(500);
    System.out.printf(Locale.ROOT, "%d terminals killed: agent fds %d%n", n, fds(sandbox.agentPid()));
  }

  static long fds(long pid) throws Exception {
    try (var s = Files.list(Path.of("/proc", Long.toString(pid), "fd"))) {
      return s.count();
    }
  }
}
