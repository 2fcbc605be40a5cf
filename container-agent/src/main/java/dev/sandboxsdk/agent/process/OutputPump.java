package dev.sandboxsdk.agent.process;

import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Copies one output stream of a process from its FIFO to a sink, on a pooled thread. Created
 * before the process is spawned: it opens the read end first (the spawn's open of the write end
 * waits for it), then waits for its sink, then copies until end of file. A sink that fails turns
 * the rest into a discard, so a process never blocks on a pipe nobody reads.
 */
final class OutputPump {
  private static final Logger log = LoggerFactory.getLogger(OutputPump.class);
  private static final int MIN_BUFFER = 8 * 1024;
  private static final int MAX_BUFFER = 64 * 1024;

  private final Path fifo;
  private final FifoPool pool;
  private final String name;
  private final CompletableFuture<ManagedProcess.OutputSink> sink = new CompletableFuture<>();
  private volatile Runnable onDone = () -> { };
  /** Odd while blocked in read(), even otherwise; only the pump thread writes it. */
  private volatile long readSeq;
  private volatile boolean done;
  private volatile long bytes;
  // Only ManagedProcess.maybeFinish (synchronized) touches these.
  private long observedSeq = -1;
  private long observedSince;

  OutputPump(Path fifo, FifoPool pool, Executor io, String name) {
    this.fifo = fifo;
    this.pool = pool;
    this.name = name;
    io.execute(this::run);
  }

  Path fifo() {
    return fifo;
  }

  /** Starts copying to {@code target} (null discards); {@code whenDone} runs on end of file. */
  void start(ManagedProcess.OutputSink target, Runnable whenDone) {
    this.onDone = whenDone;
    sink.complete(target);
  }

  /** The spawn failed: release the pump, which is (or soon will be) waiting to open the FIFO. */
  void abandon() {
    sink.complete(null);
    try (FileOutputStream unblock = new FileOutputStream(fifo.toFile())) {
      // opening and closing the write end lets the reader's open return and then see EOF
    } catch (IOException e) {
      log.warn("cannot release the pipe reader of a failed spawn: {}", e.toString());
    }
  }

  boolean isDone() {
    return done;
  }

  long bytes() {
    return bytes;
  }

  /**
   * True once the pump has sat in the same read() call, with nothing arriving, for {@code
   * idleNanos} of observation. Called only after the process exited, so data it wrote is already
   * in the pipe and would have ended that read.
   */
  boolean idleFor(long now, long idleNanos) {
    if (done) {
      return true;
    }
    long seq = readSeq;
    if ((seq & 1) == 0 || seq != observedSeq) {
      observedSeq = seq;
      observedSince = now;
      return false;
    }
    return now - observedSince >= idleNanos;
  }

  private void run() {
    FileInputStream in;
    try {
      in = new FileInputStream(fifo.toFile()); // returns once the spawn opened the write end
    } catch (IOException e) {
      log.error("cannot open the output pipe {}: {}", fifo, e.toString());
      done = true;
      onDoneAfterSink();
      return;
    }
    ManagedProcess.OutputSink target = sink.join();
    // Start small (most commands print little; a thousand idle processes hold two buffers each)
    // and grow while reads fill the buffer, up to what a pipe delivers at once.
    byte[] buf = new byte[MIN_BUFFER];
    try (in) {
      while (true) {
        readSeq++;
        int n = in.read(buf);
        readSeq++;
        if (n < 0) {
          break;
        }
        bytes += n;
        if (n == buf.length && buf.length < MAX_BUFFER) {
          byte[] bigger = new byte[buf.length * 2];
          System.arraycopy(buf, 0, bigger, 0, n);
          buf = bigger;
        }
        if (target != null) {
          try {
            target.write(buf, 0, n);
          } catch (IOException | RuntimeException e) {
            log.debug("output sink of {} failed: {}", name, e.toString());
            target = null;
          }
        }
      }
    } catch (IOException e) {
      log.debug("pipe of {} failed: {}", name, e.toString());
    }
    done = true;
    pool.give(fifo); // end of file: no writer is left
    onDone.run();
  }

  private void onDoneAfterSink() {
    sink.join();
    onDone.run();
  }
}
