package dev.sandboxsdk.agent.process;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.concurrent.Executor;
import org.junit.jupiter.api.Test;

class OutputPumpTest {
  /** What a thread pool throws when the kernel refuses a new thread (a fork bomb holds the pids limit). */
  private static final Executor NO_THREADS = r -> {
    throw new OutOfMemoryError("unable to create native thread: possibly out of memory or process/resource limits reached");
  };

  @Test
  void aStreamThatNoThreadCanReadIsClosedSoItsWriterFailsInsteadOfBlocking() throws Exception {
    FifoPool pool = new FifoPool(ProcessGroups.which("mkfifo", System.getenv("PATH")));
    try {
      OutputPump pump = OutputPump.prepare(pool, NO_THREADS, "test stdout");
      Path fifo = pump.fifo();
      try (FileOutputStream command = new FileOutputStream(fifo.toFile())) { // the command's write end
        pump.spawned();

        assertThatThrownBy(() -> pump.start(null, () -> { })).isInstanceOf(OutputPump.NoThread.class);

        assertThat(pump.isDone()).as("counts as done, so the process can finish").isTrue();
        assertThat(Files.exists(fifo, LinkOption.NOFOLLOW_LINKS))
            .as("removed, so no later command reads this one's writes").isFalse();
        assertThat(pool.take()).isNotEqualTo(fifo);
        // No reader is left: the command's next write fails at once (EPIPE) instead of filling the pipe and blocking.
        assertThatThrownBy(() -> command.write(new byte[1])).isInstanceOf(IOException.class);
      }
    } finally {
      pool.close();
    }
  }
}
