package dev.sandboxsdk.agent.process;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.jna.Memory;
import dev.sandboxsdk.testkit.Await;
import java.io.ByteArrayOutputStream;
import java.io.FileOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A process that has exited finishes without waiting for end of file only when another process
 * holds its pipes, never merely because the agent has not read them yet: output written just
 * before the exit stays unread for as long as the event loop is busy or starved of CPU, and the
 * times {@link LingeringPipes} waits are no bound on that. The loop is stalled here on purpose,
 * and the clock is given to {@link LingeringPipes#drained} rather than waited for.
 */
class LingeringPipesTest {
  /** A group number above any pid_max: no process is in it, as for a command that left nothing behind. */
  private static final long EMPTY_GROUP = 999_999_999L;
  private static final long MS = 1_000_000L;
  /** Past the idle times and the longest linger of {@link LingeringPipes}, and well beyond. */
  private static final long[] LATER_MS = {0, 150, 2_100, 3_100, 60_000};

  /** The pumps here read on the loop, never on a thread of their own. */
  private static final Executor NO_THREAD = r -> {
    throw new AssertionError("the loop reads this pipe");
  };

  private EventLoop loop;
  private final CountDownLatch stalled = new CountDownLatch(1);
  private final CountDownLatch release = new CountDownLatch(1);
  private final ByteArrayOutputStream read = new ByteArrayOutputStream();
  private final CountDownLatch eof = new CountDownLatch(1);

  @BeforeEach
  void loop() {
    assertThat(Libc.load()).as("native calls available").isNull();
    loop = new EventLoop();
  }

  @AfterEach
  void stop() {
    release.countDown();
    loop.close();
  }

  /** Blocks the loop thread in a handler until {@link #release}, as a busy or starved loop would be. */
  private void stallLoop() throws InterruptedException {
    int[] fds = new int[2];
    assertThat(Libc.pipe2(fds, Libc.O_CLOEXEC | Libc.O_NONBLOCK)).isZero();
    long[] key = new long[1];
    key[0] = loop.add(fds[0], events -> {
      stalled.countDown();
      try {
        release.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      loop.remove(key[0], fds[0]);
      Libc.close(fds[0]);
    });
    write(fds[1], "x");
    Libc.close(fds[1]);
    assertThat(stalled.await(5, TimeUnit.SECONDS)).as("the loop is stalled").isTrue();
  }

  private static void write(int fd, String text) {
    byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
    try (Memory m = new Memory(bytes.length)) {
      m.write(0, bytes, 0, bytes.length);
      assertThat(Libc.write(fd, m, bytes.length)).isEqualTo(bytes.length);
    }
  }

  private void startPump(OutputPump pump) {
    pump.start((bytes, off, len) -> {
      synchronized (read) {
        read.write(bytes, off, len);
      }
    }, eof::countDown);
  }

  private String readSoFar() {
    synchronized (read) {
      return read.toString(StandardCharsets.UTF_8);
    }
  }

  @Test
  void aTerminalIsNotDrainedWhileTheLastLineItsProgramWroteIsUnread() throws Exception {
    Pty pty = Pty.open(80, 24);
    OutputPump pump = OutputPump.terminal(pty, loop, "test terminal");
    startPump(pump);
    stallLoop();
    // The program: writes its last line on the terminal and exits (closes the slave).
    int slave = Libc.open(pty.slavePath(), Libc.O_RDWR | Libc.O_NOCTTY | Libc.O_CLOEXEC, 0);
    assertThat(slave).isNotNegative();
    write(slave, "hello, w\u00f6rld!\n");
    Libc.close(slave);

    assertNotDrainedWhileUnread(pump, "hello, w\u00f6rld!\r\n");
    assertThat(pump.isDone()).isTrue();
  }

  @Test
  void aBackgroundProcesssPipeIsNotDrainedWhileItsLastLineIsUnread() throws Exception {
    FifoPool pool = new FifoPool(ProcessGroups.which("mkfifo", System.getenv("PATH")));
    try {
      OutputPump pump = OutputPump.prepare(pool, NO_THREAD, "test stdout");
      FileOutputStream command = new FileOutputStream(pump.fifo().toFile()); // the command's write end
      pump.spawned(loop);
      startPump(pump);
      stallLoop();
      command.write("last line\n".getBytes(StandardCharsets.UTF_8));
      command.close(); // the command exits

      assertNotDrainedWhileUnread(pump, "last line\n");
    } finally {
      pool.close();
    }
  }

  @Test
  void aPipeALeftoverChildHoldsIsNotIdleWhileItHoldsUnreadOutput() throws Exception {
    FifoPool pool = new FifoPool(ProcessGroups.which("mkfifo", System.getenv("PATH")));
    try {
      OutputPump pump = OutputPump.prepare(pool, NO_THREAD, "test stdout");
      FileOutputStream leftover = new FileOutputStream(pump.fifo().toFile()); // a child that stays
      pump.spawned(loop);
      startPump(pump);
      stallLoop();
      leftover.write("last line\n".getBytes(StandardCharsets.UTF_8)); // then the command exits

      LingeringPipes lingering = new LingeringPipes(EMPTY_GROUP, pump, OutputPump.none("test stderr"));
      long exitSeen = System.nanoTime();
      for (long ms : new long[] {0, 150, 2_100}) {
        assertThat(lingering.drained(exitSeen + ms * MS))
            .as("drained %d ms after the exit, with output still unread", ms).isFalse();
      }
      // The longest linger still ends the wait: a child that never stops writing must not keep
      // the process it outlived from finishing.
      assertThat(lingering.drained(exitSeen + 3_100 * MS)).isTrue();

      release.countDown();
      assertThat(Await.until(5_000, () -> readSoFar().equals("last line\n"))).isTrue();
      leftover.close();
      assertThat(eof.await(5, TimeUnit.SECONDS)).as("end of file once the child closes it").isTrue();
    } finally {
      pool.close();
    }
  }

  /**
   * With the loop stalled and the process gone, its last output unread: never drained, however
   * late; once the loop runs, that output is read to its end.
   */
  private void assertNotDrainedWhileUnread(OutputPump pump, String lastOutput) throws Exception {
    LingeringPipes lingering = new LingeringPipes(EMPTY_GROUP, pump, OutputPump.none("test stderr"));
    long exitSeen = System.nanoTime();
    for (long ms : LATER_MS) {
      assertThat(lingering.drained(exitSeen + ms * MS))
          .as("drained %d ms after the exit, with the last output still unread", ms).isFalse();
    }
    release.countDown();
    assertThat(eof.await(5, TimeUnit.SECONDS)).as("end of file once the loop runs").isTrue();
    assertThat(readSoFar()).isEqualTo(lastOutput);
  }
}
