package dev.sandboxsdk;

import dev.sandboxsdk.internal.LocalState;
import dev.sandboxsdk.internal.Workspaces;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A handle on one sandbox of a {@link LocalProvider}. Handles are views: every handle of this JVM
 * on the same sandbox shares the agent this JVM runs for it (one per sandbox directory), so a
 * {@code get(name)} handle works on a sandbox that another handle woke. Thread-safe.
 */
final class LocalProviderSandbox extends ForwardingSandbox implements ManagedSandbox {
  private static final Logger log = LoggerFactory.getLogger(LocalProvider.class);
  /** How often this JVM writes the last activity of the agents it runs into their records. */
  private static final long ACTIVITY_PERIOD_MS = 2_000;
  /** The agents this JVM runs, by sandbox directory. */
  private static final Map<Path, Running> AGENTS = new ConcurrentHashMap<>();
  /** Record writes happen here, not on the SDK's timer: they wait for another JVM's lock. */
  private static final ScheduledExecutorService STATE_WRITER = stateWriter();

  private static final Instant CLOCK_ORIGIN = Instant.now();
  private static final long NANO_ORIGIN = System.nanoTime();

  private final LocalProvider provider;
  private final String name;
  private final Path dir;
  private final boolean removeOnClose;
  private final Thread shutdownHook;
  private volatile boolean closed;

  /** An agent this JVM runs, and the task that records its activity. */
  private record Running(LocalSandbox sandbox, ScheduledFuture<?> activityWriter) {}

  /** The last activity this JVM wrote (or found) in a record, so that an idle agent costs no lock or read. */
  private static final class Recorded {
    volatile Instant at;

    Recorded(Instant at) {
      this.at = at;
    }
  }

  LocalProviderSandbox(LocalProvider provider, String name, boolean removeOnClose) {
    this.provider = provider;
    this.name = name;
    this.dir = provider.state().dir(name);
    this.removeOnClose = removeOnClose;
    if (removeOnClose) {
      shutdownHook = new Thread(this::removeQuietly, "sandbox-local-shutdown");
      Runtime.getRuntime().addShutdownHook(shutdownHook);
    } else {
      shutdownHook = null;
    }
  }

  private static ScheduledExecutorService stateWriter() {
    ScheduledThreadPoolExecutor t = new ScheduledThreadPoolExecutor(1, r -> {
      Thread thread = new Thread(r, "sandbox-local-state");
      thread.setDaemon(true);
      return thread;
    });
    t.setRemoveOnCancelPolicy(true);
    return t;
  }

  @Override
  public String id() {
    return name;
  }

  /** The workspace directory on this machine. */
  Path workspace() {
    return provider.state().workspace(name);
  }

  @Override
  protected Sandbox delegate() {
    if (closed) {
      throw new SandboxException("this handle on the local sandbox '" + name + "' is closed", null);
    }
    Running r = AGENTS.get(dir);
    if (r != null && r.sandbox().agentAlive()) {
      return r.sandbox();
    }
    LocalState.Entry record = provider.state().read(name).orElseThrow(() ->
        new SandboxException("the local sandbox '" + name + "' no longer exists (destroyed)", null));
    Optional<ProcessHandle> other = record.runningAgent();
    if (other.isPresent()) {
      throw inOtherJvm(record, other.get());
    }
    throw new SandboxException("the local sandbox '" + name + "' is stopped (shut down, idle for its idle timeout,"
        + " or the JVM that ran it exited); its files are kept: call wake() to start it again", null);
  }

  private SandboxException inOtherJvm(LocalState.Entry record, ProcessHandle agent) {
    return new SandboxException("the local sandbox '" + name + "' runs in another JVM (pid "
        + record.agentJvmPid + ", agent pid " + agent.pid() + "), and a local sandbox serves only the JVM"
        + " that woke it: use it there, or call shutdown() here to stop it and then wake() to run it in this JVM", null);
  }

  @Override
  public SandboxInfo info() {
    LocalState.Entry record = provider.state().read(name).orElseThrow(() ->
        new SandboxException("the local sandbox '" + name + "' no longer exists (destroyed)", null));
    return info(provider, name, record);
  }

