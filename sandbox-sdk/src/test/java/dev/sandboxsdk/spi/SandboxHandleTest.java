package dev.sandboxsdk.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandboxsdk.ForwardingSandbox;
import dev.sandboxsdk.ProcessInfo;
import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxInfo;
import dev.sandboxsdk.SandboxState;
import java.lang.reflect.Field;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The lifecycle every provider's handle shares, against a fake backend: close and destroy,
 * the exit hook, shutdown and wake with the client swapped, and the errors of a closed or stopped
 * handle.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class SandboxHandleTest {

  /** A client that counts its calls and closes. */
  static final class FakeClient extends ForwardingSandbox {
    final AtomicInteger calls = new AtomicInteger();
    final AtomicInteger closes = new AtomicInteger();

    @Override
    protected Sandbox delegate() {
      throw new UnsupportedOperationException("only listProcesses is faked");
    }

    @Override
    public List<ProcessInfo> listProcesses() {
      calls.incrementAndGet();
      return List.of();
    }

    @Override
    public void destroy() {
      close();
    }

    @Override
    public void close() {
      closes.incrementAndGet();
    }
  }

  /** A backend of one sandbox that records what the handle asked of it. */
  static class FakeBackend implements SandboxBackend {
    final List<String> log = new ArrayList<>();
    volatile boolean exists = true;
    volatile boolean running = true;
    /** What wake() returns: null for "the current client, or a new one if there is none". */
    volatile FakeClient next;

    @Override
    public SandboxInfo info(String id) {
      log.add("info");
      return new SandboxInfo(id, "fake", id, "", running ? SandboxState.RUNNING : SandboxState.STOPPED, Instant.EPOCH,
          null, Map.of(), null);
    }

    @Override
    public Sandbox wake(String id, Sandbox current) {
      log.add("wake");
      running = true;
      FakeClient n = next;
      next = null;
      return n != null ? n : current != null ? current : new FakeClient();
    }

    @Override
    public boolean stop(String id) {
      log.add("stop");
      running = false;
      return exists;
    }

    @Override
    public void remove(String id) {
      log.add("remove");
      exists = false;
    }

    @Override
    public SandboxException notRunning(String id, String what) {
      return new SandboxException("the " + what + " is stopped: call wake()", null);
    }
  }

  static final class Handle extends SandboxHandle {
    Handle(SandboxBackend backend, Sandbox client, boolean removeOnClose, AutoCloseable owned) {
      super(backend, "sb-1", "fake sandbox 'sb-1'", client, removeOnClose, owned);
    }

    Sandbox current() {
      return client();
    }
  }

  private final FakeBackend backend = new FakeBackend();
  private final FakeClient client = new FakeClient();

  @Test
  void callsGoToTheClientUntilClose() {
    Handle h = new Handle(backend, client, false, null);
    h.listProcesses();
    assertThat(client.calls).hasValue(1);
    assertThat(h.id()).isEqualTo("sb-1");
    h.close();
    assertThatThrownBy(h::listProcesses).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("fake sandbox 'sb-1' is closed");
    assertThatThrownBy(h::wake).isInstanceOf(IllegalStateException.class).hasMessageContaining("get(\"sb-1\")");
    assertThatThrownBy(h::shutdown).isInstanceOf(IllegalStateException.class).hasMessageContaining("is closed");
    assertThat(backend.log).as("a closed handle neither wakes nor stops the sandbox").doesNotContain("wake", "stop");
    assertThat(h.info().id()).as("info() works after close").isEqualTo("sb-1");
    assertThat(client.calls).hasValue(1);
  }

  @Test
  void closeIsIdempotentAndLeavesASandboxItDoesNotRemove() throws Exception {
    AtomicInteger ownedCloses = new AtomicInteger();
    Handle h = new Handle(backend, client, false, ownedCloses::incrementAndGet);
    h.close();
    h.close();
    assertThat(client.closes).hasValue(1);
    assertThat(ownedCloses).hasValue(1);
    assertThat(backend.log).doesNotContain("remove");
  }

  @Test
  void destroyAfterCloseRemovesTheSandbox() {
    Handle h = new Handle(backend, client, false, null);
    h.close();
    h.destroy();
    assertThat(backend.log).containsExactly("remove");
    h.destroy();
    assertThat(backend.log).as("destroy is idempotent").containsExactly("remove");
    assertThat(client.closes).as("the client is closed once").hasValue(1);
  }

  @Test
  void aFailedRemovalIsTriedAgainByTheNextDestroy() {
    AtomicInteger attempts = new AtomicInteger();
    FakeBackend flaky = new FakeBackend() {
      @Override
      public void remove(String id) {
        if (attempts.incrementAndGet() == 1) {
          throw new SandboxException("the engine is busy", null);
        }
        super.remove(id);
      }
    };
    Handle h = new Handle(flaky, client, false, null);
    assertThatThrownBy(h::destroy).hasMessage("the engine is busy");
    assertThatThrownBy(h::listProcesses).isInstanceOf(IllegalStateException.class);
    h.destroy();
    assertThat(flaky.log).containsExactly("remove");
    h.destroy();
    assertThat(attempts).hasValue(2);
  }

  @Test
  void aHandleThatRemovesOnCloseRemovesOnceAndDropsItsExitHook() throws Exception {
    Handle h = new Handle(backend, client, true, null);
    Thread hook = exitHook(h);
    assertThat(Runtime.getRuntime().removeShutdownHook(hook)).as("the exit hook is registered").isTrue();
    Runtime.getRuntime().addShutdownHook(hook);
    h.close();
    h.close();
    assertThat(backend.log).containsExactly("remove");
    assertThat(client.closes).hasValue(1);
    assertThat(Runtime.getRuntime().removeShutdownHook(hook)).as("the exit hook is gone after close").isFalse();
  }

  @Test
  void theExitHookRemovesTheSandbox() throws Exception {
    Handle h = new Handle(backend, client, true, null);
    Thread hook = exitHook(h);
    hook.run();
    assertThat(backend.log).containsExactly("remove");
    assertThat(Runtime.getRuntime().removeShutdownHook(hook)).isFalse();
    assertThatThrownBy(h::listProcesses).isInstanceOf(IllegalStateException.class);
  }

  @Test
  void aHandleThatKeepsItsSandboxRegistersNoExitHook() throws Exception {
    assertThat(exitHook(new Handle(backend, client, false, null))).isNull();
  }

  @Test
  void shutdownStopsDropsTheClientAndCallsSayWhy() {
    Handle h = new Handle(backend, client, false, null);
    h.shutdown();
    assertThat(backend.log).containsExactly("stop");
    assertThat(client.closes).hasValue(1);
    assertThat(h.current()).isNull();
    assertThatThrownBy(h::listProcesses).isInstanceOf(SandboxException.class)
        .hasMessage("the fake sandbox 'sb-1' is stopped: call wake()");
  }

  @Test
  void shutdownOfASandboxThatIsGoneThrowsAndDropsTheClient() {
    backend.exists = false;
    Handle h = new Handle(backend, client, false, null);
    assertThatThrownBy(h::shutdown).isInstanceOf(SandboxException.class)
        .hasMessage("the fake sandbox 'sb-1' no longer exists");
    assertThat(client.closes).hasValue(1);
    assertThat(h.current()).isNull();
  }

  @Test
  void wakeConnectsAgainAfterShutdown() {
    Handle h = new Handle(backend, client, false, null);
    h.shutdown();
    FakeClient again = new FakeClient();
    backend.next = again;
    h.wake();
    h.listProcesses();
    assertThat(again.calls).hasValue(1);
    assertThat(client.calls).hasValue(0);
    assertThat(client.closes).hasValue(1);
  }

  @Test
  void wakeSwapsTheClientAndClosesTheOldOneOnce() {
    Handle h = new Handle(backend, client, false, null);
    FakeClient moved = new FakeClient();
    backend.next = moved; // e.g. the agent is published on another port now
    h.wake();
    assertThat(client.closes).hasValue(1);
    assertThat(h.current()).isSameAs(moved);
    h.wake(); // the backend keeps the current client
    assertThat(h.current()).isSameAs(moved);
    assertThat(moved.closes).hasValue(0);
    h.close();
    assertThat(client.closes).hasValue(1);
    assertThat(moved.closes).hasValue(1);
  }

  @Test
  void aCloseDuringAWakeClosesTheClientTheWakeMade() throws Exception {
    CountDownLatch inWake = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    FakeClient made = new FakeClient();
    FakeBackend slow = new FakeBackend() {
      @Override
      public Sandbox wake(String id, Sandbox current) {
        inWake.countDown();
        await(release);
        return made;
      }
    };
    Handle h = new Handle(slow, null, false, null);
    CompletableFuture<Void> waking = CompletableFuture.runAsync(h::wake);
    assertThat(inWake.await(10, TimeUnit.SECONDS)).isTrue();
    CompletableFuture<Void> closing = CompletableFuture.runAsync(h::close);
    Thread.sleep(100);
    assertThat(closing).as("close waits for the wake").isNotDone();
    release.countDown();
    waking.get(10, TimeUnit.SECONDS);
    closing.get(10, TimeUnit.SECONDS);
    assertThat(made.closes).as("the client the wake made is closed with the handle").hasValue(1);
    assertThatThrownBy(h::listProcesses).isInstanceOf(IllegalStateException.class);
  }

  private static void await(CountDownLatch latch) {
    try {
      if (!latch.await(10, TimeUnit.SECONDS)) {
        throw new AssertionError("not released");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  private static Thread exitHook(SandboxHandle h) throws ReflectiveOperationException {
    Field f = SandboxHandle.class.getDeclaredField("shutdownHook");
    f.setAccessible(true);
    return (Thread) f.get(h);
  }
}
