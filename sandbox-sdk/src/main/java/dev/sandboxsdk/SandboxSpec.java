package dev.sandboxsdk;

import dev.sandboxsdk.internal.Checks;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What a {@link SandboxProvider} should create: the image, the resource limits, the network,
 * the environment and the sandbox's life span. Every provider applies the same settings its own
 * way (container flags, pod settings); see each provider for what it enforces.
 *
 * <p>The defaults are the safe ones: no network, 1 GiB of memory, one CPU, at most 512
 * processes, removed after 10 minutes without a request. Immutable and thread-safe.
 */
public final class SandboxSpec {
  /** The image a provider uses when the spec names none. */
  public static final String DEFAULT_IMAGE = "sandbox-agent";
  /** Default memory limit: 1 GiB for the agent and all commands together. */
  public static final long DEFAULT_MEMORY_BYTES = 1L << 30;
  /** Default CPU limit, in CPUs. */
  public static final double DEFAULT_CPUS = 1.0;
  /** Default limit on processes and threads in the sandbox (the agent's own threads count). */
  public static final int DEFAULT_PIDS_LIMIT = 512;
  /** Default time without a request after which a sandbox removes itself. */
  public static final Duration DEFAULT_IDLE_TIMEOUT = Duration.ofMinutes(10);

  private static final long MIN_MEMORY_BYTES = 64L << 20;

  private final String image;
  private final long memoryBytes;
  private final double cpus;
  private final int pidsLimit;
  private final boolean network;
  private final Map<String, String> env;
  private final Map<String, String> labels;
  private final Duration idleTimeout;
  private final Duration startupTimeout;
  private final List<String> agentArguments;
  private final String name;
  private final String gitRepository;
  private final GitCheckoutOptions gitOptions;
  private final EgressPolicy egressPolicy;
  private final List<EgressSecret> egressSecrets;

  private SandboxSpec(Builder b) {
    this.image = b.image;
    this.memoryBytes = b.memoryBytes;
    this.cpus = b.cpus;
    this.pidsLimit = b.pidsLimit;
    this.network = b.network;
    this.env = Collections.unmodifiableMap(new LinkedHashMap<>(b.env));
    this.labels = Collections.unmodifiableMap(new LinkedHashMap<>(b.labels));
    this.idleTimeout = b.idleTimeout;
    this.startupTimeout = b.startupTimeout;
    this.agentArguments = List.copyOf(b.agentArguments);
    this.name = b.name;
    this.gitRepository = b.gitRepository;
    this.gitOptions = b.gitOptions;
    this.egressPolicy = b.egressPolicy;
    this.egressSecrets = List.copyOf(b.egressSecrets);
  }

  /** A spec with every setting at its default. */
  public static SandboxSpec defaults() {
    return builder().build();
  }

  /** A builder with every setting at its default. */
  public static Builder builder() {
    return new Builder();
  }

  /** A builder that starts from this spec's settings. */
  public Builder toBuilder() {
    Builder b = new Builder();
    b.image = image;
    b.memoryBytes = memoryBytes;
    b.cpus = cpus;
    b.pidsLimit = pidsLimit;
    b.network = network;
    b.env.putAll(env);
    b.labels.putAll(labels);
    b.idleTimeout = idleTimeout;
    b.startupTimeout = startupTimeout;
    b.agentArguments.addAll(agentArguments);
    b.name = name;
    b.gitRepository = gitRepository;
    b.gitOptions = gitOptions;
    b.egressPolicy = egressPolicy;
    b.egressSecrets.addAll(egressSecrets);
    return b;
  }

  /** The agent image, e.g. {@code sandbox-agent} or {@code registry.example.com/sandbox-agent:0.2}. */
  public String image() {
    return image;
  }

  /** Memory limit of the whole sandbox (agent and commands), in bytes; no swap beyond it. */
  public long memoryBytes() {
    return memoryBytes;
  }

  /** CPU limit, in CPUs (1.5 = one and a half cores' time). */
  public double cpus() {
    return cpus;
  }

