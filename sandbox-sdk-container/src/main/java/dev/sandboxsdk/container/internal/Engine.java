package dev.sandboxsdk.container.internal;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.command.InspectContainerResponse;
import com.github.dockerjava.api.exception.ConflictException;
import com.github.dockerjava.api.exception.DockerException;
import com.github.dockerjava.api.exception.NotFoundException;
import com.github.dockerjava.api.exception.NotModifiedException;
import com.github.dockerjava.api.model.Container;
import com.github.dockerjava.api.model.ContainerPort;
import com.github.dockerjava.api.model.ExposedPort;
import com.github.dockerjava.api.model.Frame;
import com.github.dockerjava.api.model.Ports;
import com.github.dockerjava.api.async.ResultCallback;
import com.github.dockerjava.core.DefaultDockerClientConfig;
import com.github.dockerjava.core.DockerClientImpl;
import com.github.dockerjava.zerodep.ZerodepDockerHttpClient;
import dev.sandboxsdk.SandboxConnectionException;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxInfo;
import dev.sandboxsdk.SandboxState;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The container engine, through docker-java: the few Engine API calls the provider makes, with
 * the engine's failures turned into {@link SandboxException}s that say what to do. Works with
 * Docker and with Podman's Docker-compatible service. Thread-safe (docker-java's client is).
 */
public final class Engine implements AutoCloseable {
  /** The label every sandbox container carries; the value is the SDK's label format version. */
  public static final String SANDBOX_LABEL = "dev.sandboxsdk.sandbox";
  /** Prefix of the caller's own labels on the container. */
  public static final String USER_LABEL_PREFIX = "dev.sandboxsdk.label.";
  /** When the sandbox was created, epoch milliseconds. */
  public static final String CREATED_LABEL = "dev.sandboxsdk.created-ms";
  /** The name of a named sandbox, which persists until destroyed (the container is {@code sandbox-<name>}). */
  public static final String NAME_LABEL = "dev.sandboxsdk.name";

  private final URI host;
  private final DockerClient docker;

  private Engine(URI host, DockerClient docker) {
    this.host = host;
    this.docker = docker;
  }

  /**
   * A client for the engine at {@code host}, or where {@code DOCKER_HOST} points, or at the
   * first local socket that exists: Docker's {@code /var/run/docker.sock}, then Podman's
   * (rootful {@code /run/podman/podman.sock}, rootless {@code $XDG_RUNTIME_DIR/podman/podman.sock}).
   */
  public static Engine connect(URI host) {
    URI target = host != null ? host : defaultHost();
    DefaultDockerClientConfig config = DefaultDockerClientConfig.createDefaultConfigBuilder()
        .withDockerHost(target.toString())
        .build();
    ZerodepDockerHttpClient http = new ZerodepDockerHttpClient.Builder()
        .dockerHost(config.getDockerHost())
        .sslConfig(config.getSSLConfig())
        .connectionTimeout(Duration.ofSeconds(5))
        .responseTimeout(Duration.ofSeconds(60))
        .maxConnections(32)
        .build();
    return new Engine(target, DockerClientImpl.getInstance(config, http));
  }

  static URI defaultHost() {
    String env = System.getenv("DOCKER_HOST");
    if (env != null && !env.isBlank()) {
      return URI.create(env.strip());
    }
    List<String> candidates = new ArrayList<>(List.of("/var/run/docker.sock", "/run/podman/podman.sock"));
    String runtimeDir = System.getenv("XDG_RUNTIME_DIR");
    if (runtimeDir != null && !runtimeDir.isBlank()) {
      candidates.add(runtimeDir + "/podman/podman.sock");
      candidates.add(runtimeDir + "/docker.sock");
    }
    for (String c : candidates) {
      if (Files.exists(Path.of(c))) {
        return URI.create("unix://" + c);
      }
    }
    return URI.create("unix:///var/run/docker.sock");
  }

  /** The engine's address. */
  public URI host() {
    return host;
  }

  /** The docker-java client, for the policy to build its request on. */
  DockerClient docker() {
    return docker;
  }

  /** Checks the engine answers; the version it reports (e.g. "Docker 28.2.2", "Podman Engine 4.3.1"). */
  public String ping() {
    return call("reach the container engine", () -> {
      docker.pingCmd().exec();
      var v = docker.versionCmd().exec();
      String name = v.getComponents() != null && !v.getComponents().isEmpty()
          ? v.getComponents().get(0).getName() : "engine";
      return name + " " + v.getVersion();
    });
  }