  /** The info of a sandbox from its record and, if this JVM runs its agent, that agent. */
  static SandboxInfo info(LocalProvider provider, String name, LocalState.Entry record) {
    Running r = AGENTS.get(provider.state().dir(name));
    boolean ours = r != null && r.sandbox().agentAlive();
    boolean running = ours || record.runningAgent().isPresent();
    Instant created = record.createdAt;
    Instant last = ours ? lastActivity(r.sandbox()) : record.lastActivityAt;
    URI endpoint = ours ? r.sandbox().baseUrl() : null;
    Map<String, String> labels = record.labels;
    return new SandboxInfo(name, LocalProvider.PROVIDER, name, "", running ? SandboxState.RUNNING : SandboxState.STOPPED,
        created != null ? created : Instant.EPOCH, endpoint, labels, last);
  }

  private static Instant lastActivity(LocalSandbox s) {
    // One fixed origin, so that the same moment always gives the same instant.
    return CLOCK_ORIGIN.plusNanos(s.lastActiveNanos() - NANO_ORIGIN);
  }

  @Override
  public void wake() {
    if (closed) {
      throw new SandboxException("this handle on the local sandbox '" + name + "' is closed: get(\"" + name
          + "\") returns a new one", null);
    }
    provider.state().locked(name, () -> {
      Running mine = AGENTS.get(dir);
      if (mine != null && mine.sandbox().agentAlive()) {
        return null;
      }
      if (mine != null && AGENTS.remove(dir, mine)) {
        stopped(mine); // it exited (idle timeout) and its exit is not recorded yet
      }
      LocalState.Entry record = provider.state().read(name).orElseThrow(() ->
          new SandboxException("the local sandbox '" + name + "' no longer exists (destroyed)", null));
      Optional<ProcessHandle> other = record.runningAgent();
      if (other.isPresent()) {
        throw inOtherJvm(record, other.get());
      }
      long t0 = System.nanoTime();
      LocalSandbox s = builder(record).start();
      record.agent(s.agentHandle());
      record.lastActivityAt = Instant.now();
      Recorded recorded = new Recorded(record.lastActivityAt);
      ScheduledFuture<?> writer = STATE_WRITER.scheduleWithFixedDelay(() -> recordActivity(s, recorded),
          ACTIVITY_PERIOD_MS, ACTIVITY_PERIOD_MS, TimeUnit.MILLISECONDS);
      AGENTS.put(dir, new Running(s, writer));
      record.stoppedAt = null;
      provider.state().write(name, record);
      s.agentHandle().onExit().thenRunAsync(() -> agentExited(s), STATE_WRITER);
      log.info("local sandbox '{}' running at {} in {} ms", name, s.baseUrl(), (System.nanoTime() - t0) / 1_000_000);
      return null;
    });
  }

  private LocalSandbox.Builder builder(LocalState.Entry record) {
    LocalSandbox.Builder b = LocalSandbox.builder()
        .workspace(workspace())
        .checkpointDirectory(provider.state().checkpoints(name)) // kept across shutdown and wake
        .keepAlive(true) // the agent's own --idle-timeout-ms stops it, keeping the files
        .isolation(provider.isolation)
        .network(record.network)
        .startupTimeout(Duration.ofMillis(Math.max(1, record.startupTimeoutMs)));
    if (provider.agentJar != null) {
      b.agentJar(provider.agentJar);
    }
    if (provider.javaExecutable != null) {
      b.javaExecutable(provider.javaExecutable);
    }
    if (provider.grace != null) {
      b.gracePeriod(provider.grace);
    }
    provider.jvmArguments.forEach(b::jvmArgument);
    b.inheritEnv(provider.inheritEnv);
    b.env(record.env);
    record.agentArguments.forEach(b::agentArgument);
    if (record.idleTimeoutMs != null) {
      b.agentArgument("--idle-timeout-ms=" + record.idleTimeoutMs);
    }
    return b;
  }

