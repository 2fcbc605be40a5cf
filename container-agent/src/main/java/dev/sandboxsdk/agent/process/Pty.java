package dev.sandboxsdk.agent.process;

import com.sun.jna.Memory;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The agent's side of a pseudo-terminal: the master descriptor, opened with glibc's
 * {@code posix_openpt}/{@code grantpt}/{@code unlockpt}/{@code ptsname_r} through JNA (the JDK
 * has no terminal API). The process opens the slave by its path (see {@link NativeSpawner}); the
 * agent never holds the slave, so once every process has closed it, reading the master fails with
 * EIO, which is the terminal's end of output.
 *
 * <p>The master is non-blocking: the {@link EventLoop} reads it, and input that the program does
 * not read (the terminal's input queue is full) waits in {@link #write} a bounded time instead of
 * blocking a request thread forever. The descriptor is closed once the output has ended and no
 * write or resize is using it, so a number a writer holds is never reused under it. Thread-safe.
 */
final class Pty {
  /** How long a write waits for the program to make room in the terminal's input queue. */
  private static final long WRITE_STALL_NANOS = TimeUnit.SECONDS.toNanos(10);
  /** Input is copied to native memory this much at a time. */
  private static final int WRITE_CHUNK = 64 * 1024;

  private final int master;
  private final String slave;
  private final ReentrantLock writeLock = new ReentrantLock();
  // Guarded by this.
  private int users;
  private boolean closing;
  private boolean closed;
  private int cols;
  private int rows;

  private Pty(int master, String slave) {
    this.master = master;
    this.slave = slave;
  }

  /**
   * Opens a new pseudo-terminal of {@code cols} x {@code rows} with IUTF8 set (line editing then
   * erases whole UTF-8 characters).
   *
   * @throws IOException with the reason, e.g. no pseudo-terminals left
   */
  static Pty open(int cols, int rows) throws IOException {
    int fd = Libc.posix_openpt(Libc.O_RDWR | Libc.O_NOCTTY | Libc.O_CLOEXEC | Libc.O_NONBLOCK);
    if (fd < 0) {
      throw new IOException("cannot open a pseudo-terminal: " + Libc.strerror(Libc.errno()));
    }
    try {
      if (Libc.grantpt(fd) != 0 || Libc.unlockpt(fd) != 0) {
        throw new IOException("cannot unlock the pseudo-terminal: " + Libc.strerror(Libc.errno()));
      }
      byte[] name = new byte[128];
      int rc = Libc.ptsname_r(fd, name, name.length);
      if (rc != 0) {
        throw new IOException("cannot name the pseudo-terminal: " + Libc.strerror(rc));
      }
      int len = 0;
      while (len < name.length && name[len] != 0) {
        len++;
      }
      Pty pty = new Pty(fd, new String(name, 0, len, StandardCharsets.UTF_8));
      try (Memory termios = new Memory(256)) {
        if (Libc.tcgetattr(fd, termios) == 0) {
          termios.setInt(0, termios.getInt(0) | Libc.IUTF8);
          Libc.tcsetattr(fd, Libc.TCSANOW, termios);
        }
      }
      pty.setSize(cols, rows);
      return pty;
    } catch (IOException | RuntimeException e) {
      Libc.close(fd);
      throw e;
    }
  }

  /** The slave's path, e.g. {@code /dev/pts/3}, for the process to open. */
  String slavePath() {
    return slave;
  }

  /** The master descriptor, for the event loop to read. */
  int master() {
    return master;
  }

  synchronized int cols() {
    return cols;
  }

  synchronized int rows() {
    return rows;
  }

  /**
   * Sets the window size (TIOCSWINSZ on the master); the kernel sends SIGWINCH to the terminal's
   * foreground process group if it changed.
   *
   * @throws IllegalStateException if the terminal has closed (its processes are gone)
   */
  void resize(int newCols, int newRows) throws IOException {
    acquire();
    try {
      setSize(newCols, newRows);
    } finally {
      release();
    }
  }

  private void setSize(int newCols, int newRows) throws IOException {
    try (Memory winsize = new Memory(8)) {
      winsize.clear();
      winsize.setShort(0, (short) newRows); // struct winsize: ws_row, ws_col, ws_xpixel, ws_ypixel
      winsize.setShort(2, (short) newCols);
      synchronized (this) {
        if (Libc.ioctl(master, Libc.TIOCSWINSZ, winsize) != 0) {
          throw new IOException("cannot resize the terminal: " + Libc.strerror(Libc.errno()));
        }
        cols = newCols;
        rows = newRows;
      }
    }
  }

  /**
   * Writes {@code len} bytes of {@code data} from {@code off} as typed input, in order with other writes.
   *
   * @throws IOException if the terminal has no reader any more (EIO) or the program has not made
   *     room for the input within 10 s
   * @throws IllegalStateException if the terminal has closed
   */
  void write(byte[] data, int off, int len) throws IOException {
    if (len == 0) {
      return;
    }
    acquire();
    writeLock.lock();
    // Native memory of at most one chunk, however large the input (the stdin route allows MiBs).
    try (Memory buf = new Memory(Math.min(len, WRITE_CHUNK))) {
      int done = 0;
      int chunkStart = 0;
      int chunkEnd = 0;
      long stalledSince = 0;
      while (done < len) {
        if (done == chunkEnd) {
          chunkStart = done;
          chunkEnd = Math.min(len, done + WRITE_CHUNK);
          buf.write(0, data, off + chunkStart, chunkEnd - chunkStart);
        }
        long w = Libc.write(master, buf.share(done - chunkStart), chunkEnd - done);
        if (w >= 0) {
          done += (int) w;
          stalledSince = 0;
          continue;
        }
        int errno = Libc.errno();
        if (errno == Libc.EINTR) {
          continue;
        }
        if (errno != Libc.EAGAIN) {
          throw new IOException(errno == Libc.EIO ? "the terminal has closed" : Libc.strerror(errno));
        }
        long now = System.nanoTime();
        if (stalledSince == 0) {
          stalledSince = now;
        } else if (now - stalledSince > WRITE_STALL_NANOS) {
          throw new IOException("the terminal's input queue stayed full for 10 s (the program does not read its"
              + " input); " + done + " of " + len + " bytes were written");
        }
        awaitWritable();
      }
    } finally {
      writeLock.unlock();
      release();
    }
  }

  private void awaitWritable() {
    try (Memory pollfd = new Memory(8)) {
      pollfd.setInt(0, master);
      pollfd.setShort(4, Libc.POLLOUT);
      pollfd.setShort(6, (short) 0);
      Libc.poll(pollfd, 1, 100);
    }
  }

  /** The terminal as a stream of input, for the stdin endpoint. */
  OutputStream input() {
    return new OutputStream() {
      @Override
      public void write(int b) throws IOException {
        write(new byte[] {(byte) b}, 0, 1);
      }

      @Override
      public void write(byte[] b, int off, int len) throws IOException {
        try {
          Pty.this.write(b, off, len);
        } catch (IllegalStateException e) {
          throw new IOException(e.getMessage(), e);
        }
      }

      @Override
      public void close() {
        // A terminal has no end of input to send; the master closes with the output.
      }
    };
  }

  private synchronized void acquire() {
    if (closing) {
      throw new IllegalStateException("the terminal has closed: no process holds it any more");
    }
    users++;
  }

  private synchronized void release() {
    users--;
    closeIfUnused();
  }

  /** The output has ended (or the spawn failed): close the master once nobody is using it. Idempotent. */
  synchronized void close() {
    closing = true;
    closeIfUnused();
  }

  private void closeIfUnused() {
    if (closing && users == 0 && !closed) {
      closed = true;
      Libc.close(master);
    }
  }

  synchronized boolean isClosed() {
    return closed;
  }
}
