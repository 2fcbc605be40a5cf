package dev.sandboxsdk.agent.process;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class EventLoopTest {
  private static long fds() throws Exception {
    try (var s = Files.list(Path.of("/proc/self/fd"))) {
      return s.count();
    }
  }

  @Test
  void aStoppedLoopClosesItsEpollDescriptorAndRefusesNewWatches() throws Exception {
    assertThat(Libc.load()).as("native calls available").isNull();
    long before = fds();
    EventLoop loop = new EventLoop();
    assertThat(fds()).isEqualTo(before + 1);
    loop.close();
    long deadline = System.nanoTime() + 5_000_000_000L;
    while (fds() > before && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    assertThat(fds()).as("the epoll descriptor is closed once the loop ends").isEqualTo(before);
    // A spawn during shutdown gets an error (NativeSpawner then reaps on a thread) instead of
    // touching a descriptor number the process may already have reused.
    assertThatThrownBy(() -> loop.add(0, events -> { })).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("stopped");
    loop.remove(1, 0); // harmless after the end
  }
}
