package dev.sandboxsdk.samples;

import dev.sandboxsdk.Command;
import dev.sandboxsdk.local.LocalSandbox;
import dev.sandboxsdk.LogEvent;
import dev.sandboxsdk.LogRange;
import dev.sandboxsdk.ProcessLogs;
import dev.sandboxsdk.ProcessOptions;
import dev.sandboxsdk.SandboxProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;

/**
 * Reads a background process's output in pieces, the way a client does that goes away and
 * comes back: a first page with {@code getProcessLogs}, a later page from {@code logs.next()},
 * then the rest live with {@code streamProcessLogs(id, logs.next())}. Every line is read exactly
 * once, because each piece starts at the byte offset where the previous one stopped.
 *
 * <p>Then it shows what happens to a reader that comes back too late: the agent keeps only a
 * window of each stream, and what has left it is reported as truncated, never skipped silently.
 */
public final class ReconnectLogs {
  private ReconnectLogs() {}

  private static final int LINES = 20;

  public static void main(String[] args) throws Exception {
    // A small retained window (the default is 1 MiB per stream) so the second part can overflow it.
    try (LocalSandbox sandbox = LocalSandbox.builder().agentArgument("--log-window-bytes=1024").start()) {
      SandboxProcess counter = sandbox.startProcess(
          Command.shell("for i in $(seq 1 " + LINES + "); do echo \"line $i\"; sleep 0.1; done"),
          ProcessOptions.builder().processId("counter").build());
      List<String> seen = new ArrayList<>();
      LineBuffer lines = new LineBuffer();

      Thread.sleep(500);
      ProcessLogs first = sandbox.getProcessLogs("counter");
      lines.add(first.stdout(), seen);
      System.out.printf("page 1: %s -> %s%n", first, seen);

      Thread.sleep(500); // "disconnected": the process keeps running and the agent keeps its output
      ProcessLogs second = sandbox.getProcessLogs("counter", first.next());
      int before = seen.size();
      lines.add(second.stdout(), seen);
      System.out.printf("page 2 from %s: %s -> %s%n", first.next(), second, seen.subList(before, seen.size()));

      // Reattach live from where page 2 stopped, on both streams.
      LogRange rest = second.next();
      System.out.println("streaming from offset " + rest.stdoutFrom() + " of stdout, " + rest.stderrFrom() + " of stderr:");
      CompletableFuture<LogEvent.Exit> exit = new CompletableFuture<>();
      sandbox.streamProcessLogs("counter", rest).subscribe(new Flow.Subscriber<>() {
        private Flow.Subscription subscription;

        @Override
        public void onSubscribe(Flow.Subscription s) {
          subscription = s;
          s.request(1);
        }

        @Override
        public void onNext(LogEvent event) {
          if (event instanceof LogEvent.Info info) {
            System.out.printf("  info: %s is %s%n", info.processId(), info.status());
          } else if (event instanceof LogEvent.Output out) {
            List<String> fresh = new ArrayList<>();
            lines.add(out.text(), fresh);
            seen.addAll(fresh);
            System.out.printf("  %s [%d..%d) %s%n", out.stream(), out.offset(), out.nextOffset(), fresh);
          } else if (event instanceof LogEvent.Truncated gap) {
            System.out.println("  truncated: " + gap); // not expected here: we came back in time
          } else if (event instanceof LogEvent.Exit end) {
            System.out.printf("  exit: %s, exit code %d%n", end.status(), end.exitCode());
            exit.complete(end);
          }
          subscription.request(1);
        }

        @Override
        public void onError(Throwable t) {
          exit.completeExceptionally(t);
        }

        @Override
        public void onComplete() {
          exit.complete(null);
        }
      });
      exit.get(30, TimeUnit.SECONDS);

      List<String> expected = new ArrayList<>();
      for (int i = 1; i <= LINES; i++) {
        expected.add("line " + i);
      }
      System.out.printf("read %d lines in three pieces, each exactly once: %s%n", seen.size(), seen.equals(expected));

      showTruncation(sandbox);
    }
  }

  /**
   * A process writes more than the window holds before anyone reads it. A reader that asks for
   * offset 0 learns how many bytes are gone and where the data continues.
   */
  private static void showTruncation(LocalSandbox sandbox) throws Exception {
    SandboxProcess chatty = sandbox.startProcess(Command.shell("seq 1 1000"), ProcessOptions.builder().processId("chatty").build());
    chatty.waitForExit(Duration.ofSeconds(10));

    ProcessLogs page = sandbox.getProcessLogs("chatty", LogRange.all());
    System.out.printf("late page: truncated=%s, asked for offset 0, got stdout from offset %d (%d bytes retained)%n",
        page.truncated(), page.stdoutOffset(), page.stdoutNextOffset() - page.stdoutOffset());

    CompletableFuture<Void> done = new CompletableFuture<>();
    sandbox.streamProcessLogs("chatty").subscribe(new Flow.Subscriber<>() {
      private Flow.Subscription subscription;
      private boolean firstAfterGap;

      @Override
      public void onSubscribe(Flow.Subscription s) {
        subscription = s;
        s.request(1);
      }

      @Override
      public void onNext(LogEvent event) {
        if (event instanceof LogEvent.Truncated gap) {
          // What to do depends on the use: show a marker, re-run the command, or fail loudly.
          // The data resumes mid-line, so the text up to the next newline is a fragment.
          System.out.printf("late stream: truncated %s: %d bytes dropped, data continues at offset %d%n",
              gap.stream(), gap.droppedBytes(), gap.offset());
          firstAfterGap = true;
        } else if (event instanceof LogEvent.Output out && firstAfterGap) {
          System.out.printf("late stream: first line after the gap (possibly a fragment): '%s'%n",
              out.text().lines().findFirst().orElse(""));
          firstAfterGap = false;
        } else if (event instanceof LogEvent.Exit end) {
          System.out.printf("late stream: exit %s%n", end.status());
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
    done.get(30, TimeUnit.SECONDS);
  }

  /**
   * Splits chunks into lines. Offsets count bytes, not lines, so a page or an event may end in
   * the middle of a line; the unfinished rest waits here for the next piece.
   */
  private static final class LineBuffer {
    private final StringBuilder pending = new StringBuilder();

    synchronized void add(String text, List<String> out) {
      pending.append(text);
      int nl;
      while ((nl = pending.indexOf("\n")) >= 0) {
        out.add(pending.substring(0, nl));
        pending.delete(0, nl + 1);
      }
    }
  }
}