  /** Most processes and threads at once in the sandbox, the agent's included. */
  public int pidsLimit() {
    return pidsLimit;
  }

  /** Whether commands may open connections out of the sandbox. */
  public boolean network() {
    return network;
  }

  /** Variables every command gets (on top of the sandbox's minimal environment). */
  public Map<String, String> env() {
    return env;
  }

  /** The caller's labels, to find the sandbox again ({@link SandboxInfo#labels()}). */
  public Map<String, String> labels() {
    return labels;
  }

  /** Time without a request after which the sandbox stops and removes itself; {@code null} = never. */
  public Duration idleTimeout() {
    return idleTimeout;
  }

  /** How long creation may take, pulling nothing (the image must be there). */
  public Duration startupTimeout() {
    return startupTimeout;
  }

  /** Extra agent options, e.g. {@code --grace-ms=500} (see the agent's {@code --help}). */
  public List<String> agentArguments() {
    return agentArguments;
  }

  /**
   * The sandbox's name, or {@code null} for an unnamed one. A named sandbox persists: closing its
   * handle or the JVM's exit does not remove it, only {@link ManagedSandbox#destroy()} does.
   */
  public String name() {
    return name;
  }

  /** The repository cloned into the workspace at creation, or {@code null}. */
  public String gitRepository() {
    return gitRepository;
  }

  /** How {@link #gitRepository()} is cloned (branch, depth, target directory, credentials). */
  public GitCheckoutOptions gitCheckoutOptions() {
    return gitOptions;
  }

  /**
   * The policy of the sandbox's egress proxy, or {@code null} for none (then {@link Sandbox#egress()}
   * throws {@link EgressNotEnabledException}). See {@link Builder#egressPolicy(EgressPolicy)}.
   */
  public EgressPolicy egressPolicy() {
    return egressPolicy;
  }

  /** The secrets of the sandbox's egress proxy, in the order given; empty for none. See {@link Builder#egressSecret}. */
  public List<EgressSecret> egressSecrets() {
    return egressSecrets;
  }

  @Override
  public String toString() {
    // Values of env may be secrets: names only.
    return "SandboxSpec{image=" + image + ", memoryBytes=" + memoryBytes + ", cpus=" + cpus
        + ", pidsLimit=" + pidsLimit + ", network=" + network + ", env=" + env.keySet()
        + ", labels=" + labels + ", idleTimeout=" + idleTimeout + (name != null ? ", name=" + name : "")
        + (egressPolicy != null ? ", egress=" + egressPolicy.mode().wireName() + " with " + egressPolicy.rules().size()
            + " rules" : "")
        + (egressSecrets.isEmpty() ? "" : ", egressSecrets=" + egressSecrets.stream().map(EgressSecret::name).toList())
        + (gitRepository != null ? ", gitRepository=" + gitRepository.replaceFirst("^([A-Za-z][A-Za-z0-9+.-]*://)[^/@]*@", "$1***@") : "") + "}";
  }

  /** Configures a {@link SandboxSpec}. Not thread-safe. */
  public static final class Builder {
    private String image = DEFAULT_IMAGE;
    private long memoryBytes = DEFAULT_MEMORY_BYTES;
    private double cpus = DEFAULT_CPUS;
    private int pidsLimit = DEFAULT_PIDS_LIMIT;
    private boolean network;
    private final Map<String, String> env = new LinkedHashMap<>();
    private final Map<String, String> labels = new LinkedHashMap<>();
    private Duration idleTimeout = DEFAULT_IDLE_TIMEOUT;
    private Duration startupTimeout = Duration.ofSeconds(60);
    private final List<String> agentArguments = new ArrayList<>();
    private String name;
    private String gitRepository;
    private GitCheckoutOptions gitOptions = GitCheckoutOptions.defaults();
    private EgressPolicy egressPolicy;
    private final List<EgressSecret> egressSecrets = new ArrayList<>();

    private Builder() {}

