package dev.sandboxsdk.spi;

import dev.sandboxsdk.ForwardingSandbox;
import dev.sandboxsdk.ManagedSandbox;
import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxInfo;
import dev.sandboxsdk.SandboxSpec;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link ManagedSandbox} of every provider: the lifecycle written once over a
 * {@link SandboxBackend}. Calls go to a client of the sandbox's agent while this handle knows it
 * runs; {@link #shutdown()} stops it (the backend keeps its files) and drops the client;
 * {@link #wake()} starts it and connects again; a call while stopped fails with the backend's
 * {@link SandboxBackend#notRunning(String, String) reason}; after {@link #close()} every call but
 * {@link #info()} and {@link #destroy()} throws {@link IllegalStateException}. A handle that removes its sandbox on
 * {@link #close()} (an unnamed sandbox, from the handle that created it) also removes it when this
 * JVM exits. Providers subclass it to add what their sandboxes have beyond the seam (an address, a
 * pod name). Thread-safe.
 */
public class SandboxHandle extends ForwardingSandbox implements ManagedSandbox {
  private static final Logger log = LoggerFactory.getLogger(SandboxHandle.class);

  private final SandboxBackend backend;
  private final String id;
  private final String what;
  private final boolean removeOnClose;
  private final AutoCloseable owned;
  private final Thread shutdownHook;
  private final Object lifecycle = new Object();
  /** The client of the running agent; null while this handle knows the sandbox stopped, and after close. */
  private volatile Sandbox client;
  private volatile boolean closed;
  /** Whether a removal succeeded; guarded by {@link #lifecycle}. */
  private boolean removed;

  /**
   * @param backend what starts, stops and removes the sandbox
   * @param id the sandbox's id at the backend
   * @param what how messages name the sandbox, e.g. {@code sandbox container 'review'}
   * @param client a client of its running agent, or null if it is not running
   * @param removeOnClose whether {@link #close()} (and this JVM's exit) removes the sandbox
   * @param owned closed with this handle (e.g. a provider made for this sandbox alone), or null
   */
  protected SandboxHandle(SandboxBackend backend, String id, String what, Sandbox client, boolean removeOnClose,
      AutoCloseable owned) {
    this.backend = Objects.requireNonNull(backend, "backend == null");
    this.id = Objects.requireNonNull(id, "id == null");
    this.what = Objects.requireNonNull(what, "what == null");
    this.client = client;
    this.removeOnClose = removeOnClose;
    this.owned = owned;
    if (removeOnClose) {
      shutdownHook = new Thread(this::removeQuietly, "sandbox-remove-at-exit");
      Runtime.getRuntime().addShutdownHook(shutdownHook);
    } else {
      shutdownHook = null;
    }
  }

  /**
   * Readies a sandbox a provider has just made: runs {@code start}, then clones the spec's
   * repository ({@link SandboxSpec#gitRepository()}), if any. If either fails the sandbox is
   * destroyed, so that a failed create leaves nothing behind, and the failure is thrown.
   */
  public static <T extends ManagedSandbox> T prepare(T sandbox, SandboxSpec spec, Runnable start) {
    try {
      start.run();
      if (spec.gitRepository() != null) {
        sandbox.git().checkout(spec.gitRepository(), spec.gitCheckoutOptions());
      }
    } catch (RuntimeException e) {
      try {
        sandbox.destroy();
      } catch (RuntimeException suppressed) {
        e.addSuppressed(suppressed);
      }
      throw e;
    }
    return sandbox;
  }

  /** {@link #prepare(ManagedSandbox, SandboxSpec, Runnable)} of a sandbox that runs already. */
  public static <T extends ManagedSandbox> T prepare(T sandbox, SandboxSpec spec) {
    return prepare(sandbox, spec, () -> { });
  }

  @Override
  public final String id() {
    return id;
  }

  /** The client calls go to now, or null while this handle knows the sandbox is not running. */
  protected final Sandbox client() {
    return client;
  }

  @Override
  protected final Sandbox delegate() {
    if (closed) {
      throw new IllegalStateException("this handle on the " + what + " is closed");
    }
    Sandbox c = client;
    if (c == null) {
      throw backend.notRunning(id, what);
    }
    return c;
  }

  @Override
  public SandboxInfo info() {
    return backend.info(id);
  }

  @Override
  public void wake() {
    synchronized (lifecycle) {
      if (closed) {
        throw closedForLifecycle();
      }
      Sandbox old = client;
      Sandbox now = backend.wake(id, old);
      if (now != old) {
        client = now;
        if (old != null) {
          old.close();
        }
      }
    }
  }

  private IllegalStateException closedForLifecycle() {
    return new IllegalStateException("this handle on the " + what + " is closed: get(\"" + id + "\") returns a new one");
  }

  @Override
  public void shutdown() {
    synchronized (lifecycle) {
      if (closed) {
        throw closedForLifecycle();
      }
      boolean exists = backend.stop(id);
      Sandbox c = client;
      client = null;
      if (c != null) {
        c.close();
      }
      if (!exists) {
        throw new SandboxException("the " + what + " no longer exists", null);
      }
    }
  }

  /** Removes the sandbox with everything it created, and releases this handle. Idempotent. */
  @Override
  public void destroy() {
    finish(true);
  }

  /** Releases this handle, and removes the sandbox too if this handle was made to (see the class comment). Idempotent. */
  @Override
  public void close() {
    finish(removeOnClose);
  }

  /**
   * The first call closes the client and releases the exit hook and what the handle owns; a call
   * that removes does so until one removal succeeded. Under the lock, so that no wake swaps the
   * client meanwhile and a second destroy() returns only once the sandbox is gone.
   */
  private void finish(boolean remove) {
    synchronized (lifecycle) {
      if (closed && (!remove || removed)) {
        return;
      }
      boolean first = !closed;
      closed = true;
      try {
        Sandbox c = client; // kept: a closed handle still tells where its agent was (see ContainerSandbox#baseUrl)
        if (first && c != null) {
          c.close();
        }
        if (remove) {
          backend.remove(id);
          removed = true;
        }
      } finally {
        if (first) {
          release();
        }
      }
    }
  }

  private void release() {
    if (shutdownHook != null) {
      try {
        Runtime.getRuntime().removeShutdownHook(shutdownHook);
      } catch (IllegalStateException shuttingDown) {
        // called from the hook itself
      }
    }
    if (owned != null) {
      try {
        owned.close();
      } catch (Exception e) {
        log.debug("could not release what the handle on the {} held: {}", what, e.toString());
      }
    }
  }

  private void removeQuietly() {
    try {
      finish(true);
    } catch (RuntimeException e) {
      log.warn("could not remove the {} at JVM exit", what, e);
    }
  }

  @Override
  public String toString() {
    return getClass().getSimpleName() + "{" + what + "}";
  }
}
