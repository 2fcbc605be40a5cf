package dev.sandboxsdk.mcp.internal;

import dev.sandboxsdk.local.Isolation;
import dev.sandboxsdk.local.LocalSandbox;
import dev.sandboxsdk.ManagedSandbox;
import dev.sandboxsdk.ProviderCapabilities;
import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxInfo;
import dev.sandboxsdk.SandboxProvider;
import dev.sandboxsdk.SandboxSpec;
import dev.sandboxsdk.mcp.internal.Sandboxes.Entry;
import dev.sandboxsdk.mcp.internal.Sandboxes.Settings;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Starts and ends single sandboxes: a local agent, a provider's container or pod, a persistent
 * sandbox, or the connection to the one remote agent; and the {@link Entry} of each. Which
 * sandboxes exist is {@link Sandboxes}' business.
 */
final class SandboxLauncher {
  /** Logs as {@link Sandboxes}, as before the split: operators filter the log by its name. */
  private static final Logger log = LoggerFactory.getLogger(Sandboxes.class);

  private final AdapterConfig config;
  private final SandboxProviders providers;

  SandboxLauncher(AdapterConfig config, SandboxProviders providers) {
    this.config = config;
    this.providers = providers;
  }

  /** Creates sandbox {@code id} of {@code provider}: kept alive, or stopped after {@code idle} without calls. */
  private static ManagedSandbox create(String id, String kind, SandboxProvider provider, SandboxSpec.Builder spec,
      boolean keepAlive, Duration idle, long t0) {
    if (keepAlive) {
      spec.keepAlive();
    } else {
      spec.idleTimeout(idle);
    }
    ManagedSandbox s = provider.create(spec.build());
    log.info("sandbox {}: created {} sandbox {} in {} ms", id, kind, s.id(), (System.nanoTime() - t0) / 1_000_000);
    return s;
  }

  /** Starts sandbox {@code id} as {@code how} says; a failure to start is a {@link ToolException}. */
  Entry create(String id, Settings how) {
    long t0 = System.nanoTime();
    if (config.agentUrl() != null) {
      Sandbox s = Sandbox.connect(config.agentUrl(), config.agentToken());
      log.info("sandbox {}: connected to remote agent {}", id, config.agentUrl());
      return new Entry(id, s, config.mode(), true, null, Instant.now(), null, -1, null,
          new AtomicBoolean(), new AtomicLong(t0), false, AdapterConfig.REMOTE_AGENT.isolation());
    }
    boolean keepAlive = how.keepAlive() != null && how.keepAlive();
    Duration idle = how.idleTimeoutSeconds() != null ? Duration.ofSeconds(how.idleTimeoutSeconds()) : Sandboxes.DEFAULT_IDLE;
    try {
      if (how.persistent()) {
        SandboxProvider provider = providers.persistentProvider();
        SandboxSpec.Builder spec = (provider.capabilities().fromImage() ? imageSpec()
            : withSecrets(SandboxSpec.builder().network(config.localNetwork()).egressPolicy(config.egressPolicy())))
            .name(id)
            .label(Sandboxes.ID_LABEL, id)
            .label(Sandboxes.PERSISTENT_LABEL, "true")
            .label(Sandboxes.SERVER_LABEL, Long.toString(ProcessHandle.current().pid()));
        ManagedSandbox s = create(id, "persistent " + provider.name(), provider, spec, keepAlive, idle, t0);
        return entry(id, s, keepAlive, keepAlive ? null : idle);
      }
      if (providers.hasFactory()) {
        SandboxProvider provider = providers.provider();
        SandboxSpec.Builder spec = imageSpec()
            .label(Sandboxes.ID_LABEL, id)
            .label(Sandboxes.SERVER_LABEL, Long.toString(ProcessHandle.current().pid()));
        ManagedSandbox s = create(id, provider.name(), provider, spec, keepAlive, idle, t0);
        ProviderCapabilities can = provider.capabilities();
        return new Entry(id, s, config.mode(), keepAlive, keepAlive ? null : idle, Instant.now(), can.workspace(), -1,
            s.id(), new AtomicBoolean(), new AtomicLong(System.nanoTime()), false, can.isolation());
      }
      LocalSandbox.Builder local = LocalSandbox.builder().keepAlive(keepAlive).idleTimeout(idle)
          .isolation(config.localIsolation()).network(config.localNetwork()).egressPolicy(config.egressPolicy());
      config.egressSecrets().forEach(local::egressSecret);
      LocalSandbox s = local.start();
      log.info("sandbox {}: started local agent in {} ms, workspace {}, isolation {}", id,
          (System.nanoTime() - t0) / 1_000_000, s.workspace(), s.isolation());
      return localEntry(id, s, config.mode(), keepAlive, idle);
    } catch (SandboxException e) {
      throw new ToolException("Could not start sandbox '" + id + "': " + e.getMessage());
    }
  }

