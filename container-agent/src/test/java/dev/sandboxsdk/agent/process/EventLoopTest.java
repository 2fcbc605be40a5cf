package dev.sandboxsdk.agent.process;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class EventLoopTest {
  /** Whether descriptor {@code fd} of this JVM is an epoll instance (other tests' threads may open and close others meanwhile). */
  private static boolean isEpoll(int fd) {
    try {
      return Files.readSymbolicLink(Path.of("/proc/self/fd/" + fd)).toString().equals("anon_inode:[eventpoll]");
    } catch (Exception closed) {
      return false;
    }
  }

  @Test
  void aStoppedLoopClosesItsEpollDescriptorAndRefusesNewWatches() throws Exception {
    assertThat(Libc.load()).as("native calls available").isNull();
    EventLoop loop = new EventLoop();
    int epfd = loop.descriptor();
    assertThat(isEpoll(epfd)).as("the loop's epoll descriptor").isTrue();
    loop.close();
    long deadline = System.nanoTime() + 5_000_000_000L;
    while (isEpoll(epfd) && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    assertThat(isEpoll(epfd)).as("the epoll descriptor is closed once the loop ends").isFalse();
    // A spawn during shutdown gets an error (NativeSpawner then reaps on a thread) instead of
    // touching a descriptor number the process may already have reused.
    assertThatThrownBy(() -> loop.add(0, events -> { })).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("stopped");
    loop.remove(1, 0); // harmless after the end
  }
}
