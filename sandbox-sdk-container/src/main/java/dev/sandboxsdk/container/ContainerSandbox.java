package dev.sandboxsdk.container;

import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.SandboxInfo;
import dev.sandboxsdk.SandboxSpec;
import dev.sandboxsdk.spi.AgentClient;
import dev.sandboxsdk.spi.SandboxHandle;
import java.net.URI;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;

/**
 * A sandbox in its own container, with the default security policy of {@link ContainerProvider}.
 *
 * <pre>{@code
 * try (ContainerSandbox sandbox = ContainerSandbox.builder()
 *     .image("sandbox-agent")
 *     .memoryBytes(512L << 20).cpus(1).pidsLimit(256)
 *     .network(false)
 *     .start()) {
 *   ExecResult r = sandbox.exec("id -un; touch /usr/x");
 *   System.out.print(r.stdout());          // sandbox
 *   System.out.print(r.stderr());          // touch: cannot touch '/usr/x': Read-only file system
 * }
 * }</pre>
 *
 * <p><b>Lifecycle.</b> A sandbox this JVM created is removed (container and workspace volume)
 * by {@link #close()}, {@link #destroy()}, or when this JVM exits, unless
 * {@link Builder#removeOnClose(boolean) removeOnClose(false)}: then it outlives this JVM, any JVM
 * gets it back with {@link ContainerProvider#get(String)}, and it removes itself after its idle
 * timeout (default 10 minutes without a request; {@link Builder#keepAlive()} turns that off).
 * A handle from {@code get} never removes the sandbox on close; {@code destroy()} does.
 * A {@link Builder#name(String) named} sandbox is never removed but by {@code destroy()}:
 * {@link #shutdown()} stops its container (engine stop: SIGTERM to the agent, which stops every
 * process, SIGKILL after 10 s) and keeps it, its {@code /workspace} and home volumes and its
 * checkpoints ({@code /tmp}, a tmpfs, is emptied); {@link #wake()} starts it again with the same
 * token (the port may differ), and its idle timeout stops it the same way. {@link #destroy()}
 * removes the container and its volumes.
 *
 * <p>Thread-safe, like every {@link Sandbox}.
 */
public final class ContainerSandbox extends SandboxHandle {
  private final String name;

  ContainerSandbox(ContainerProvider provider, String id, String name, URI endpoint, String token,
      boolean removeOnClose, boolean ownsProvider) {
    super(provider.backend(), id, "sandbox container " + label(id, name),
        endpoint == null ? null : AgentClient.connect(endpoint, token), removeOnClose, ownsProvider ? provider : null);
    this.name = name;
  }

  /** How messages name a sandbox container: its name, else its short id. */
  static String label(String id, String name) {
    return name != null ? "'" + name + "'" : id.substring(0, Math.min(12, id.length()));
  }

  /** A builder with every setting at its default (see {@link SandboxSpec} for the defaults). */
  public static Builder builder() {
    return new Builder();
  }

  /** Starts a container sandbox of the default image ({@value SandboxSpec#DEFAULT_IMAGE}) with default settings. */
  public static ContainerSandbox start() {
    return builder().start();
  }

  /** The sandbox's name, or null if it has none. */
  public String name() {
    return name;
  }

  /**
   * The agent's address as this JVM reaches it, e.g. {@code http://127.0.0.1:41234}; null while
   * stopped. A wake may publish the agent on another port.
   */
  public URI baseUrl() {
    return client() instanceof AgentClient c ? c.baseUrl() : null;
  }

  /** Configures and starts a {@link ContainerSandbox}. Not thread-safe. */
  public static final class Builder {
    private final SandboxSpec.Builder spec = SandboxSpec.builder();
    private final ContainerProvider.Builder provider = ContainerProvider.builder();
    private boolean removeOnClose = true;

    private Builder() {}

    /** The agent image (default {@value SandboxSpec#DEFAULT_IMAGE}). */
    public Builder image(String image) {
      spec.image(image);
      return this;
    }

    /** Memory limit for agent and commands together, at least 64 MiB (default 1 GiB). */
    public Builder memoryBytes(long bytes) {
      spec.memoryBytes(bytes);
      return this;
    }

    /** CPU limit in CPUs (default 1). */
    public Builder cpus(double cpus) {
      spec.cpus(cpus);
      return this;
    }

    /** Most processes and threads at once, at least 64 (default 512). */
    public Builder pidsLimit(int limit) {
      spec.pidsLimit(limit);
      return this;
    }

    /** Lets commands open connections out of the container (default: no network). */
    public Builder network(boolean enabled) {
      spec.network(enabled);
      return this;
    }

