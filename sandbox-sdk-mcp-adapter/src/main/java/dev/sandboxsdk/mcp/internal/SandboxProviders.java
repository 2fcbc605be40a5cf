package dev.sandboxsdk.mcp.internal;

import dev.sandboxsdk.ProviderCapabilities;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxInfo;
import dev.sandboxsdk.SandboxProvider;
import dev.sandboxsdk.SandboxState;
import dev.sandboxsdk.mcp.internal.Sandboxes.Entry;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The providers behind a server's sandboxes, each made on first use: the container or Kubernetes
 * provider of the configuration, and locally the provider of persistent sandboxes; and what they
 * can do ({@link #capabilities()}), from which the server decides instead of from which provider it
 * has. Answers what they hold (persistent sandboxes by MCP id, which sandboxes still run). Thread-safe.
 */
final class SandboxProviders {
  /** Logs as {@link Sandboxes}, as before the split: operators filter the log by its name. */
  private static final Logger log = LoggerFactory.getLogger(Sandboxes.class);

  /**
   * A provider as the configuration makes it, and its start-up check.
   *
   * @param logCheck logs whether the provider's engine or cluster answers; never throws
   */
  record Made(SandboxProvider provider, Runnable logCheck) {
    /** A provider without a start-up check (tests pass a fake). */
    static Made of(SandboxProvider provider) {
      return new Made(provider, () -> { });
    }
  }

  private final AdapterConfig config;
  /** Makes the provider on first use: its engine client (docker-java) takes a third of a second to load. */
  private final Supplier<Made> providerFactory;
  private volatile Made provider;
  /** Without a provider of every sandbox: what makes the provider of persistent ones; null for a remote agent. */
  private final Supplier<SandboxProvider> localFactory;
  private volatile SandboxProvider localProvider;
  private final Object providerCheck = new Object();

  SandboxProviders(AdapterConfig config, Supplier<Made> providerFactory) {
    if ((config.containerSpec() != null) != (providerFactory != null)) {
      throw new IllegalArgumentException("a provider is needed exactly with --provider container or kubernetes");
    }
    this.config = config;
    this.providerFactory = providerFactory;
    this.localFactory = providerFactory == null ? config.localProviderFactory() : null;
  }

  /** Whether the configuration makes every sandbox with a provider (containers, pods). */
  boolean hasFactory() {
    return providerFactory != null;
  }

  /** The provider of every sandbox, made on first use; only when {@link #hasFactory()}. */
  SandboxProvider provider() {
    return made().provider();
  }

  private Made made() {
    Made p = provider;
    if (p == null) {
      synchronized (this) {
        p = provider;
        if (p == null) {
          try {
            p = providerFactory.get();
          } catch (SandboxException e) {
            throw e;
          } catch (RuntimeException e) { // e.g. a DOCKER_HOST that is not a URI
            throw new SandboxException("cannot set up the " + config.mode().wireName() + " provider: " + e.getMessage(),
                e);
          }
          provider = p;
        }
      }
    }
    return p;
  }

  /**
   * The provider of persistent (named) sandboxes: the provider of every sandbox, or locally the
   * configuration's local provider; null for a remote agent.
   */
  SandboxProvider persistentProvider() {
    if (providerFactory != null) {
      return provider();
    }
    if (localFactory == null) {
      return null;
    }
    SandboxProvider p = localProvider;
    if (p == null) {
      synchronized (this) {
        p = localProvider;
        if (p == null) {
          p = localFactory.get();
          localProvider = p;
        }
      }
    }
    return p;
  }

  /**
   * What the server's sandboxes can do: the capabilities of {@link #persistentProvider()}, or of a
   * remote agent ({@link AdapterConfig#REMOTE_AGENT}), which the server neither starts nor stops.
   * Makes the provider if it is not made yet.
   */
  ProviderCapabilities capabilities() {
    SandboxProvider p = persistentProvider();
    return p != null ? p.capabilities() : AdapterConfig.REMOTE_AGENT;
  }

  /**
   * The MCP sandbox id of a sandbox its provider lists, or null if it is not a persistent
   * sandbox that a server made (its labels say; other programs' sandboxes of the same provider
   * are left alone).
   */
  private static String persistentId(SandboxInfo info) {
    return "true".equals(info.labels().get(Sandboxes.PERSISTENT_LABEL)) ? info.labels().get(Sandboxes.ID_LABEL) : null;
  }

  /** The provider's persistent sandboxes by MCP id; empty (and logged) if the provider cannot be asked. */
  Map<String, SandboxInfo> persistentInProvider() {
    SandboxProvider p = persistentProvider();
    Map<String, SandboxInfo> out = new LinkedHashMap<>();
    if (p == null) {
      return out;
    }
    boolean stoppingEnds = !p.capabilities().resumable();
    try {
      for (SandboxInfo i : p.list()) {
        if (stoppingEnds && i.state() == SandboxState.STOPPING) {
          continue; // a pod being deleted (destroy returns before a slow kubelet has removed it): gone for good
        }
        String id = persistentId(i);
        if (id != null && Sandboxes.ID.matcher(id).matches()) {
          out.putIfAbsent(id, i);
        }
      }
    } catch (RuntimeException e) {
      log.warn("cannot list the persistent sandboxes: {}", e.toString());
    }
    return out;
  }

  /**
   * With a provider: makes it and logs whether its engine answers, on a background thread, so
   * the first sandbox does not wait for the engine client to load and an operator sees a missing
   * engine in the log at start. For the server's start.
   */
  void logInBackground() {
    if (providerFactory == null) {
      return;
    }
    Thread t = new Thread(() -> {
      try {
        made().logCheck().run();
      } catch (RuntimeException e) {
        log.warn("{} provider: {}", config.mode().wireName(), e.getMessage());
      }
    }, "mcp-provider-check");
    t.setDaemon(true);
    t.start();
  }

  /** The entries among {@code entries} whose sandbox the provider does not list as running. */
  List<Entry> notRunning(List<Entry> entries, boolean checkAll) {
    synchronized (providerCheck) { // one listing at a time; a call that waited finds the entries just seen
      long now = System.nanoTime();
      List<Entry> stale = entries.stream().filter(e -> checkAll || now - e.seenAt().get() > Sandboxes.SEEN_FOR.toNanos())
          .collect(Collectors.toList());
      if (stale.isEmpty()) {
        return List.of();
      }
      Set<String> running;
      try {
        running = provider().list().stream().filter(SandboxInfo::isRunning).map(SandboxInfo::id)
            .collect(Collectors.toSet());
      } catch (RuntimeException e) {
        log.debug("cannot ask the provider which sandboxes run: {}", e.toString());
        return List.of();
      }
      long listed = System.nanoTime();
      List<Entry> out = new ArrayList<>();
      for (Entry e : stale) {
        if (running.contains(e.providerId())) {
          e.seenAt().set(listed);
        } else {
          out.add(e);
        }
      }
      return out;
    }
  }

  /**
   * Where persistent sandbox {@code id}'s commands start: the provider's one workspace
   * (/workspace), or the sandbox's directory on this machine (a local one's in the state directory).
   */
  String workspaceOf(String id) {
    SandboxProvider p = persistentProvider();
    if (p == null) {
      return null;
    }
    String shared = p.capabilities().workspace();
    return shared != null ? shared : p.hostWorkspace(id).map(Path::toString).orElse(null);
  }

  /** Releases the providers that were made. */
  void close() {
    Made p = provider;
    if (p != null) {
      p.provider().close();
    }
    SandboxProvider l = localProvider;
    if (l != null) {
      l.close();
    }
  }
}
