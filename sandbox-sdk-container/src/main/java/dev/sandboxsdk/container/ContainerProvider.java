package dev.sandboxsdk.container;

import dev.sandboxsdk.ManagedSandbox;
import dev.sandboxsdk.ProviderCapabilities;
import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxInfo;
import dev.sandboxsdk.SandboxProvider;
import dev.sandboxsdk.SandboxSpec;
import dev.sandboxsdk.container.internal.Engine;
import dev.sandboxsdk.container.internal.Launch;
import dev.sandboxsdk.spi.AgentClient;
import dev.sandboxsdk.spi.SandboxBackend;
import dev.sandboxsdk.spi.SandboxHandle;
import java.net.URI;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sandboxes as containers of the agent image, one container each, through the Docker Engine
 * API: Docker, or Podman's Docker-compatible service. The engine is the one {@code DOCKER_HOST}
 * names (a {@code unix://} socket or {@code tcp://host:port}), else the first local socket
 * found: {@code /var/run/docker.sock}, {@code /run/podman/podman.sock},
 * {@code $XDG_RUNTIME_DIR/podman/podman.sock}.
 *
 * <p>Every container runs with the default security policy (docs/containers.md): commands as
 * the unprivileged user {@code sandbox} without capabilities, {@code no-new-privileges}, a
 * read-only root file system with a writable {@code /workspace} volume and a {@code tmpfs}
 * {@code /tmp}, no network unless {@link SandboxSpec.Builder#network(boolean)}, limits on
 * memory, CPU and processes, a fresh token per sandbox that commands cannot read, and the
 * agent's port published on 127.0.0.1 only.
 *
 * <pre>{@code
 * try (ContainerProvider containers = ContainerProvider.fromEnvironment();
 *      ManagedSandbox sandbox = containers.create(SandboxSpec.builder().image("sandbox-agent").build())) {
 *   sandbox.exec("echo hi");
 * }
 * }</pre>
 *
 * <p>Thread-safe. {@link #close()} releases the engine connection; sandboxes created by
 * {@link #create} are removed when closed (or when this JVM exits), see {@link ContainerSandbox}.
 */
public final class ContainerProvider implements SandboxProvider {
  private static final ProviderCapabilities CAPABILITIES = ProviderCapabilities.builder().resumable(true)
      .fromImage(true).workspace(Launch.WORKSPACE).isolation("container").build();
  private static final Logger log = LoggerFactory.getLogger(ContainerProvider.class);

  /** How long a stop waits for the agent to stop its processes before SIGKILL (the containers' own stop timeout). */
  private static final int STOP_TIMEOUT_SECONDS = 10;

  private final Engine engine;
  private final String publishAddress;
  private final String connectHost;
  private final boolean ownsEngine;
  private final SandboxBackend backend = new Backend();
  private volatile boolean closed;

  private ContainerProvider(Engine engine, String publishAddress, String connectHost, boolean ownsEngine) {
    this.engine = engine;
    this.publishAddress = publishAddress;
    this.connectHost = connectHost;
    this.ownsEngine = ownsEngine;
  }

  /** The engine that {@code DOCKER_HOST} or the local sockets name, with default settings. */
  public static ContainerProvider fromEnvironment() {
    return builder().build();
  }

  /** A builder with every setting at its default. */
  public static Builder builder() {
    return new Builder();
  }

  @Override
  public String name() {
    return "container";
  }

  /**
   * Sandboxes are containers of an image; a stopped one keeps its workspace volume and starts
   * again; commands start in {@code /workspace}.
   */
  @Override
  public ProviderCapabilities capabilities() {
    return CAPABILITIES;
  }

  /** The engine's address. */
  public URI engineHost() {
    return engine.host();
  }

  /**
   * Checks that the engine answers and returns its name and version, e.g. {@code "Podman Engine 4.3.1"}.
   *
   * @throws dev.sandboxsdk.SandboxConnectionException if no engine answers
   */
  public String ping() {
    return engine.ping();
  }

  /**
   * Whether the engine has this image (the provider does not pull images).
   *
   * @throws dev.sandboxsdk.SandboxConnectionException if no engine answers
   */
  public boolean hasImage(String image) {
    return engine.hasImage(Objects.requireNonNull(image, "image == null"));
  }

  /**
   * Creates a container sandbox and returns once its agent answers (and the repository of
   * {@link SandboxSpec#gitRepository()}, if any, is cloned). Closing an unnamed sandbox (or this
   * JVM's exit) removes it, see {@link ContainerSandbox.Builder#removeOnClose(boolean)}; a named one
   * ({@link SandboxSpec.Builder#name}) stays until {@code destroy()}, also when its idle timeout
   * stops it.
   */
  @Override
  public ContainerSandbox create(SandboxSpec spec) {
    return create(spec, spec.name() == null, false);
  }

  ContainerSandbox create(SandboxSpec spec, boolean removeOnClose, boolean handOverProvider) {
    Objects.requireNonNull(spec, "spec == null");
    removeExited();
    long t0 = System.nanoTime();
    Launch.Started s = Launch.start(engine, spec, publishAddress, connectHost);
    log.info("container sandbox {} ({}) ready at {} in {} ms", s.name(), s.id().substring(0, 12), s.endpoint(),
        (System.nanoTime() - t0) / 1_000_000);
    return SandboxHandle.prepare(new ContainerSandbox(this, s.id(), spec.name(), s.endpoint(), s.token(), removeOnClose,
        handOverProvider), spec);
  }

  /**
   * A running sandbox container by id (full or short) or container name, or a named sandbox by
   * its name, running or stopped, from any JVM that can use the same engine. (A stopped unnamed
   * container is left over for {@link #removeExited()}.) Closing the handle leaves the container
   * as it is; {@code wake()} starts a stopped one, {@code destroy()} removes it.
   */
  @Override
  public Optional<ManagedSandbox> get(String id) {
    Objects.requireNonNull(id, "id == null");
    return engine.find(id).filter(f -> f.running() && f.hostPort() > 0 || f.name() != null).map(f -> new ContainerSandbox(this,
        f.id(), f.name(), f.running() && f.hostPort() > 0 ? Launch.endpoint(connectHost, f.hostPort()) : null, f.token(),
        false, false));
  }

  /**
   * Every sandbox container on the engine, running or stopped, oldest first: from the containers'
   * labels, so any JVM sees the same list.
   */
  @Override
  public List<SandboxInfo> list() {
    return engine.listSandboxes(name(), connectHost);
  }

  /**
   * Removes the sandbox containers that have stopped (an agent that went idle stops its
   * container), with their volumes. {@link #create} does this too.
   *
   * @return how many were removed
   */
  public int removeExited() {
    return engine.removeExited();
  }

  SandboxBackend backend() {
    return backend;
  }

  /** What the handles of this provider's sandboxes do through the engine. */
  private final class Backend implements SandboxBackend {
    @Override
    public SandboxInfo info(String id) {
      return engine.sandbox(id, name(), connectHost).orElseThrow(() ->
          new SandboxException("the sandbox container " + id + " no longer exists", null));
    }

    /** Starts the stopped container again (engine start); the token is in its environment, the port may differ. */
    @Override
    public Sandbox wake(String id, Sandbox current) {
      Engine.Found f = engine.find(id).orElseThrow(() -> new SandboxException("the sandbox container "
          + ContainerSandbox.label(id, null) + " no longer exists", null));
      URI now = f.running() && f.hostPort() > 0 ? Launch.endpoint(connectHost, f.hostPort())
          : Launch.restart(engine, id, SandboxSpec.defaults().startupTimeout(), connectHost);
      if (current instanceof AgentClient c && c.baseUrl().equals(now)) {
        return current;
      }
      return AgentClient.connect(now, f.token());
    }

    /** Engine stop: SIGTERM to the agent, SIGKILL after the stop timeout; the container and its volumes stay. */
    @Override
    public boolean stop(String id) {
      return engine.stop(id, STOP_TIMEOUT_SECONDS);
    }

    /** Removes the container and its volumes; works after {@link #close()} too, on a new connection. */
    @Override
    public void remove(String id) {
      if (!closed) {
        engine.remove(id);
        return;
      }
      try (Engine again = Engine.connect(engine.host())) {
        again.remove(id);
      }
    }

    @Override
    public SandboxException notRunning(String id, String what) {
      return new SandboxException("the " + what + " is stopped (its files are kept): call wake() to start it again", null);
    }
  }

  @Override
  public void close() {
    closed = true;
    if (ownsEngine) {
      engine.close();
    }
  }

  @Override
  public String toString() {
    return "ContainerProvider{" + engine.host() + ", publish=" + publishAddress + "}";
  }

  /** Configures a {@link ContainerProvider}. Not thread-safe. */
  public static final class Builder {
    private URI dockerHost;
    private String publishAddress = "127.0.0.1";
    private String connectHost;

    private Builder() {}

    /**
     * The engine's address, e.g. {@code unix:///run/podman/podman.sock} or {@code tcp://10.0.0.5:2375}
     * (default: {@code DOCKER_HOST}, else a local socket).
     */
    public Builder dockerHost(URI dockerHost) {
      String scheme = Objects.requireNonNull(dockerHost, "dockerHost == null").getScheme();
      if (!"unix".equals(scheme) && !"tcp".equals(scheme)) {
        throw new IllegalArgumentException("dockerHost must be unix:// or tcp://: " + dockerHost);
      }
      this.dockerHost = dockerHost;
      return this;
    }

    /**
     * The engine host's address on which the agent's port is published (default {@code 127.0.0.1}:
     * only processes on the engine's host reach it). For an engine on another machine, publish on
     * an address this JVM can reach, on a network you trust: anyone who reaches the port still
     * needs the sandbox's token.
     */
    public Builder publishAddress(String address) {
      this.publishAddress = Objects.requireNonNull(address, "address == null");
      return this;
    }

    /**
     * The host name this JVM connects to for published ports (default: {@code 127.0.0.1} for a
     * local socket, the host of a {@code tcp://} engine address).
     */
    public Builder connectHost(String host) {
      this.connectHost = Objects.requireNonNull(host, "host == null");
      return this;
    }

    /** Connects lazily: the first call that needs the engine reports an unreachable one. */
    public ContainerProvider build() {
      Engine engine = Engine.connect(dockerHost);
      String connect = connectHost;
      if (connect == null) {
        URI h = engine.host();
        connect = "tcp".equals(h.getScheme()) && h.getHost() != null ? h.getHost() : "127.0.0.1";
      }
      return new ContainerProvider(engine, publishAddress, connect, true);
    }
  }
}
