package dev.sandboxsdk.agent.process;

import java.io.FileInputStream;
import java.io.RandomAccessFile;
import java.io.IOException;
import java.nio.file.Path;
import java.util.concurrent.Executor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Copies one output stream of a process from its FIFO to a sink, on a pooled thread or, for a
 * sink that never blocks, on the native {@link EventLoop} (no thread per stream). A failing
 * sink turns the rest into a discard, so a process never blocks on a pipe nobody reads.
 *
 * <p>Opening a FIFO blocks until the other side opens too, so the spawning thread does it in an
 * order that never waits: {@link #prepare} opens the FIFO read-write (which Linux never blocks),
 * the spawn opens the write end for the child, {@link #spawned} opens our read-only end and drops
 * the read-write one. From then on end of file means every writer, whoever it is, has closed it.
 */
final class OutputPump {
  private static final Logger log = LoggerFactory.getLogger(OutputPump.class);
  private static final int MIN_BUFFER = 8 * 1024;
  private static final int MAX_BUFFER = 64 * 1024;

  private final Path fifo;
  private final FifoPool pool;
  private final Executor io;
  private final String name;
  /** The terminal whose master this pump reads instead of a FIFO, or null. */
  private Pty pty;
  private RandomAccessFile holder;
  private FileInputStream in;
  // The event-loop mode: the FIFO's descriptor, opened non-blocking, or -1.
  private int fd = -1;
  /**
   * Our read end, opened (non-blocking) before the spawn where the C library is bound: a command
   * that deletes the FIFO's name (a wiped temp directory) cannot then keep us from reading it.
   */
  private int early = -1;
  /**
   * A pooled-thread pump's own read end, kept only to {@link #backlog poll} the FIFO (the thread
   * reads through a stream), or -1. Opened, polled and closed under {@link #fdLock}.
   */
  private int probe = -1;
  /**
   * Guards the closing of the descriptor {@link #backlog} polls ({@link #fd} or {@link #probe}),
   * so a poll never lands on a number already reused. Only this: the loop thread holds the pump's
   * monitor while it reads and the exit watcher holds the process's while it polls.
   */
  private final Object fdLock = new Object();
  private EventLoop loop;
  private long loopKey;
  private ManagedProcess.OutputSink loopSink;
  private Runnable loopDone;
  /** Odd while blocked in read(), even otherwise; only the pump thread writes it. */
  private volatile long readSeq;
  private volatile boolean done;
  private volatile long bytes;
  // Only ManagedProcess.maybeFinish (synchronized) touches these.
  private long observedSeq = -1;
  private long observedSince;

  private OutputPump(Path fifo, FifoPool pool, Executor io, String name) {
    this.fifo = fifo;
    this.pool = pool;
    this.io = io;
    this.name = name;
  }

  /** Takes a FIFO and holds it open so the spawn's open of the write end does not block. */
  static OutputPump prepare(FifoPool pool, Executor io, String name) throws IOException {
    OutputPump pump = new OutputPump(pool.take(), pool, io, name);
    pump.holder = new RandomAccessFile(pump.fifo.toFile(), "rw");
    if (Libc.isLoaded()) {
      pump.early = Libc.open(pump.fifo.toString(), Libc.O_RDONLY | Libc.O_NONBLOCK | Libc.O_CLOEXEC, 0);
    }
    return pump;
  }

  /**
   * A pump that reads a terminal's master on {@code loop}: the terminal's output, stdout and
   * stderr merged as on any terminal. EIO from the master is its end of file (no process holds
   * the slave any more); the master is closed then.
   */
  static OutputPump terminal(Pty pty, EventLoop loop, String name) {
    OutputPump pump = new OutputPump(null, null, null, name);
    pump.pty = pty;
    pump.fd = pty.master();
    pump.loop = loop;
    return pump;
  }

  /** A pump for a stream that does not exist (a terminal's stderr): done from the start. */
  static OutputPump none(String name) {
    OutputPump pump = new OutputPump(null, null, null, name);
    pump.done = true;
    return pump;
  }

  Path fifo() {
    return fifo;
  }

  /** The child has its write end: open ours and let go of the placeholder. */
  void spawned() throws IOException {
    spawned(null);
  }

  /**
   * As {@link #spawned()}; with a {@code loop}, the FIFO is opened non-blocking for that loop to
   * read (no thread of its own), and the sink passed to {@link #start} must not block.
   */
  void spawned(EventLoop loop) throws IOException {
    try {
      if (loop != null) {
        if (early >= 0) {
          fd = early;
          early = -1;
        } else {
          fd = Libc.open(fifo.toString(), Libc.O_RDONLY | Libc.O_NONBLOCK | Libc.O_CLOEXEC, 0);
        }
        if (fd < 0) {
          throw new IOException("cannot open " + fifo + ": " + Libc.strerror(Libc.errno()));
        }
        this.loop = loop;
      } else {
        // Writers exist, so this does not block; through our early descriptor the name is not needed.
        in = new FileInputStream(early >= 0 ? "/proc/self/fd/" + early : fifo.toString());
        probe = early;
        early = -1;
      }
    } finally {
      if (early >= 0) {
        Libc.close(early);
        early = -1;
      }
      holder.close();
    }
  }

  /** The spawn failed (or its output cannot be read): close everything and return the FIFO. */
  void abandon() {
    close(true);
  }

  /**
   * Closes our ends; the FIFO goes back to the pool only if no process can hold its write end
   * ({@code reusable}), else it is removed so no later command reads this one's writes.
   */
  private void close(boolean reusable) {
    if (fifo == null) {
      return; // a terminal's pump: its owner closes the terminal
    }
    try {
      holder.close();
      if (early >= 0) {
        Libc.close(early);
        early = -1;
      }
      if (in != null) {
        in.close();
      }
      synchronized (fdLock) {
        if (fd >= 0) {
          Libc.close(fd);
          fd = -1;
        }
        closeProbe();
      }
    } catch (IOException ignored) {
      // nothing was read through them
    }
    if (reusable) {
      pool.give(fifo);
    } else {
      pool.discard(fifo);
    }
  }

  /** For a pump never started: closes its end and counts it as done. */
  void abandonUnstarted() {
    if (!done) {
      close(false); // the command has its write end
      done = true;
    }
  }

  /** Starts copying to {@code target} (null discards) on a pooled thread; {@code whenDone} runs on end of file. */
  void start(ManagedProcess.OutputSink target, Runnable whenDone) {
    if (done) {
      whenDone.run(); // none(): there is nothing to read
      return;
    }
    if (loop != null) {
      startOnLoop(target, whenDone);
      return;
    }
    try {
      io.execute(() -> run(target, whenDone));
    } catch (OutOfMemoryError | java.util.concurrent.RejectedExecutionException noThread) {
      // No thread for the read (a fork bomb holds every slot of a pids limit): nothing will read
      // this stream, so its end is closed and the pump counts as done; the caller stops the process.
      log.debug("{}: no thread to read it: {}", name, noThread.toString());
      close(false);
      done = true;
      throw new NoThread(name);
    }
  }

  /** No thread could be had to read a stream; nothing reads it, and its process must be stopped. */
  static final class NoThread extends RuntimeException {
    NoThread(String name) {
      super("no thread to read " + name, null, false, false);
    }
  }

  /**
   * Reads on the event loop whenever the FIFO has data or lost its last writer. The sequence
   * stays odd (see {@link #idleFor}): between events the loop is, in effect, blocked in a read.
   */
  private void startOnLoop(ManagedProcess.OutputSink sink, Runnable whenDone) {
    readSeq = 1;
    loopSink = sink;
    loopDone = whenDone;
    synchronized (this) { // the handler may run before add() has returned the key
      loopKey = loop.add(fd, events -> {
        synchronized (this) {
          readReady();
        }
      });
    }
  }

  /** On the loop thread: drains what is there (up to 256 KiB, then others get their turn). */
  private void readReady() {
    if (done) {
      return;
    }
    com.sun.jna.Memory buf = loop.buffer;
    for (int round = 0; round < 4; round++) {
      long n = Libc.read(fd, buf, buf.size());
      if (n < 0) {
        int errno = Libc.errno();
        if (errno == Libc.EAGAIN) {
          return;
        }
        if (errno == Libc.EINTR) {
          continue;
        }
        if (pty == null || errno != Libc.EIO) { // EIO: a terminal's end of output
          log.debug("pipe of {} failed: {}", name, Libc.strerror(errno));
        }
        n = 0;
      }
      if (n == 0) {
        loop.remove(loopKey, fd);
        synchronized (fdLock) {
          if (pty != null) {
            pty.close();
          } else {
            Libc.close(fd);
          }
          fd = -1;
          done = true;
        }
        if (pty == null) {
          pool.give(fifo); // end of file: no writer is left
        }
        loopDone.run();
        return;
      }
      bytes += n;
      readSeq += 2;
      if (loopSink != null) {
        byte[] chunk = loop.chunk; // the sink copies what it keeps
        buf.read(0, chunk, 0, (int) n);
        try {
          loopSink.write(chunk, 0, (int) n);
        } catch (IOException | RuntimeException | OutOfMemoryError e) {
          log.debug("output sink of {} failed: {}", name, e.toString());
          loopSink = null;
        }
      }
    }
  }

  boolean isDone() {
    return done;
  }

  long bytes() {
    return bytes;
  }

  /** What waits in a pump's pipe or terminal to be read, as {@link #backlog} found it. */
  enum Backlog {
    /** Nothing: the pipe is empty (or the pump is done). */
    NONE,
    /** Bytes are waiting, and some process still holds the write end. */
    DATA,
    /**
     * No process holds the write end (a terminal: the slave) any more: the reader gets end of
     * file once it has read what is left, however late it gets to run.
     */
    END_OF_FILE,
    /** Not known: no descriptor to poll (the JDK's spawn without the C library). */
    UNKNOWN
  }

  /**
   * Polls, without reading, what waits for this pump: the kernel's word, where {@link #idleFor}
   * only sees whether the reader has read lately (a loop that is busy or starved of CPU has not,
   * with the process's last output still waiting). For a terminal the poll also waits for output
   * the kernel is still moving to the master.
   */
  Backlog backlog() {
    synchronized (fdLock) {
      if (done) {
        return Backlog.NONE;
      }
      int target = loop != null ? fd : probe;
      if (target < 0) {
        return Backlog.UNKNOWN;
      }
      try (com.sun.jna.Memory pollfd = new com.sun.jna.Memory(8)) {
        pollfd.setInt(0, target);
        pollfd.setShort(4, Libc.POLLIN);
        pollfd.setShort(6, (short) 0);
        int n = Libc.poll(pollfd, 1, 0);
        if (n <= 0) {
          return n == 0 ? Backlog.NONE : Backlog.UNKNOWN;
        }
        short revents = pollfd.getShort(6);
        if ((revents & (Libc.POLLHUP | Libc.POLLERR)) != 0) {
          return Backlog.END_OF_FILE;
        }
        return (revents & Libc.POLLIN) != 0 ? Backlog.DATA : Backlog.NONE;
      }
    }
  }

  /** Closes {@link #probe}; the caller holds {@link #fdLock}. */
  private void closeProbe() {
    if (probe >= 0) {
      Libc.close(probe);
      probe = -1;
    }
  }

  /**
   * True once the pump has sat in the same read() call, with nothing arriving, for {@code
   * idleNanos} of observation, and {@code backlog} (from {@link #backlog}, just before) finds
   * nothing waiting. Called only after the process exited. Time alone proves nothing: a reader
   * that is not scheduled reads nothing either, so waiting data restarts the observation.
   */
  boolean idleFor(long now, long idleNanos, Backlog backlog) {
    if (done) {
      return true;
    }
    long seq = readSeq;
    if ((seq & 1) == 0 || seq != observedSeq || backlog == Backlog.DATA) {
      observedSeq = seq;
      observedSince = now;
      return false;
    }
    return now - observedSince >= idleNanos;
  }

  private void run(ManagedProcess.OutputSink sink, Runnable whenDone) {
    ManagedProcess.OutputSink target = sink;
    // Start small (most commands print little; a thousand idle processes hold two buffers each)
    // and grow while reads fill the buffer, up to what a pipe delivers at once.
    byte[] buf = new byte[MIN_BUFFER];
    try (FileInputStream pipe = in) {
      while (true) {
        readSeq++;
        int n = pipe.read(buf);
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
          } catch (IOException | RuntimeException | OutOfMemoryError e) {
            // Even out of memory, keep draining: a dead pump would leave the process unfinished.
            log.debug("output sink of {} failed: {}", name, e.toString());
            target = null;
          }
        }
      }
    } catch (IOException e) {
      log.debug("pipe of {} failed: {}", name, e.toString());
    }
    synchronized (fdLock) {
      closeProbe();
      done = true;
    }
    pool.give(fifo); // end of file: no writer is left
    whenDone.run();
  }
}
