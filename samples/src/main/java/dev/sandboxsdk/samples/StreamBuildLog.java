package dev.sandboxsdk.samples;

import dev.sandboxsdk.ExecEvent;
import dev.sandboxsdk.local.LocalSandbox;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;

/**
 * Streams the log of a (fake) multi-step build with {@code execStream} and prints every line
 * the moment it arrives, with the milliseconds since the build started, then the exit code.
 *
 * <p>The subscriber asks for a few events at a time instead of {@code Long.MAX_VALUE}: the SDK
 * reads from the connection only while there is demand, so a subscriber that falls behind slows
 * the command down instead of piling output up in memory.
 */
public final class StreamBuildLog {
  private StreamBuildLog() {}

  /** A shell script that behaves like a build: steps, a warning on stderr, pauses between steps. */
  static final String BUILD = String.join("\n",
      "echo '[1/4] resolving dependencies'",
      "sleep 0.3",
      "echo '[2/4] compiling 42 source files'",
      "sleep 0.4",
      "echo 'warning: Util.java uses a deprecated API' >&2",
      "echo '[3/4] running tests'",
      "for t in parser lexer printer; do sleep 0.2; echo \"  test $t ... ok\"; done",
      "echo '[4/4] packaging app.jar'",
      "sleep 0.3",
      "echo 'BUILD SUCCESSFUL'");

  public static void main(String[] args) throws Exception {
    try (LocalSandbox sandbox = LocalSandbox.start()) {
      BuildLogPrinter printer = new BuildLogPrinter(System.nanoTime());
      // Lazy: nothing runs until the subscriber requests its first event.
      sandbox.execStream(BUILD).subscribe(printer);
      // Signals arrive on SDK threads; main only waits. The bound is a safety net for the sample.
      int exitCode = printer.exitCode().get(30, TimeUnit.SECONDS);
      System.out.printf("build finished: exit code %d%n", exitCode);
    }
  }

  /**
   * Prints the build's output line by line. Output chunks are not lines: a chunk may hold
   * several lines or end in the middle of one, so the printer keeps the unfinished line of
   * each stream until its newline arrives.
   *
   * <p>No locks: the SDK calls {@code onNext} for one subscription one call at a time, and each
   * call happens-before the next (Reactive Streams rule 1.3).
   */
  static final class BuildLogPrinter implements Flow.Subscriber<ExecEvent> {
    private static final int BATCH = 4;

    private final long startNanos;
    private final CompletableFuture<Integer> exitCode = new CompletableFuture<>();
    private final StringBuilder stdoutLine = new StringBuilder();
    private final StringBuilder stderrLine = new StringBuilder();
    private Flow.Subscription subscription;
    private int outstanding;

    BuildLogPrinter(long startNanos) {
      this.startNanos = startNanos;
    }

    /** Completes with the exit code, or exceptionally if the stream failed. */
    CompletableFuture<Integer> exitCode() {
      return exitCode;
    }

    @Override
    public void onSubscribe(Flow.Subscription s) {
      subscription = s;
      outstanding = BATCH;
      s.request(BATCH);
    }

    @Override
    public void onNext(ExecEvent event) {
      if (event instanceof ExecEvent.Start start) {
        print("   ", "started, pid " + start.pid());
      } else if (event instanceof ExecEvent.Stdout out) {
        lines(out.text(), stdoutLine, "out");
      } else if (event instanceof ExecEvent.Stderr err) {
        lines(err.text(), stderrLine, "ERR");
      } else if (event instanceof ExecEvent.Complete done) {
        flush(stdoutLine, "out");
        flush(stderrLine, "ERR");
        print("   ", "complete: exit " + done.exitCode() + " after " + done.duration().toMillis() + " ms"
            + (done.timedOut() ? " (timed out)" : ""));
        exitCode.complete(done.exitCode());
      }
      // Any other type is from a newer SDK version: ExecEvent is not sealed, so skip what we do not know.

      // Ask for the next batch only when this one is used up: at most BATCH events are ever in flight.
      if (--outstanding == 0) {
        outstanding = BATCH;
        subscription.request(BATCH);
      }
    }

    @Override
    public void onError(Throwable t) {
      // e.g. SandboxConnectionException when the stream ended without its Complete event:
      // the outcome is unknown, and the SDK never reports that as success.
      exitCode.completeExceptionally(t);
    }

    @Override
    public void onComplete() {
      // Always preceded by Complete; this only guards against a future event order we do not expect.
      exitCode.completeExceptionally(new IllegalStateException("the stream ended without a Complete event"));
    }

    private void lines(String text, StringBuilder pending, String tag) {
      int start = 0;
      for (int nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', start)) {
        pending.append(text, start, nl);
        print(tag, pending.toString());
        pending.setLength(0);
        start = nl + 1;
      }
      pending.append(text, start, text.length());
    }

    private void flush(StringBuilder pending, String tag) {
      if (pending.length() > 0) {
        print(tag, pending.toString());
        pending.setLength(0);
      }
    }

    private void print(String tag, String line) {
      long ms = (System.nanoTime() - startNanos) / 1_000_000;
      System.out.printf("%6d ms %s | %s%n", ms, tag, line);
    }
  }
}
