package dev.sandboxsdk.local;

import dev.sandboxsdk.ForwardingSandbox;
import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxInfo;
import dev.sandboxsdk.SandboxState;
import dev.sandboxsdk.internal.LocalState;
import dev.sandboxsdk.internal.Workspaces;
import dev.sandboxsdk.spi.SandboxBackend;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The agents one {@link LocalProvider} runs, one per sandbox directory, and the lifecycle of its
 * sandboxes over their records. Every handle of the provider on a sandbox calls the same agent
 * (through a {@link View}), so a {@code get(name)} handle works on a sandbox another handle woke.
 * Changes to a record happen under the record's lock, which other JVMs take too. Thread-safe.
 */
final class LocalBackend implements SandboxBackend {
  private static final Logger log = LoggerFactory.getLogger(LocalProvider.class);
  /** How often the last activity of a running agent is written into its record. */
  private static final long ACTIVITY_PERIOD_MS = 2_000;
  /** One fixed origin, so that the same moment always gives the same instant. */
  private static final Instant CLOCK_ORIGIN = Instant.now();
  private static final long NANO_ORIGIN = System.nanoTime();

  private final LocalProvider provider;
  private final LocalState state;
  /** The agents this provider runs, by sandbox directory. */
  private final Map<Path, Running> agents = new ConcurrentHashMap<>();
  /**
   * Record writes happen here, not on the SDK's timer: they wait for another JVM's lock. Its one
   * thread ends when no agent has run for a while, and starts again with the next.
   */
  private final ScheduledThreadPoolExecutor stateWriter;

  /** An agent this provider runs, and the task that records its activity. */
  private record Running(LocalSandbox sandbox, ScheduledFuture<?> activityWriter) {}

  /** The last activity written (or found) in a record, so that an idle agent costs no lock or read. */
  private static final class Recorded {
    volatile Instant at;

    Recorded(Instant at) {
      this.at = at;
    }
  }

  LocalBackend(LocalProvider provider) {
    this.provider = provider;
    this.state = provider.state();
    this.stateWriter = new ScheduledThreadPoolExecutor(1, r -> {
      Thread thread = new Thread(r, "sandbox-local-state");
      thread.setDaemon(true);
      return thread;
    });
    stateWriter.setKeepAliveTime(10, TimeUnit.SECONDS);
    stateWriter.allowCoreThreadTimeOut(true);
    stateWriter.setRemoveOnCancelPolicy(true);
  }

  /** A client that calls whatever agent this provider runs for the sandbox, or says why there is none. */
  Sandbox view(String name) {
    return new View(name);
  }

  private final class View extends ForwardingSandbox {
    private final String name;
    private final Path dir;

    View(String name) {
      this.name = name;
      this.dir = state.dir(name);
    }

    @Override
    protected Sandbox delegate() {
      Running r = agents.get(dir);
      if (r != null && r.sandbox().agentAlive()) {
        return r.sandbox();
      }
      throw notRunning(name);
    }

    /** Nothing to release: the agent is the provider's, shared by every handle. */
    @Override
    public void destroy() {
      // see close()
    }

    /** Nothing to release: the agent is the provider's, shared by every handle. */
    @Override
    public void close() {
      // the agent stops with shutdown(), destroy(), its idle timeout or the JVM's exit
    }
  }

  /** Its messages name the sandbox as {@link LocalProviderSandbox} does. */
  @Override
  public SandboxException notRunning(String name, String what) {
    return notRunning(name);
  }

  private SandboxException notRunning(String name) {
    Running mine = agents.get(state.dir(name));
    if (mine != null && mine.sandbox().agentAlive()) {
      return new SandboxException("the local sandbox '" + name + "' runs again, woken through another handle since this"
          + " handle shut it down: call wake() on this handle to use it", null);
    }
    Optional<LocalState.Entry> record = state.read(name);
    if (record.isEmpty()) {
      return new SandboxException("the local sandbox '" + name + "' no longer exists (destroyed)", null);
    }
    Optional<ProcessHandle> other = record.get().runningAgent();
    if (other.isPresent()) {
      return elsewhere(name, record.get(), other.get());
    }
    return new SandboxException("the local sandbox '" + name + "' is stopped (shut down, idle for its idle timeout,"
        + " or the JVM that ran it exited); its files are kept: call wake() to start it again", null);
  }