  /** Whether the engine has the image locally. */
  public boolean hasImage(String image) {
    return call("look up image " + image, () -> {
      try {
        docker.inspectImageCmd(image).exec();
        return true;
      } catch (NotFoundException e) {
        return false;
      }
    });
  }

  /** The container, or empty if the engine has none by that id or name. */
  public Optional<InspectContainerResponse> inspect(String id) {
    return call("inspect container " + id, () -> {
      try {
        return Optional.of(docker.inspectContainerCmd(id).exec());
      } catch (NotFoundException e) {
        return Optional.empty();
      }
    });
  }

  /** Starts a created container. */
  public void start(String id) {
    call("start container " + id, () -> docker.startContainerCmd(id).exec());
  }

  /**
   * Stops a container: SIGTERM to the agent, which stops every process within its grace period,
   * then SIGKILL after {@code timeoutSeconds}. The container and its volumes stay. No-op if it
   * is stopped already; returns whether it existed.
   */
  public boolean stop(String id, int timeoutSeconds) {
    return call("stop container " + id, () -> {
      try {
        docker.stopContainerCmd(id).withTimeout(timeoutSeconds).exec();
        return true;
      } catch (NotModifiedException e) {
        return true; // stopped already
      } catch (NotFoundException e) {
        return false;
      }
    });
  }

  /**
   * Removes a container (stopping it first) and its anonymous volumes. No-op if it is gone.
   * Returns whether it existed.
   */
  public boolean remove(String id) {
    return call("remove container " + id, () -> {
      try {
        docker.removeContainerCmd(id).withForce(true).withRemoveVolumes(true).exec();
        return true;
      } catch (NotFoundException e) {
        return false;
      } catch (ConflictException e) {
        // "removal already in progress": another caller is removing it
        return true;
      }
    });
  }

  /** The sandbox containers, running or not: all of them, or the one with this full id. */
  private List<Container> sandboxContainers(String id) {
    return call("list containers", () -> {
      var list = docker.listContainersCmd().withShowAll(true).withLabelFilter(Map.of(SANDBOX_LABEL, "1"));
      return (id == null ? list : list.withIdFilter(List.of(id))).exec();
    });
  }

  /** One sandbox container as the SDK describes it, or empty if it is gone (the engine filters, one call). */
  public Optional<SandboxInfo> sandbox(String id, String provider, String connectHost) {
    return sandboxContainers(id).stream().filter(c -> c.getId().equals(id)).findFirst()
        .map(c -> info(c, provider, connectHost));
  }

  /** Every sandbox container as the SDK describes it, oldest first. */
  public List<SandboxInfo> listSandboxes(String provider, String connectHost) {
    List<SandboxInfo> out = new ArrayList<>();
    for (Container c : sandboxContainers(null)) {
      out.add(info(c, provider, connectHost));
    }
    out.sort(Comparator.comparing(SandboxInfo::createdAt));
    return out;
  }

  /** Removes every stopped sandbox container with its volumes, except named ones; returns how many. */
  public int removeExited() {
    int n = 0;
    for (Container c : sandboxContainers(null)) {
      boolean named = c.getLabels() != null && c.getLabels().containsKey(NAME_LABEL);
      if (!named && !"running".equals(c.getState()) && !"created".equals(c.getState()) && remove(c.getId())) {
        n++;
      }
    }
    return n;
  }

  /**
   * A sandbox container: its full id, whether it runs, its published agent port (-1 when
   * stopped), its token and its sandbox name (null if unnamed).
   */
  public record Found(String id, boolean running, int hostPort, String token, String name) {}

  /** The running sandbox container with this id or name, if there is one. */
  public Optional<Found> findRunning(String idOrName) {
    return find(idOrName).filter(f -> f.running() && f.hostPort() > 0);
  }

  /**
   * The sandbox container with this id or container name, or the named sandbox of this name
   * (container {@code sandbox-<name>}), running or stopped.
   */
  public Optional<Found> find(String idOrName) {
    if (idOrName.isBlank()) {
      return Optional.empty();
    }
    Optional<Found> found = inspect(idOrName).flatMap(Engine::found);
    if (found.isEmpty() && idOrName.matches("[A-Za-z0-9][A-Za-z0-9._-]{0,62}")) {
      found = inspect(Launch.containerName(idOrName)).flatMap(Engine::found).filter(f -> idOrName.equals(f.name()));
    }
    return found;
  }