  /** Writes the last activity of an agent this JVM runs into the record, if it moved on. */
  private void recordActivity(LocalSandbox s, Recorded recorded) {
    try {
      if (!s.agentAlive()) {
        return;
      }
      Instant last = lastActivity(s);
      if (!movedOn(recorded.at, last)) {
        return; // idle since the last write: no need to lock and read the record
      }
      provider.state().locked(name, () -> {
        provider.state().read(name).ifPresent(record -> {
          if (movedOn(record.lastActivityAt, last)) {
            record.lastActivityAt = last;
            provider.state().write(name, record);
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

  /** The agent this JVM ran stopped (shutdown, idle timeout, killed): the record says stopped. */
  private void agentExited(LocalSandbox s) {
    Running r = AGENTS.get(dir);
    if (r == null || r.sandbox() != s) {
      return; // shutdown() or destroy() took care of it
    }
    try {
      provider.state().locked(name, () -> {
        if (AGENTS.remove(dir, r)) {
          stopped(r);
        }
        return null;
      });
      log.info("local sandbox '{}' stopped (its agent exited: idle timeout, JVM exit, or stopped from another JVM);"
          + " its files are kept", name);
    } catch (RuntimeException e) {
      log.debug("could not record that the local sandbox '{}' stopped: {}", name, e.toString());
    }
  }

  /** Under the lock: releases an agent of this JVM that is gone or going, and records the stop. */
  private void stopped(Running r) {
    r.activityWriter().cancel(false);
    Instant last = lastActivity(r.sandbox());
    r.sandbox().close(); // stops the agent if it still runs; keeps the workspace (supplied, not owned)
    long pid = r.sandbox().agentHandle().pid();
    provider.state().read(name).ifPresent(record -> {
      if (record.agent != null && record.agent.pid() != pid) {
        return; // another JVM stopped ours and woke its own meanwhile: its record stands
      }
      record.agent = null;
      record.lastActivityAt = last;
      record.stoppedAt = Instant.now();
      provider.state().write(name, record);
    });
  }

  @Override
  public void shutdown() {
    provider.state().locked(name, () -> {
      stopUnderLock();
      return null;
    });
  }

  private void stopUnderLock() {
    Running r = AGENTS.remove(dir);
    if (r != null) {
      stopped(r);
      return;
    }
    provider.state().read(name).ifPresent(record -> {
      Optional<ProcessHandle> other = record.runningAgent();
      if (other.isPresent()) {
        stopOther(other.get());
        record.agent = null;
        record.stoppedAt = Instant.now();
        provider.state().write(name, record);
      }
    });
  }

  /** SIGTERM to another JVM's agent, which stops its processes; SIGKILL if it is still there after the grace period. */
  private void stopOther(ProcessHandle agent) {
    Duration wait = (provider.grace != null ? provider.grace : Duration.ofSeconds(5)).plusSeconds(5);
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
    } catch (java.util.concurrent.ExecutionException e) {
      // onExit does not fail
    }
  }

  /** Stops the agent (this JVM's or another's) and deletes the sandbox's directory: workspace, checkpoints, record. */
  @Override
  public void destroy() {
    closed = true;
    try {
      provider.state().locked(name, () -> {
        stopUnderLock();
        Workspaces.deleteTree(dir);
        return null;
      });
    } catch (SandboxException e) {
      if (java.nio.file.Files.exists(dir)) {
        throw e;
      }
      // destroyed already
    } finally {
      removeHook();
    }
  }

  /**
   * Releases this handle. An unnamed sandbox is removed with it; a named one stays as it is
   * (running until {@code shutdown()}, its idle timeout or this JVM's exit).
   */
  @Override
  public void close() {
    if (removeOnClose) {
      destroy();
    }
    closed = true;
  }

  private void removeHook() {
    if (shutdownHook != null) {
      try {
        Runtime.getRuntime().removeShutdownHook(shutdownHook);
      } catch (IllegalStateException shuttingDown) {
        // called from the hook itself
      }
    }
  }

  private void removeQuietly() {
    try {
      destroy();
    } catch (RuntimeException e) {
      log.warn("could not remove the local sandbox '{}' at JVM exit", name, e);
    }
  }

  @Override
  public String toString() {
    return "LocalProviderSandbox{" + name + ", " + dir + "}";
  }
}