  private static SandboxException elsewhere(String name, LocalState.Entry record, ProcessHandle agent) {
    if (record.agentJvmPid == ProcessHandle.current().pid()) {
      return new SandboxException("the local sandbox '" + name + "' runs under another LocalProvider of this JVM on the"
          + " same state directory (agent pid " + agent.pid() + "): use that provider's handles", null);
    }
    return new SandboxException("the local sandbox '" + name + "' runs in another JVM (pid "
        + record.agentJvmPid + ", agent pid " + agent.pid() + "), and a local sandbox serves only the JVM"
        + " that woke it: use it there, or call shutdown() here to stop it and then wake() to run it in this JVM", null);
  }

  @Override
  public SandboxInfo info(String name) {
    LocalState.Entry record = state.read(name).orElseThrow(() ->
        new SandboxException("the local sandbox '" + name + "' no longer exists (destroyed)", null));
    return info(name, record);
  }

  /** The info of a sandbox from its record and, if this provider runs its agent, that agent. */
  SandboxInfo info(String name, LocalState.Entry record) {
    Running r = agents.get(state.dir(name));
    boolean ours = r != null && r.sandbox().agentAlive();
    boolean running = ours || record.runningAgent().isPresent();
    Instant created = record.createdAt;
    Instant last = ours ? lastActivity(r.sandbox()) : record.lastActivityAt;
    URI endpoint = ours ? r.sandbox().baseUrl() : null;
    return new SandboxInfo(name, LocalProvider.PROVIDER, name, "", running ? SandboxState.RUNNING : SandboxState.STOPPED,
        created != null ? created : Instant.EPOCH, endpoint, record.labels, last);
  }

  private static Instant lastActivity(LocalSandbox s) {
    return CLOCK_ORIGIN.plusNanos(s.lastActiveNanos() - NANO_ORIGIN);
  }

  @Override
  public Sandbox wake(String name, Sandbox current) {
    Path dir = state.dir(name);
    state.locked(name, () -> {
      Running mine = agents.get(dir);
      if (mine != null && mine.sandbox().agentAlive()) {
        return null;
      }
      if (mine != null && agents.remove(dir, mine)) {
        stopped(name, mine); // it exited (idle timeout) and its exit is not recorded yet
      }
      LocalState.Entry record = state.read(name).orElseThrow(() ->
          new SandboxException("the local sandbox '" + name + "' no longer exists (destroyed)", null));
      Optional<ProcessHandle> other = record.runningAgent();
      if (other.isPresent()) {
        throw elsewhere(name, record, other.get());
      }
      start(name, dir, record);
      return null;
    });
    return current != null ? current : view(name);
  }

  /** Under the lock: starts the agent of a stopped sandbox and records it. */
  private void start(String name, Path dir, LocalState.Entry record) {
    long t0 = System.nanoTime();
    LocalSandbox s = provider.agentFor(name, record).start();
    record.agent(s.agentHandle());
    record.lastActivityAt = Instant.now();
    Recorded recorded = new Recorded(record.lastActivityAt);
    ScheduledFuture<?> writer = stateWriter.scheduleWithFixedDelay(() -> recordActivity(name, s, recorded),
        ACTIVITY_PERIOD_MS, ACTIVITY_PERIOD_MS, TimeUnit.MILLISECONDS);
    agents.put(dir, new Running(s, writer));
    record.stoppedAt = null;
    state.write(name, record);
    s.agentHandle().onExit().thenRunAsync(() -> agentExited(name, s), stateWriter);
    log.info("local sandbox '{}' running at {} in {} ms", name, s.baseUrl(), (System.nanoTime() - t0) / 1_000_000);
  }