    /**
     * Names the sandbox, which makes it persistent: closing its handle, or this JVM's exit, does
     * not remove it (a local one stops, a container keeps running until its idle timeout stops
     * it), any JVM finds it by this name ({@link SandboxProvider#get(String)}, {@link SandboxProvider#list()})
     * and wakes it, and only {@link ManagedSandbox#destroy()} removes it. A name is 1 to 63 of
     * {@code [A-Za-z0-9._-]}, starting with a letter or digit, unique per provider.
     */
    public Builder name(String name) {
      this.name = Checks.sandboxName(name);
      return this;
    }

    /**
     * Clones this repository into the workspace when the sandbox is created (with
     * {@link SandboxGit#checkout}: into a directory named after the repository, e.g. {@code /workspace/app}
     * for {@code https://example.com/app.git}); creation fails, and leaves nothing behind, if the
     * clone fails. The sandbox needs {@link #network(boolean) network} for a remote URL.
     */
    public Builder gitRepository(String url) {
      return gitRepository(url, GitCheckoutOptions.defaults());
    }

    /** As {@link #gitRepository(String)}, with a branch, depth, target directory or credentials. */
    public Builder gitRepository(String url, GitCheckoutOptions options) {
      Objects.requireNonNull(url, "url == null");
      if (url.isBlank()) {
        throw new IllegalArgumentException("the repository URL is blank");
      }
      this.gitRepository = url;
      this.gitOptions = Objects.requireNonNull(options, "options == null");
      return this;
    }

    /** The agent image (default {@value #DEFAULT_IMAGE}); build it from {@code container-agent/Dockerfile}. */
    public Builder image(String image) {
      Objects.requireNonNull(image, "image == null");
      if (image.isBlank() || image.chars().anyMatch(c -> c <= ' ')) {
        throw new IllegalArgumentException("not an image name: '" + image + "'");
      }
      this.image = image;
      return this;
    }

    /** Memory limit in bytes, at least 64 MiB (default 1 GiB). */
    public Builder memoryBytes(long bytes) {
      if (bytes < MIN_MEMORY_BYTES) {
        throw new IllegalArgumentException("memoryBytes must be at least 64 MiB (" + MIN_MEMORY_BYTES + "): " + bytes);
      }
      this.memoryBytes = bytes;
      return this;
    }

    /** CPU limit in CPUs, between 0.01 and 1024 (default 1). */
    public Builder cpus(double cpus) {
      if (!(cpus >= 0.01 && cpus <= 1024)) {
        throw new IllegalArgumentException("cpus must be between 0.01 and 1024: " + cpus);
      }
      this.cpus = cpus;
      return this;
    }

    /** Most processes and threads at once, at least 64 (the agent needs some), default 512. */
    public Builder pidsLimit(int limit) {
      if (limit < 64) {
        throw new IllegalArgumentException("pidsLimit must be at least 64 (the agent's JVM needs about 30): " + limit);
      }
      this.pidsLimit = limit;
      return this;
    }

    /** Lets commands open connections out of the sandbox (default: no network). */
    public Builder network(boolean enabled) {
      this.network = enabled;
      return this;
    }

    /**
     * A variable every command gets. Providers pass it through the sandbox's own environment
     * (a container's), so whoever can inspect the sandbox through its engine can read it.
     *
     * @throws IllegalArgumentException if the name is not {@code [A-Za-z_][A-Za-z0-9_]*} or is one
     *     the sandbox sets itself ({@code SANDBOX_AGENT_TOKEN}, {@code SANDBOX_AGENT_RUN}, {@code SANDBOX_WORKSPACE})
     */
    public Builder env(String name, String value) {
      Checks.inheritableEnvName(name);
      Objects.requireNonNull(value, "value == null");
      if (value.indexOf('\0') >= 0) {
        throw new IllegalArgumentException("the value of " + name + " contains a NUL character");
      }
      env.put(name, value);
      return this;
    }

    /** Several variables; see {@link #env(String, String)}. */
    public Builder env(Map<String, String> variables) {
      variables.forEach(this::env);
      return this;
    }

