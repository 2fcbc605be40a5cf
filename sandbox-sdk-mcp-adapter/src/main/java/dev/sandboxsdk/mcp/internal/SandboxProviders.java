package dev.sandboxsdk.mcp.internal;

import dev.sandboxsdk.LocalProvider;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxInfo;
import dev.sandboxsdk.SandboxProvider;
import dev.sandboxsdk.mcp.internal.Sandboxes.Entry;
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
 * provider of the configuration, and locally the {@link LocalProvider} of persistent sandboxes.
 * Answers what they hold (persistent sandboxes by MCP id, which sandboxes still run). Thread-safe.
 */
final class SandboxProviders {
  /** The Kubernetes provider's state of a pod that is being deleted. */
  private static final String STOPPING = "stopping";
  /** Logs as {@link Sandboxes}, as before the split: operators filter the log by its name. */
  private static final Logger log = LoggerFactory.getLogger(Sandboxes.class);

  private final AdapterConfig config;
  /** Makes the provider on first use: its engine client (docker-java) takes a third of a second to load. */
  private final Supplier<SandboxProvider> providerFactory;
  private volatile SandboxProvider provider;
  /** With {@link SandboxMode#LOCAL}: the provider of persistent sandboxes, made on first use. */
  private volatile SandboxProvider localProvider;
  private final Object providerCheck = new Object();

  SandboxProviders(AdapterConfig config, Supplier<SandboxProvider> providerFactory) {
    if (Sandboxes.fromProvider(config.mode()) != (providerFactory != null)) {
      throw new IllegalArgumentException("a provider is needed exactly with --provider container or kubernetes");
    }
    this.config = config;
    this.providerFactory = providerFactory;
  }

  /** What makes the provider of {@code config}; each provider's classes are loaded only in its branch. */
  static Supplier<SandboxProvider> factory(AdapterConfig config) {
    return switch (config.mode()) {
      case CONTAINER -> ContainerProviders::fromEnvironment;
      case KUBERNETES -> () -> KubernetesProviders.create(config.kubernetes());
      default -> null;
    };
  }

  /** Whether the configuration makes sandboxes with a provider (containers, pods). */
  boolean hasFactory() {
    return providerFactory != null;
  }

  /** The provider, made on first use; only with {@link SandboxMode#CONTAINER} or {@link SandboxMode#KUBERNETES}. */
  SandboxProvider provider() {
    SandboxProvider p = provider;
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
   * The provider of persistent (named) sandboxes: the container or Kubernetes provider, or locally a
   * {@link LocalProvider} on the state directory; null for a remote agent.
   */
  SandboxProvider persistentProvider() {
    if (Sandboxes.fromProvider(config.mode())) {
      return provider();
    }
    if (config.mode() != SandboxMode.LOCAL) {
      return null;
    }
    SandboxProvider p = localProvider;
    if (p == null) {
      synchronized (this) {
        p = localProvider;
        if (p == null) {
          LocalProvider.Builder b = LocalProvider.builder().isolation(config.localIsolation());
          if (config.stateDir() != null) {
            b.stateDirectory(config.stateDir());
          }
          p = b.build();
          localProvider = p;
        }
      }
    }
    return p;
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
    try {
      for (SandboxInfo i : p.list()) {
        if (config.mode() == SandboxMode.KUBERNETES && STOPPING.equals(i.state())) {
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
        if (config.mode() == SandboxMode.KUBERNETES) {
          KubernetesProviders.logCluster(provider(), config.containerSpec().image());
        } else {
          ContainerProviders.logEngine(provider(), config.containerSpec().image());
        }
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

  /** Where persistent sandbox {@code id}'s commands start: a directory of the state directory, or /workspace. */
  String workspaceOf(String id) {
    return Sandboxes.fromProvider(config.mode()) ? Sandboxes.CONTAINER_WORKSPACE
        : persistentProvider() instanceof LocalProvider l ? l.workspace(id).toString() : null;
  }

  /** Releases the providers that were made. */
  void close() {
    SandboxProvider p = provider;
    if (p != null) {
      p.close();
    }
    SandboxProvider l = localProvider;
    if (l != null) {
      l.close();
    }
  }
}