  /** Writes the last activity of a running agent into the record, if it moved on. */
  private void recordActivity(String name, LocalSandbox s, Recorded recorded) {
    try {
      if (!s.agentAlive()) {
        return;
      }
      Instant last = lastActivity(s);
      if (!movedOn(recorded.at, last)) {
        return; // idle since the last write: no need to lock and read the record
      }
      state.locked(name, () -> {
        state.read(name).ifPresent(record -> {
          if (movedOn(record.lastActivityAt, last)) {
            record.lastActivityAt = last;
            state.write(name, record);
          }
          recorded.at = record.lastActivityAt;
        });
        return null;
      });
    } catch (RuntimeException e) {
      log.debug("could not record the activity of the local sandbox '{}': {}", name, e.toString());
    }
  }

  private static boolean movedOn(Instant written, Instant last) {
    return written == null || Duration.between(written, last).toMillis() >= 1_000;
  }

  /** The agent stopped (shutdown, idle timeout, killed): the record says stopped. */
  private void agentExited(String name, LocalSandbox s) {
    Path dir = state.dir(name);
    Running r = agents.get(dir);
    if (r == null || r.sandbox() != s) {
      return; // shutdown() or destroy() took care of it
    }
    try {
      state.locked(name, () -> {
        if (agents.remove(dir, r)) {
          stopped(name, r);
        }
        return null;
      });
      log.info("local sandbox '{}' stopped (its agent exited: idle timeout, JVM exit, or stopped from another JVM);"
          + " its files are kept", name);
    } catch (RuntimeException e) {
      log.debug("could not record that the local sandbox '{}' stopped: {}", name, e.toString());
    }
  }

  /** Under the lock: releases an agent that is gone or going, and records the stop. */
  private void stopped(String name, Running r) {
    r.activityWriter().cancel(false);
    Instant last = lastActivity(r.sandbox());
    r.sandbox().close(); // stops the agent if it still runs; keeps the workspace (supplied, not owned)
    long pid = r.sandbox().agentHandle().pid();
    state.read(name).ifPresent(record -> {
      if (record.agent != null && record.agent.pid() != pid) {
        return; // another JVM stopped ours and woke its own meanwhile: its record stands
      }
      record.agent = null;
      record.lastActivityAt = last;
      record.stoppedAt = Instant.now();
      state.write(name, record);
    });
  }

  @Override
  public boolean stop(String name) {
    state.locked(name, () -> {
      stopUnderLock(name);
      return null;
    });
    return true;
  }

  private void stopUnderLock(String name) {
    Running r = agents.remove(state.dir(name));
    if (r != null) {
      stopped(name, r);
      return;
    }
    state.read(name).ifPresent(record -> {
      Optional<ProcessHandle> other = record.runningAgent();
      if (other.isPresent()) {
        stopOther(name, other.get());
        record.agent = null;
        record.stoppedAt = Instant.now();
        state.write(name, record);
      }
    });
  }

  /** SIGTERM to another JVM's agent, which stops its processes; SIGKILL if it is still there after the grace period. */
  private void stopOther(String name, ProcessHandle agent) {
    Duration wait = provider.gracePeriod().plusSeconds(5);
    agent.destroy();
    try {
      agent.onExit().get(wait.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      log.warn("the agent of the local sandbox '{}' (pid {}) did not stop within {} ms; killing it", name, agent.pid(),
          wait.toMillis());
      agent.destroyForcibly();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new SandboxException("interrupted while stopping the local sandbox '" + name + "'", e);
    } catch (ExecutionException e) {
      // onExit does not fail
    }
  }

  /** Stops the agent (this provider's or another's) and deletes the sandbox's directory: workspace, checkpoints, record. */
  @Override
  public void remove(String name) {
    Path dir = state.dir(name);
    try {
      state.locked(name, () -> {
        stopUnderLock(name);
        Workspaces.deleteTree(dir);
        provider.forgetSecrets(name);
        return null;
      });
    } catch (SandboxException e) {
      if (Files.exists(dir)) {
        throw e;
      }
      // removed already
    }
  }
}