    /**
     * A label to find the sandbox by later. Keys are {@code [A-Za-z0-9][A-Za-z0-9._-]*} up to 63
     * characters; values up to 255 characters without control characters.
     */
    public Builder label(String key, String value) {
      Objects.requireNonNull(key, "key == null");
      Objects.requireNonNull(value, "value == null");
      if (!key.matches("[A-Za-z0-9][A-Za-z0-9._-]{0,62}")) {
        throw new IllegalArgumentException("not a label key: '" + key + "'");
      }
      if (value.length() > 255 || value.chars().anyMatch(c -> c < ' ' || c == 0x7f)) {
        throw new IllegalArgumentException("label " + key + ": value longer than 255 characters or with control characters");
      }
      labels.put(key, value);
      return this;
    }

    /** Time without a request after which the sandbox stops and removes itself (default 10 min). */
    public Builder idleTimeout(Duration timeout) {
      this.idleTimeout = Checks.positive(timeout, "idleTimeout");
      return this;
    }

    /** The sandbox never stops for idleness; only {@code destroy()} (or {@code close()}) removes it. */
    public Builder keepAlive() {
      this.idleTimeout = null;
      return this;
    }

    /** How long creation may take (default 60 s). */
    public Builder startupTimeout(Duration timeout) {
      this.startupTimeout = Checks.positive(timeout, "startupTimeout");
      return this;
    }

    /**
     * Runs an egress proxy in the sandbox with this policy: its commands get proxy variables
     * ({@code HTTP_PROXY}, ...), their connections through it are decided by the policy and
     * recorded, and {@link Sandbox#egress()} reads and changes it. What that enforces depends on
     * the provider: the local provider with isolation and without {@link #network(boolean)
     * network} makes the proxy the only way out (the kernel enforces it); without isolation, or
     * with network on, the proxy is advisory (a program that ignores the variables goes around
     * it). The container and Kubernetes providers make it the only way out whatever {@code
     * network} says: the agent image's firewall lets only the agent connect out (see
     * docs/containers.md, "Network only through the egress proxy"); a policy changed while the
     * sandbox runs lasts until it stops, and it wakes with this one. {@code null} (the default)
     * means no proxy.
     */
    public Builder egressPolicy(EgressPolicy policy) {
      this.egressPolicy = policy;
      return this;
    }

    /**
     * A secret the sandbox's commands use without ever seeing it: they get the variable
     * {@link EgressSecret#name()} holding a placeholder, and the egress proxy puts the value in
     * for it in HTTPS requests to the secret's hosts only (docs/protocol/egress.md, "Secrets").
     * Repeatable, up to {@value EgressSecret#MAX_SECRETS} secrets with distinct names and values;
     * needs an {@link #egressPolicy(EgressPolicy) egress policy} that allows the hosts. The local
     * provider hands the values to the agent in a file it deletes once the agent has read it and
     * keeps them in memory only, never in the sandbox's record: a named sandbox with secrets wakes
     * only through the provider that created it. The container provider passes them in the
     * container's environment, which only root (the agent) reads inside and whoever may inspect
     * containers on the engine outside; the Kubernetes provider in the sandbox's own Secret,
     * mounted for the agent alone.
     *
     * @throws IllegalArgumentException if there are {@value EgressSecret#MAX_SECRETS} already, or
     *     one of the same name or value
     */
    public Builder egressSecret(EgressSecret secret) {
      Checks.addEgressSecret(egressSecrets, secret);
      return this;
    }

    /** An extra agent option, e.g. {@code --grace-ms=500}; repeatable. */
    public Builder agentArgument(String argument) {
      Objects.requireNonNull(argument, "argument == null");
      if (!argument.startsWith("--")) {
        throw new IllegalArgumentException("agent options start with --: '" + argument + "'");
      }
      agentArguments.add(argument);
      return this;
    }

    /**
     * The spec.
     *
     * @throws IllegalStateException if there are egress secrets without an egress policy, or a
     *     variable of {@link #env(String, String)} has a secret's name
     */
    public SandboxSpec build() {
      Checks.egressSecretsUsable(egressSecrets, egressPolicy != null, env.keySet());
      return new SandboxSpec(this);
    }
  }
}
