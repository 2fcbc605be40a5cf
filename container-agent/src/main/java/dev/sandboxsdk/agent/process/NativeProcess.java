package dev.sandboxsdk.agent.process;

import com.sun.jna.Memory;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A process started by {@link NativeSpawner}. Its output goes to the agent's FIFOs, so the JDK's
 * stream getters return empty streams; its exit is recorded by the {@link EventLoop} that
 * reaped it. Exit values follow the JDK: the exit status, or 128+N after death by signal N.
 */
final class NativeProcess extends Process {
  private final int pid;
  private final OutputStream stdin;
  private final CompletableFuture<Process> exit = new CompletableFuture<>();
  private volatile int exitValue;

  /** @param stdinFd the write end of the process's stdin pipe, or -1 (its stdin is /dev/null) */
  NativeProcess(int pid, int stdinFd) {
    this.pid = pid;
    this.stdin = stdinFd < 0 ? OutputStream.nullOutputStream() : new FdOutputStream(stdinFd);
  }

  /** Records the wait status from waitpid(2). */
  void exited(int status) {
    int sig = status & 0x7f;
    exitValue = sig == 0 ? (status >> 8) & 0xff : 128 + sig;
    exit.complete(this);
  }

  @Override
  public OutputStream getOutputStream() {
    return stdin;
  }

  @Override
  public InputStream getInputStream() {
    return InputStream.nullInputStream();
  }

  @Override
  public InputStream getErrorStream() {
    return InputStream.nullInputStream();
  }

  @Override
  public int waitFor() throws InterruptedException {
    try {
      exit.get();
    } catch (ExecutionException e) {
      throw new IllegalStateException(e.getCause());
    }
    return exitValue;
  }

  @Override
  public boolean waitFor(long timeout, TimeUnit unit) throws InterruptedException {
    try {
      exit.get(timeout, unit);
      return true;
    } catch (TimeoutException e) {
      return false;
    } catch (ExecutionException e) {
      throw new IllegalStateException(e.getCause());
    }
  }

  @Override
  public int exitValue() {
    if (!exit.isDone()) {
      throw new IllegalThreadStateException("process " + pid + " has not exited");
    }
    return exitValue;
  }

  @Override
  public boolean isAlive() {
    return !exit.isDone();
  }

  @Override
  public void destroy() {
    if (isAlive()) {
      Libc.kill(pid, Signal.SIGTERM.number());
    }
  }

  @Override
  public Process destroyForcibly() {
    if (isAlive()) {
      Libc.kill(pid, Signal.SIGKILL.number());
    }
    return this;
  }

  @Override
  public long pid() {
    return pid;
  }

  /** Completes when the process has been reaped; dependent actions may run on the event loop. */
  @Override
  public CompletableFuture<Process> onExit() {
    return exit.copy();
  }

  @Override
  public boolean supportsNormalTermination() {
    return true;
  }

  /** Blocking writes to a pipe descriptor the agent owns. */
  private static final class FdOutputStream extends OutputStream {
    private int fd;

    FdOutputStream(int fd) {
      this.fd = fd;
    }

    @Override
    public void write(int b) throws IOException {
      write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public synchronized void write(byte[] b, int off, int len) throws IOException {
      java.util.Objects.checkFromIndexSize(off, len, b.length);
      if (fd < 0) {
        throw new IOException("Stream closed");
      }
      if (len == 0) {
        return;
      }
      try (Memory buf = new Memory(Math.min(len, 64 * 1024))) {
        while (len > 0) {
          int n = (int) Math.min(len, buf.size());
          buf.write(0, b, off, n);
          int done = 0;
          while (done < n) {
            long w = Libc.write(fd, buf.share(done), n - done);
            if (w < 0) {
              int errno = Libc.errno();
              if (errno == Libc.EINTR) {
                continue;
              }
              throw new IOException(Libc.strerror(errno));
            }
            done += (int) w;
          }
          off += n;
          len -= n;
        }
      }
    }

    @Override
    public synchronized void close() {
      if (fd >= 0) {
        Libc.close(fd);
        fd = -1;
      }
    }
  }
}