  private static Optional<Found> found(InspectContainerResponse c) {
    Map<String, String> labels = c.getConfig() == null || c.getConfig().getLabels() == null
        ? Map.of() : c.getConfig().getLabels();
    if (!"1".equals(labels.get(SANDBOX_LABEL))) {
      return Optional.empty();
    }
    String token = null;
    for (String e : c.getConfig().getEnv() == null ? new String[0] : c.getConfig().getEnv()) {
      if (e.startsWith(Launch.TOKEN_ENV + "=")) {
        token = e.substring(Launch.TOKEN_ENV.length() + 1);
      }
    }
    if (token == null) {
      return Optional.empty();
    }
    boolean running = c.getState() != null && Boolean.TRUE.equals(c.getState().getRunning());
    return Optional.of(new Found(c.getId(), running, running ? hostPort(c, Launch.AGENT_PORT) : -1, token,
        labels.get(NAME_LABEL)));
  }

  /**
   * The SDK's state for a Docker or Podman container state: {@code running}; {@code stopped}
   * (exited, created, stopped, configured: it starts again with its volume); {@code paused};
   * {@code starting} (restarting); {@code stopping} (stopping, removing); {@code exited} (dead: it
   * cannot start again); else {@code unknown}.
   */
  static SandboxState state(String engineState) {
    if (engineState == null) {
      return SandboxState.UNKNOWN;
    }
    return switch (engineState) {
      case "running" -> SandboxState.RUNNING;
      case "exited", "created", "stopped", "configured" -> SandboxState.STOPPED;
      case "paused" -> SandboxState.PAUSED;
      case "restarting" -> SandboxState.STARTING;
      case "stopping", "removing" -> SandboxState.STOPPING;
      case "dead" -> SandboxState.EXITED;
      default -> SandboxState.UNKNOWN;
    };
  }

  /** When a stopped container stopped (its agent's last activity), or null if unknown. */
  private Instant finishedAt(String id) {
    try {
      return inspect(id).map(c -> c.getState() == null ? null : c.getState().getFinishedAt())
          .map(Engine::parseTime).orElse(null);
    } catch (SandboxException e) {
      return null; // removed meanwhile
    }
  }

  private static final java.util.regex.Pattern LAST_ACTIVITY =
      java.util.regex.Pattern.compile("\"lastActivityAt\"\\s*:\\s*\"([^\"]{1,64})\"");

  /** The running agent's own last activity, or null if it does not answer quickly or says none. */
  private Instant agentLastActivity(String id, URI endpoint) {
    String token;
    try {
      token = find(id).map(Found::token).orElse(null);
    } catch (SandboxException e) {
      return null;
    }
    if (token == null) {
      return null;
    }
    try {
      java.net.HttpURLConnection h = (java.net.HttpURLConnection) endpoint.resolve("/api/version").toURL().openConnection();
      h.setConnectTimeout(500);
      h.setReadTimeout(1000);
      h.setRequestProperty("Authorization", "Bearer " + token);
      try {
        if (h.getResponseCode() != 200) {
          return null;
        }
        try (java.io.InputStream in = h.getInputStream()) {
          java.util.regex.Matcher m = LAST_ACTIVITY.matcher(new String(in.readNBytes(64 * 1024), StandardCharsets.UTF_8));
          return m.find() ? parseTime(m.group(1)) : null;
        }
      } finally {
        h.disconnect();
      }
    } catch (IOException | RuntimeException e) {
      return null; // stopping, or an agent from before lastActivityAt
    }
  }

  static Instant parseTime(String t) {
    try {
      Instant i = java.time.OffsetDateTime.parse(t).toInstant();
      return i.getEpochSecond() <= 0 ? null : i; // "0001-01-01T00:00:00Z": never
    } catch (RuntimeException e) {
      return null;
    }
  }