  /** {@code spec} with the server's egress secrets ({@code --egress-secret}). */
  private SandboxSpec.Builder withSecrets(SandboxSpec.Builder spec) {
    config.egressSecrets().forEach(spec::egressSecret);
    return spec;
  }

  /**
   * The configured image spec: the passed variables go in the sandbox's own environment, so that
   * every command gets them, unless they go with each call ({@link AdapterConfig#passEnvPerCall()}).
   */
  private SandboxSpec.Builder imageSpec() {
    SandboxSpec.Builder spec = withSecrets(config.containerSpec().toBuilder().egressPolicy(config.egressPolicy()));
    return config.passEnvPerCall() ? spec : spec.env(config.passEnv());
  }

  /**
   * A local sandbox's entry, marked dead when its agent exits (its idle timeout, or killed). The
   * agent is this JVM's child, which the JDK already waits for, so the callback costs no thread,
   * and the checks before every call read a flag instead of /proc. The handle is taken once, at
   * the start, so a reused pid is never taken for the agent.
   */
  private static Entry localEntry(String id, LocalSandbox s, SandboxMode mode, boolean keepAlive, Duration idle) {
    ProcessHandle agent = ProcessHandle.of(s.agentPid()).orElse(null);
    AtomicBoolean dead = new AtomicBoolean(agent == null);
    Entry e = new Entry(id, s, mode, keepAlive, keepAlive ? null : idle, Instant.now(),
        s.workspace().toString(), s.agentPid(), null, dead, new AtomicLong(System.nanoTime()), false,
        s.isolation() != Isolation.NONE ? "bwrap" : "none");
    if (agent != null) {
      agent.onExit().thenRun(() -> dead.set(true));
    }
    return e;
  }

  /** An entry for a persistent sandbox's handle. */
  Entry entry(String id, ManagedSandbox handle, Boolean keepAlive, Duration idle) {
    SandboxInfo info = handle.info();
    return new Entry(id, handle, config.mode(), keepAlive, idle, info.createdAt(), providers.workspaceOf(handle.id()),
        -1, providers.hasFactory() ? handle.id() : null, new AtomicBoolean(),
        new AtomicLong(info.isRunning() ? System.nanoTime() : System.nanoTime() - 2 * Sandboxes.SEEN_FOR.toNanos()), true,
        providers.capabilities().isolation());
  }

  /**
   * Ends a sandbox the server no longer keeps: shuts a persistent one down (its files and
   * checkpoints stay for the next server), removes a provider's sandbox, stops a local one,
   * leaves a remote agent. A persistent pod cannot shut down: it keeps running for the next
   * server until its idle timeout ends it.
   */
  void dispose(Entry e) {
    try {
      if (e.persistent() && !providers.capabilities().resumable()) {
        e.sandbox().close(); // a named pod's handle: releases the port-forward, leaves the pod
        log.info("sandbox {}: left running for the next server (a pod cannot shut down); its idle timeout ends it",
            e.id());
      } else if (e.persistent()) {
        try {
          e.managed().shutdown();
          log.info("sandbox {}: shut down; its files and checkpoints are kept", e.id());
        } finally {
          e.sandbox().close();
        }
      } else if (e.fromProvider()) {
        e.sandbox().destroy();
      } else {
        e.sandbox().close();
      }
    } catch (RuntimeException ex) {
      log.warn("closing sandbox {} failed: {}", e.id(), ex.toString());
    }
  }
}
