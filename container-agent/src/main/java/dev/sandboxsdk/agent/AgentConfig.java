package dev.sandboxsdk.agent;

import java.nio.file.Path;
import java.util.Objects;

/**
 * Everything the agent is started with. Immutable; build one with {@link #builder()}.
 *
 * @param token the bearer token clients must send, or null only when auth is explicitly disabled
 * @param exitOnStdinEof whether the agent stops when its standard input reaches end of file
 * @param maxConnections most HTTP connections open at once; 0 derives it from the process's
 *     open-file limit (see {@link #effectiveMaxConnections()})
 * @param requestTimeoutSeconds how long a client may take to send a request's line, headers and
 *     body before its connection is closed; responses (event streams) are not limited
 * @param inheritEnv names of the agent's environment variables that commands get besides the
 *     base set (see {@link dev.sandboxsdk.agent.process.CommandEnvironment})
 * @param commandUser the user every command runs as (a name from /etc/passwd, {@code UID} or
 *     {@code UID:GID}), or null to run commands as the agent's own user
 * @param idleTimeoutMs stop the agent once no request has been in progress or started for this
 *     long; 0 never
 * @param freshWorkspace whether the workspace is a new directory the agent made itself (no
 *     {@code --workspace}), which it may give to the command user
 * @param isolation how commands are isolated from the host: {@code none}, {@code bwrap} (each
 *     command in a bubblewrap sandbox; the agent fails to start if it cannot) or {@code auto}
 *     (bwrap where it works, else none with one warning)
 * @param isolationNetwork whether isolated commands may use the network
 * @param proxyTimeoutMs how long a server behind {@code /proxy/{port}/} may stay silent: until
 *     its response headers, and between two reads of its response body
 * @param spawn how commands are started: one of {@link #SPAWN_MODES}
 * @param checkpointDir where checkpoints of the workspace are kept (outside the workspace, only
 *     the agent's), or null for a temporary directory the agent deletes when it stops
 * @param egressPolicy the policy the egress proxy starts with, or null for no egress proxy (and
 *     no proxy variables for commands)
 * @param egressTestHosts a test hook: names the egress proxy resolves to these addresses instead
 *     of asking DNS ({@code --egress-test-hosts}); empty (the default) in any real use
 * @param egressSecrets secrets the egress proxy puts into requests to their hosts while commands
 *     see placeholders ({@code --egress-secrets}); none by default; needs {@code egressPolicy}
 * @param egressTestTrust a test hook: CAs the egress proxy trusts besides the JDK's on its own
 *     TLS connections ({@code --egress-test-trust}); empty (the default) in any real use
 */