    /**
     * Commands go out only through the agent's egress proxy, which decides by {@code policy};
     * see {@link SandboxSpec.Builder#egressPolicy(dev.sandboxsdk.EgressPolicy)}.
     */
    public Builder egressPolicy(dev.sandboxsdk.EgressPolicy policy) {
      spec.egressPolicy(policy);
      return this;
    }

    /**
     * A secret commands use without seeing it; see
     * {@link SandboxSpec.Builder#egressSecret(dev.sandboxsdk.EgressSecret)}. Repeatable.
     */
    public Builder egressSecret(dev.sandboxsdk.EgressSecret secret) {
      spec.egressSecret(secret);
      return this;
    }

    /** A variable every command gets; see {@link SandboxSpec.Builder#env(String, String)}. */
    public Builder env(String name, String value) {
      spec.env(name, value);
      return this;
    }

    /** Variables every command gets. */
    public Builder env(Map<String, String> variables) {
      spec.env(variables);
      return this;
    }

    /** A label to find the sandbox by ({@link SandboxInfo#labels()}). */
    public Builder label(String key, String value) {
      spec.label(key, value);
      return this;
    }

    /** Time without a request after which the container stops and is removed (default 10 min). */
    public Builder idleTimeout(Duration timeout) {
      spec.idleTimeout(timeout);
      return this;
    }

    /** No idle timeout: only {@code destroy()} or {@code close()} remove the container. */
    public Builder keepAlive() {
      spec.keepAlive();
      return this;
    }

    /** How long start-up may take (default 60 s). */
    public Builder startupTimeout(Duration timeout) {
      spec.startupTimeout(timeout);
      return this;
    }

    /** An extra agent option, e.g. {@code --grace-ms=500}. */
    public Builder agentArgument(String argument) {
      spec.agentArgument(argument);
      return this;
    }

    /**
     * Names the sandbox: the container {@code sandbox-<name>} persists until {@code destroy()}
     * (neither {@code close()} nor this JVM's exit removes it); see {@link SandboxSpec.Builder#name}.
     */
    public Builder name(String name) {
      spec.name(name);
      return this;
    }

    /** A repository to clone into the workspace at start; see {@link SandboxSpec.Builder#gitRepository(String)}. */
    public Builder gitRepository(String url) {
      spec.gitRepository(url);
      return this;
    }

    /** All of a spec's settings at once (replacing the ones set so far on this builder that it sets). */
    public Builder spec(SandboxSpec s) {
      Objects.requireNonNull(s, "spec == null");
      spec.image(s.image()).memoryBytes(s.memoryBytes()).cpus(s.cpus()).pidsLimit(s.pidsLimit())
          .network(s.network()).env(s.env()).startupTimeout(s.startupTimeout());
      s.labels().forEach(spec::label);
      s.agentArguments().forEach(spec::agentArgument);
      spec.egressPolicy(s.egressPolicy());
      s.egressSecrets().forEach(spec::egressSecret);
      if (s.name() != null) {
        spec.name(s.name());
      }
      if (s.gitRepository() != null) {
        spec.gitRepository(s.gitRepository(), s.gitCheckoutOptions());
      }
      if (s.idleTimeout() == null) {
        spec.keepAlive();
      } else {
        spec.idleTimeout(s.idleTimeout());
      }
      return this;
    }

    /** The engine's address (default {@code DOCKER_HOST}, else a local Docker or Podman socket). */
    public Builder dockerHost(URI dockerHost) {
      provider.dockerHost(dockerHost);
      return this;
    }

    /** See {@link ContainerProvider.Builder#publishAddress(String)} (default 127.0.0.1). */
    public Builder publishAddress(String address) {
      provider.publishAddress(address);
      return this;
    }

    /** See {@link ContainerProvider.Builder#connectHost(String)}. */
    public Builder connectHost(String host) {
      provider.connectHost(host);
      return this;
    }

    /**
     * Whether {@code close()} and this JVM's exit remove the container (default true). With
     * false, the sandbox outlives this JVM until {@code destroy()} or its idle timeout.
     */
    public Builder removeOnClose(boolean remove) {
      this.removeOnClose = remove;
      return this;
    }

    /**
     * Creates the container and returns once its agent answers.
     *
     * @throws dev.sandboxsdk.SandboxConnectionException if no engine is reachable
     * @throws dev.sandboxsdk.SandboxException if the image is missing, the container dies during
     *     start-up (with its last output), or the engine refuses
     */
    public ContainerSandbox start() {
      SandboxSpec s = spec.build();
      ContainerProvider p = provider.build();
      try {
        // The sandbox owns this provider: closing it releases the engine connection.
        return p.create(s, removeOnClose && s.name() == null, true);
      } catch (RuntimeException e) {
        p.close();
        throw e;
      }
    }
  }
}