  private SandboxInfo info(Container c, String provider, String connectHost) {
    Map<String, String> labels = c.getLabels() == null ? Map.of() : c.getLabels();
    Map<String, String> user = new LinkedHashMap<>();
    labels.forEach((k, v) -> {
      if (k.startsWith(USER_LABEL_PREFIX)) {
        user.put(k.substring(USER_LABEL_PREFIX.length()), v);
      }
    });
    Instant created;
    try {
      created = Instant.ofEpochMilli(Long.parseLong(labels.getOrDefault(CREATED_LABEL, "")));
    } catch (NumberFormatException e) {
      created = Instant.ofEpochSecond(c.getCreated() == null ? 0 : c.getCreated());
    }
    URI endpoint = null;
    if ("running".equals(c.getState()) && c.getPorts() != null) {
      for (ContainerPort p : c.getPorts()) {
        if (p.getPrivatePort() != null && p.getPrivatePort() == Launch.AGENT_PORT && p.getPublicPort() != null) {
          endpoint = Launch.endpoint(connectHost, p.getPublicPort());
        }
      }
    }
    String name = labels.containsKey(NAME_LABEL) ? labels.get(NAME_LABEL)
        : c.getNames() != null && c.getNames().length > 0 ? c.getNames()[0].replaceFirst("^/", "") : c.getId();
    SandboxState state = state(c.getState());
    // A stopped sandbox was last active when it stopped; a running agent says when (GET /api/version,
    // which does not count as activity itself).
    Instant last = state == SandboxState.STOPPED ? finishedAt(c.getId())
        : endpoint != null ? agentLastActivity(c.getId(), endpoint) : null;
    return new SandboxInfo(c.getId(), provider, name, c.getImage() == null ? "" : c.getImage(), state, created,
        endpoint, user, last);
  }

  /** The host port the engine bound for {@code containerPort}, or -1 if none (yet). */
  public static int hostPort(InspectContainerResponse c, int containerPort) {
    if (c.getNetworkSettings() == null || c.getNetworkSettings().getPorts() == null) {
      return -1;
    }
    Ports.Binding[] bindings = c.getNetworkSettings().getPorts().getBindings().get(ExposedPort.tcp(containerPort));
    if (bindings == null) {
      return -1;
    }
    for (Ports.Binding b : bindings) {
      String spec = b.getHostPortSpec();
      if (spec != null && spec.matches("\\d+")) {
        return Integer.parseInt(spec);
      }
    }
    return -1;
  }

  /** The container's last {@code lines} lines of output (stdout and stderr), best effort. */
  public String lastLogLines(String id, int lines) {
    StringBuilder out = new StringBuilder();
    try {
      docker.logContainerCmd(id).withStdOut(true).withStdErr(true).withTail(lines)
          .exec(new ResultCallback.Adapter<Frame>() {
            @Override
            public void onNext(Frame frame) {
              synchronized (out) {
                if (out.length() < 64 * 1024) {
                  out.append(new String(frame.getPayload(), StandardCharsets.UTF_8));
                }
              }
            }
          }).awaitCompletion(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException e) {
      return "(its log could not be read: " + e.getMessage() + ")";
    }
    synchronized (out) {
      return out.toString().strip();
    }
  }

  /**
   * Runs an Engine API call, turning its failures into SandboxExceptions: connection problems
   * name the engine address and how to point the SDK elsewhere.
   */
  <T> T call(String what, Supplier<T> call) {
    try {
      return call.get();
    } catch (DockerException e) {
      throw new SandboxException("the container engine at " + host + " refused to " + what + ": "
          + engineMessage(e), e);
    } catch (RuntimeException e) {
      if (isConnectionProblem(e)) {
        throw new SandboxConnectionException("no container engine reachable at " + host + " (could not " + what
            + ": " + rootMessage(e) + "). Start Docker or Podman's service (podman system service), "
            + "or set DOCKER_HOST, e.g. unix:///run/podman/podman.sock or tcp://host:2375", e);
      }
      throw e;
    }
  }

  void call(String what, Runnable call) {
    call(what, () -> {
      call.run();
      return null;
    });
  }

  /** The engine's own message from a JSON error body ({"message":"..."}), else the exception's. */
  static String engineMessage(DockerException e) {
    String m = e.getMessage();
    if (m == null) {
      return "HTTP " + e.getHttpStatus();
    }
    int i = m.indexOf("\"message\":\"");
    if (i >= 0) {
      int start = i + 11;
      int end = m.indexOf('"', start);
      if (end > start) {
        return m.substring(start, end);
      }
    }
    return m.strip();
  }

  private static boolean isConnectionProblem(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof IOException) {
        return true;
      }
    }
    return false;
  }

  private static String rootMessage(Throwable e) {
    Throwable t = e;
    while (t.getCause() != null) {
      t = t.getCause();
    }
    return t.getMessage() != null ? t.getMessage() : t.toString();
  }

  @Override
  public void close() {
    try {
      docker.close();
    } catch (IOException e) {
      // nothing to release that matters
    }
  }
}