public record AgentConfig(
    String bind,
    int port,
    Path workspace,
    String token,
    boolean insecureNoAuth,
    int maxProcesses,
    long graceMs,
    long keepAliveMs,
    int maxBodyBytes,
    int logWindowBytes,
    int defaultMaxOutputBytes,
    long autoCleanupDelayMs,
    boolean exitOnStdinEof,
    int maxConnections,
    int requestTimeoutSeconds,
    java.util.List<String> inheritEnv,
    long outputBudgetBytes,
    String commandUser,
    long idleTimeoutMs,
    boolean freshWorkspace,
    String isolation,
    boolean isolationNetwork,
    long proxyTimeoutMs,
    String spawn,
    Path checkpointDir,
    dev.sandboxsdk.agent.egress.EgressPolicy egressPolicy,
    java.util.Map<String, String> egressTestHosts,
    dev.sandboxsdk.agent.egress.EgressSecrets egressSecrets,
    java.util.List<java.security.cert.X509Certificate> egressTestTrust) {

  /**
   * The values of {@code --spawn}: {@code auto} (the default) starts commands with the native
   * {@code posix_spawn} when it passes its self-test, else through the JDK; {@code native} fails
   * the start without it; {@code jdk} always uses {@code ProcessBuilder} with {@code setsid(1)}.
   */
  public static final java.util.List<String> SPAWN_MODES = java.util.List.of("auto", "native", "jdk");

  /** The values of {@code --isolation}. */
  public static final java.util.List<String> ISOLATION_MODES = java.util.List.of("none", "bwrap", "auto");

  public static final int DEFAULT_PORT = 3000;
  public static final String DEFAULT_BIND = "0.0.0.0";
  public static final int DEFAULT_MAX_PROCESSES = 1024;
  public static final long DEFAULT_GRACE_MS = 5_000;
  public static final long DEFAULT_KEEP_ALIVE_MS = 2_000;
  /** The protocol promises a keep-alive at least this often. */
  public static final long MAX_KEEP_ALIVE_MS = 15_000;
  public static final int DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024;
  public static final int DEFAULT_LOG_WINDOW_BYTES = 1024 * 1024;
  public static final int DEFAULT_MAX_OUTPUT_BYTES = 16 * 1024 * 1024;
  /**
   * The largest maxOutputBytes a request may ask for on any agent; an agent whose output budget
   * is smaller allows less (see {@link #maxOutputBytesLimit()}).
   */
  public static final int MAX_OUTPUT_BYTES_LIMIT = 256 * 1024 * 1024;
  public static final long DEFAULT_AUTO_CLEANUP_DELAY_MS = 60_000;
  /** The default request deadline: headers and body must arrive within it. */
  public static final int DEFAULT_REQUEST_TIMEOUT_SECONDS = 30;
  public static final int MAX_REQUEST_TIMEOUT_SECONDS = 3600;
  /** How long a proxied server may stay silent by default: five minutes. */
  public static final long DEFAULT_PROXY_TIMEOUT_MS = 300_000;
  public static final long MAX_PROXY_TIMEOUT_MS = 24L * 3600 * 1000;
  /** The derived connection cap never exceeds this (each busy connection holds a thread). */
  public static final int MAX_DERIVED_CONNECTIONS = 1024;
  /** Open files the derived connection cap leaves to the JVM, before halving the rest. */
  static final int RESERVED_FDS = 64;
  /**
   * Descriptors a running process holds in the agent: its stdout and stderr FIFOs, a stdin pipe,
   * and with the native spawn the pidfd its exit is watched through.
   */
  static final int FDS_PER_PROCESS = 4;

  public AgentConfig {
    Objects.requireNonNull(bind, "bind == null");
    Objects.requireNonNull(workspace, "workspace == null");
    if (port < 0 || port > 65535) {
      throw new IllegalArgumentException("port must be 0..65535: " + port);
    }
    if (token == null && !insecureNoAuth) {
      throw new IllegalArgumentException("a token is required unless auth is explicitly disabled");
    }
    if (token != null && token.isEmpty()) {
      throw new IllegalArgumentException("token is empty");
    }
    if (checkpointDir != null && (checkpointDir.startsWith(workspace) || workspace.startsWith(checkpointDir))) {
      // Commands could read or change checkpoints there, and a checkpoint would contain itself.
      throw new IllegalArgumentException("the checkpoint directory " + checkpointDir
          + " must be outside the workspace " + workspace + " (and not contain it)");
    }
    if (maxProcesses < 0) {
      throw new IllegalArgumentException("maxProcesses must be >= 0 (0 derives it): " + maxProcesses);
    }
    positive("graceMs", graceMs);
    positive("maxBodyBytes", maxBodyBytes);
    positive("logWindowBytes", logWindowBytes);
    positive("defaultMaxOutputBytes", defaultMaxOutputBytes);
    if (keepAliveMs <= 0 || keepAliveMs > MAX_KEEP_ALIVE_MS) {
      throw new IllegalArgumentException("keepAliveMs must be 1.." + MAX_KEEP_ALIVE_MS + ": " + keepAliveMs);
    }
    inheritEnv = java.util.List.copyOf(inheritEnv);
    egressTestHosts = java.util.Map.copyOf(egressTestHosts);
    if (!egressTestHosts.isEmpty() && egressPolicy == null) {
      throw new IllegalArgumentException("--egress-test-hosts needs --egress-policy");
    }
    egressSecrets = egressSecrets == null ? dev.sandboxsdk.agent.egress.EgressSecrets.none() : egressSecrets;
    egressTestTrust = java.util.List.copyOf(egressTestTrust);
    if (!egressSecrets.isEmpty() && egressPolicy == null) {
      throw new IllegalArgumentException("--egress-secrets needs --egress-policy: secrets are put in by the egress"
          + " proxy, which runs only with a policy");
    }
    if (!egressTestTrust.isEmpty() && egressPolicy == null) {
      throw new IllegalArgumentException("--egress-test-trust needs --egress-policy");
    }
    if (autoCleanupDelayMs < 0) {
      throw new IllegalArgumentException("autoCleanupDelayMs must be >= 0: " + autoCleanupDelayMs);
    }
    if (maxConnections < 0) {
      throw new IllegalArgumentException("maxConnections must be >= 0 (0 derives it): " + maxConnections);
    }
    if (requestTimeoutSeconds <= 0 || requestTimeoutSeconds > MAX_REQUEST_TIMEOUT_SECONDS) {
      throw new IllegalArgumentException("requestTimeoutSeconds must be 1.." + MAX_REQUEST_TIMEOUT_SECONDS + ": " + requestTimeoutSeconds);
    }
    if (outputBudgetBytes < 0) {
      throw new IllegalArgumentException("outputBudgetBytes must be >= 0 (0: derive from the heap): " + outputBudgetBytes);
    }
    if (commandUser != null) {
      String error = dev.sandboxsdk.agent.process.CommandUser.syntaxError(commandUser);
      if (error != null) {
        throw new IllegalArgumentException("commandUser: " + error);
      }
    }
    if (idleTimeoutMs < 0) {
      throw new IllegalArgumentException("idleTimeoutMs must be >= 0 (0: never): " + idleTimeoutMs);
    }
    if (proxyTimeoutMs <= 0 || proxyTimeoutMs > MAX_PROXY_TIMEOUT_MS) {
      throw new IllegalArgumentException("proxyTimeoutMs must be 1.." + MAX_PROXY_TIMEOUT_MS + ": " + proxyTimeoutMs);
    }
    Objects.requireNonNull(spawn, "spawn == null");
    if (!SPAWN_MODES.contains(spawn)) {
      throw new IllegalArgumentException("spawn must be one of " + SPAWN_MODES + ": " + spawn);
    }
    Objects.requireNonNull(isolation, "isolation == null");
    if (!ISOLATION_MODES.contains(isolation)) {
      throw new IllegalArgumentException("isolation must be one of " + ISOLATION_MODES + ": " + isolation);
    }
    if (!isolation.equals("none") && commandUser != null) {
      throw new IllegalArgumentException("--isolation " + isolation + " cannot be combined with --command-user"
          + " (use one: bwrap for a local sandbox, --command-user in a container)");
    }
  }

  /**
   * The connection cap in force: {@link #maxConnections()} if set, else half of what the open-file
   * limit leaves after {@value #RESERVED_FDS} descriptors for the JVM (the other half is for the
   * pipes of processes), between 16 and {@value #MAX_DERIVED_CONNECTIONS}.
   */
  public int effectiveMaxConnections() {
    if (maxConnections > 0) {
      return maxConnections;
    }
    return derivedMaxConnections(openFileLimit());
  }

  /**
   * The process cap in force: {@link #maxProcesses()} if set, else {@value #DEFAULT_MAX_PROCESSES}
   * or fewer, so that running processes fit in the half of the open-file limit that
   * {@link #effectiveMaxConnections()} leaves them. Without this a low limit let processes use up
   * every descriptor, and the JDK server then spins on a failing accept.
   */
  public int effectiveMaxProcesses() {
    if (maxProcesses > 0) {
      return maxProcesses;
    }
    return derivedMaxProcesses(openFileLimit());
  }

  static int derivedMaxProcesses(long openFileLimit) {
    long share = (openFileLimit - RESERVED_FDS) / 2 / FDS_PER_PROCESS;
    return (int) Math.max(8, Math.min(DEFAULT_MAX_PROCESSES, share));
  }

  static int derivedMaxConnections(long openFileLimit) {
    long half = (openFileLimit - RESERVED_FDS) / 2;
    return (int) Math.max(16, Math.min(MAX_DERIVED_CONNECTIONS, half));
  }

  /**
   * The soft limit on open files of this process, from /proc/self/limits; unlimited if unknown.
   * Read once per JVM, like the connection cap the JDK server reads once, so both caps derived
   * from it stay consistent even if the limit of the running agent is changed.
   */
  static long openFileLimit() {
    return OpenFileLimit.VALUE;
  }

  private static final class OpenFileLimit {
    static final long VALUE = readOpenFileLimit();
  }

  private static long readOpenFileLimit() {
    try {
      for (String line : java.nio.file.Files.readAllLines(Path.of("/proc/self/limits"))) {
        if (line.startsWith("Max open files")) {
          String soft = line.substring("Max open files".length()).trim().split("\\s+")[0];
          return soft.equals("unlimited") ? Long.MAX_VALUE : Long.parseLong(soft);
        }
      }
    } catch (java.io.IOException | RuntimeException e) {
      // not Linux: no limit known
    }
    return Long.MAX_VALUE;
  }

  /**
   * The total budget for buffered output: {@code outputBudgetBytes}, or when that is 0 a share
   * of the JVM's maximum heap ({@link dev.sandboxsdk.agent.process.OutputBudget#DEFAULT_HEAP_PERCENT}).
   */
  public long outputBudget() {
    return dev.sandboxsdk.agent.process.OutputBudget.resolve(outputBudgetBytes);
  }

  /**
   * The largest {@code maxOutputBytes} a request may ask for here: {@link #MAX_OUTPUT_BYTES_LIMIT},
   * or less so that both streams of one exec fit in the output budget.
   */
  public int maxOutputBytesLimit() {
    return (int) Math.max(1, Math.min(MAX_OUTPUT_BYTES_LIMIT, outputBudget() / 2));
  }

  /** {@link #defaultMaxOutputBytes()}, lowered to {@link #maxOutputBytesLimit()} if the budget is smaller. */
  public int effectiveDefaultMaxOutputBytes() {
    return Math.min(defaultMaxOutputBytes, maxOutputBytesLimit());
  }

  private static void positive(String name, long value) {
    if (value <= 0) {
      throw new IllegalArgumentException(name + " must be positive: " + value);
    }
  }

  public static Builder builder() {
    return new Builder();
  }

  @Override
  public String toString() {
    return "AgentConfig[bind=" + bind + ", port=" + port + ", workspace=" + workspace
        + ", auth=" + (token != null ? "token" : "DISABLED") + ", maxProcesses=" + maxProcesses
        + ", graceMs=" + graceMs + ", keepAliveMs=" + keepAliveMs + ", maxBodyBytes=" + maxBodyBytes
        + ", logWindowBytes=" + logWindowBytes + ", defaultMaxOutputBytes=" + defaultMaxOutputBytes
        + ", autoCleanupDelayMs=" + autoCleanupDelayMs + ", exitOnStdinEof=" + exitOnStdinEof
        + ", maxConnections=" + maxConnections + ", requestTimeoutSeconds=" + requestTimeoutSeconds
        + ", inheritEnv=" + inheritEnv + ", commandUser=" + commandUser + ", idleTimeoutMs=" + idleTimeoutMs
        + ", isolation=" + isolation + (isolation.equals("none") ? "" : ", network=" + (isolationNetwork ? "on" : "off"))
        + ", proxyTimeoutMs=" + proxyTimeoutMs + ", spawn=" + spawn
        + ", checkpointDir=" + (checkpointDir != null ? checkpointDir : "temporary")
        + ", egress=" + (egressPolicy == null ? "none" : egressPolicy.mode() + " with " + egressPolicy.rules().size()
            + " rule(s)" + (egressTestHosts.isEmpty() ? "" : ", test hosts " + egressTestHosts)
            + (egressSecrets.isEmpty() ? "" : ", secrets " + egressSecrets.placeholders().keySet()))
        + ", outputBudgetBytes=" + (outputBudgetBytes > 0 ? outputBudgetBytes : "auto(" + outputBudget() + ")") + "]";
  }

  /** Mutable builder with the documented defaults. */
  public static final class Builder {
    private String bind = DEFAULT_BIND;
    private int port = DEFAULT_PORT;
    private Path workspace = Path.of("").toAbsolutePath();
    private String token;
    private boolean insecureNoAuth;
    private int maxProcesses; // 0: derived from the open-file limit
    private long graceMs = DEFAULT_GRACE_MS;
    private long keepAliveMs = DEFAULT_KEEP_ALIVE_MS;
    private int maxBodyBytes = DEFAULT_MAX_BODY_BYTES;
    private int logWindowBytes = DEFAULT_LOG_WINDOW_BYTES;
    private int defaultMaxOutputBytes = DEFAULT_MAX_OUTPUT_BYTES;
    private long autoCleanupDelayMs = DEFAULT_AUTO_CLEANUP_DELAY_MS;
    private boolean exitOnStdinEof;
    private int maxConnections;
    private int requestTimeoutSeconds = DEFAULT_REQUEST_TIMEOUT_SECONDS;
    private final java.util.Set<String> inheritEnv = new java.util.LinkedHashSet<>();
    private long outputBudgetBytes;
    private String commandUser;
    private long idleTimeoutMs;
    private boolean freshWorkspace;
    private String isolation = "none";
    private boolean isolationNetwork;
    private long proxyTimeoutMs = DEFAULT_PROXY_TIMEOUT_MS;
    private String spawn = "auto";
    private Path checkpointDir;
    private dev.sandboxsdk.agent.egress.EgressPolicy egressPolicy;
    private final java.util.Map<String, String> egressTestHosts = new java.util.LinkedHashMap<>();
    private dev.sandboxsdk.agent.egress.EgressSecrets egressSecrets;
    private final java.util.List<java.security.cert.X509Certificate> egressTestTrust = new java.util.ArrayList<>();

    public Builder bind(String bind) { this.bind = bind; return this; }
    public Builder port(int port) { this.port = port; return this; }
    public Builder workspace(Path workspace) { this.workspace = workspace; return this; }
    public Builder token(String token) { this.token = token; return this; }
    public Builder insecureNoAuth(boolean insecureNoAuth) { this.insecureNoAuth = insecureNoAuth; return this; }
    public Builder maxProcesses(int maxProcesses) { this.maxProcesses = maxProcesses; return this; }
    public Builder graceMs(long graceMs) { this.graceMs = graceMs; return this; }
    public Builder keepAliveMs(long keepAliveMs) { this.keepAliveMs = keepAliveMs; return this; }
    public Builder maxBodyBytes(int maxBodyBytes) { this.maxBodyBytes = maxBodyBytes; return this; }
    public Builder logWindowBytes(int logWindowBytes) { this.logWindowBytes = logWindowBytes; return this; }
    public Builder defaultMaxOutputBytes(int bytes) { this.defaultMaxOutputBytes = bytes; return this; }
    public Builder autoCleanupDelayMs(long ms) { this.autoCleanupDelayMs = ms; return this; }
    public Builder exitOnStdinEof(boolean exit) { this.exitOnStdinEof = exit; return this; }
    public Builder maxConnections(int max) { this.maxConnections = max; return this; }
    public Builder requestTimeoutSeconds(int seconds) { this.requestTimeoutSeconds = seconds; return this; }
    /** Adds names of the agent's environment variables that commands also get. */
    public Builder inheritEnv(java.util.Collection<String> names) { this.inheritEnv.addAll(names); return this; }
    /** Total buffered output across all processes; 0 (the default) derives it from the max heap. */
    public Builder outputBudgetBytes(long bytes) { this.outputBudgetBytes = bytes; return this; }
    /** The user commands run as: a name, {@code UID} or {@code UID:GID}; null (the default) for the agent's own. */
    public Builder commandUser(String user) { this.commandUser = user; return this; }
    /** Stop after this long without requests; 0 (the default) never. */
    public Builder idleTimeoutMs(long ms) { this.idleTimeoutMs = ms; return this; }
    /** Whether the agent made the workspace itself (no {@code --workspace}). */
    public Builder freshWorkspace(boolean fresh) { this.freshWorkspace = fresh; return this; }

    /** {@code none} (the default), {@code bwrap} or {@code auto}; see {@link AgentConfig#isolation()}. */
    public Builder isolation(String isolation) { this.isolation = isolation; return this; }
    /** Whether isolated commands may use the network (default false). */
    public Builder isolationNetwork(boolean on) { this.isolationNetwork = on; return this; }
    /** How long a proxied server may stay silent (default {@value AgentConfig#DEFAULT_PROXY_TIMEOUT_MS} ms). */
    public Builder proxyTimeoutMs(long ms) { this.proxyTimeoutMs = ms; return this; }
    /** {@code auto} (the default), {@code native} or {@code jdk}; see {@link AgentConfig#SPAWN_MODES}. */
    public Builder spawn(String spawn) { this.spawn = spawn; return this; }
    /** Where checkpoints are kept; null (the default) for a temporary directory removed on stop. */
    public Builder checkpointDir(Path dir) { this.checkpointDir = dir; return this; }
    /** The egress proxy's starting policy; null (the default) runs no proxy. */
    public Builder egressPolicy(dev.sandboxsdk.agent.egress.EgressPolicy policy) { this.egressPolicy = policy; return this; }
    /** Test hook: names the egress proxy resolves to these IP addresses; none by default. */
    public Builder egressTestHosts(java.util.Map<String, String> hosts) { this.egressTestHosts.putAll(hosts); return this; }
    /** Secrets the egress proxy puts into requests to their hosts; none by default. */
    public Builder egressSecrets(dev.sandboxsdk.agent.egress.EgressSecrets secrets) { this.egressSecrets = secrets; return this; }
    /** Test hook: CAs the egress proxy also trusts upstream; none by default. */
    public Builder egressTestTrust(java.util.Collection<java.security.cert.X509Certificate> cas) {
      this.egressTestTrust.addAll(cas);
      return this;
    }

    public AgentConfig build() {
      return new AgentConfig(bind, port, workspace, token, insecureNoAuth, maxProcesses, graceMs,
          keepAliveMs, maxBodyBytes, logWindowBytes, defaultMaxOutputBytes, autoCleanupDelayMs, exitOnStdinEof,
          maxConnections, requestTimeoutSeconds,
          java.util.List.copyOf(inheritEnv),
          outputBudgetBytes, commandUser, idleTimeoutMs, freshWorkspace, isolation, isolationNetwork,
          proxyTimeoutMs, spawn, checkpointDir, egressPolicy, egressTestHosts, egressSecrets, egressTestTrust);
    }
  }
}
