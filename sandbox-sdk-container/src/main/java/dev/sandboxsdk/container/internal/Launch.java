package dev.sandboxsdk.container.internal;

import com.github.dockerjava.api.command.CreateContainerCmd;
import com.github.dockerjava.api.command.InspectContainerResponse;
import com.github.dockerjava.api.exception.ConflictException;
import com.github.dockerjava.api.exception.DockerException;
import com.github.dockerjava.api.exception.NotFoundException;
import com.github.dockerjava.api.model.Capability;
import com.github.dockerjava.api.model.ExposedPort;
import com.github.dockerjava.api.model.HostConfig;
import com.github.dockerjava.api.model.PortBinding;
import com.github.dockerjava.api.model.Ports;
import com.github.dockerjava.api.model.Ulimit;
import com.github.dockerjava.api.model.Volume;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxSpec;
import dev.sandboxsdk.spi.AgentImage;
import dev.sandboxsdk.SandboxTimeoutException;
import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Creates one sandbox container with the default security policy and waits until its agent
 * answers. Every default is documented in docs/containers.md; change one there too.
 */
public final class Launch {
  /** The agent's port inside the container. */
  public static final int AGENT_PORT = 3000;
  /** Where commands work; an anonymous volume, removed with the container. */
  public static final String WORKSPACE = "/workspace";
  /** Where the agent keeps checkpoints: outside the workspace, root's only (docs/containers.md). */
  public static final String CHECKPOINTS = "/var/lib/sandbox-agent/checkpoints";
  /** That user's home directory in the image. */
  public static final String HOME = "/home/sandbox";
  /** The unprivileged user of the image that runs every command. */
  public static final String COMMAND_USER = "sandbox";
  /** The variable that carries the token to the agent; only root (the agent) can read it in /proc. */
  public static final String TOKEN_ENV = "SANDBOX_AGENT_TOKEN";

  private static final SecureRandom RANDOM = new SecureRandom();
  private static final int LOG_LINES = 20;

  private Launch() {}

  /** What a started sandbox container is. */
  public record Started(String id, String name, URI endpoint, String token) {}

  /** The container name of the named sandbox {@code name}. */
  public static String containerName(String name) {
    return "sandbox-" + name;
  }

  /** A fresh token: 32 random bytes, URL-safe base64. */
  static String newToken() {
    byte[] b = new byte[32];
    RANDOM.nextBytes(b);
    return Base64.getUrlEncoder().withoutPadding().encodeToString(b);
  }

  /**
   * Creates and starts a container for {@code spec}, waits for its agent, and returns how to reach
   * it. On any failure the container is removed again and the exception says why (with the
   * container's last log lines when it died).
   */
  public static Started start(Engine engine, SandboxSpec spec, String publishAddress, String connectHost) {
    String token = newToken();
    String name = spec.name() != null ? containerName(spec.name()) : "sandbox-" + HexFormat.of().formatHex(randomBytes(6));
    String id = create(engine, spec, name, token, publishAddress);
    try {
      try {
        engine.start(id);
      } catch (SandboxException e) {
        String m = String.valueOf(e.getMessage());
        if (m.contains("address already in use") || m.contains("port is already allocated")) {
          throw new SandboxException("could not publish the agent's port on " + publishAddress
              + ": the port is taken (" + m + ")", e);
        }
        throw e;
      }
      URI endpoint = awaitReady(engine, id, spec.startupTimeout(), connectHost);
      return new Started(id, name, endpoint, token);
    } catch (RuntimeException e) {
      engine.remove(id);
      throw e;
    }
  }

  /**
   * Starts a stopped sandbox container again and waits for its agent. The token stays the one in
   * its environment; the published port may change.
   */
  public static URI restart(Engine engine, String id, Duration timeout, String connectHost) {
    engine.start(id);
    return awaitReady(engine, id, timeout, connectHost);
  }

  private static byte[] randomBytes(int n) {
    byte[] b = new byte[n];
    RANDOM.nextBytes(b);
    return b;
  }

  private static String create(Engine engine, SandboxSpec spec, String name, String token, String publishAddress) {
    List<Capability> caps = new ArrayList<>(List.of(Capability.SETUID, Capability.SETGID, Capability.SETPCAP, Capability.KILL));
    if (AgentImage.needsNetAdmin(spec)) {
      // Only the entry script uses it, to install the egress firewall; it drops it before the agent starts.
      caps.add(Capability.NET_ADMIN);
    }
    long tmpBytes = Math.max(16L << 20, spec.memoryBytes() / 4);
    HostConfig host = HostConfig.newHostConfig()
        .withCapDrop(Capability.ALL)
        .withCapAdd(caps.toArray(new Capability[0]))
        .withSecurityOpts(List.of("no-new-privileges"))
        .withReadonlyRootfs(true)
        .withTmpFs(Map.of("/tmp", "rw,nosuid,nodev,size=" + tmpBytes + ",mode=1777"))
        .withMemory(spec.memoryBytes())
        .withMemorySwap(spec.memoryBytes())
        .withNanoCPUs(Math.round(spec.cpus() * 1e9))
        .withPidsLimit((long) spec.pidsLimit())
        // Fixed, so an engine default above the host's hard limits (podman: nofile 1048576) cannot fail the start.
        .withUlimits(List.of(new Ulimit("nofile", 8192L, 8192L), new Ulimit("nproc", 32768L, 32768L)))
        .withPortBindings(new PortBinding(Ports.Binding.bindIp(publishAddress), ExposedPort.tcp(AGENT_PORT)))
        .withInit(false);
    List<String> env = new ArrayList<>();
    env.add(TOKEN_ENV + "=" + token);
    AgentImage.networkEnvironment(spec).forEach((k, v) -> env.add(k + "=" + v));
    String secrets = AgentImage.egressSecretsJson(spec);
    if (secrets != null) {
      // Root's alone in the container (the entry script hands it to the agent in a 0600 file), but
      // like the token readable by whoever may inspect containers on the engine.
      env.add(AgentImage.EGRESS_SECRETS_ENV + "=" + secrets);
    }
    spec.env().forEach((k, v) -> env.add(k + "=" + v));
    List<String> cmd = new ArrayList<>(List.of("--port", String.valueOf(AGENT_PORT), "--bind", "0.0.0.0",
        "--workspace", WORKSPACE, "--command-user", COMMAND_USER, "--checkpoint-dir", CHECKPOINTS));
    if (spec.idleTimeout() != null) {
      cmd.add("--idle-timeout-ms=" + spec.idleTimeout().toMillis());
    }
    if (!spec.env().isEmpty()) {
      cmd.add("--inherit-env=" + String.join(",", spec.env().keySet()));
    }
    cmd.addAll(spec.agentArguments());
    Map<String, String> labels = new LinkedHashMap<>();
    labels.put(Engine.SANDBOX_LABEL, "1");
    labels.put(Engine.CREATED_LABEL, String.valueOf(System.currentTimeMillis()));
    if (spec.name() != null) {
      labels.put(Engine.NAME_LABEL, spec.name());
    }
    spec.labels().forEach((k, v) -> labels.put(Engine.USER_LABEL_PREFIX + k, v));
    return engine.call("create a container from image " + spec.image(), () -> {
      try (CreateContainerCmd create = engine.docker().createContainerCmd(spec.image())) {
        return create.withName(name)
            .withLabels(labels)
            .withEnv(env)
            .withCmd(cmd)
            .withExposedPorts(ExposedPort.tcp(AGENT_PORT))
            // Anonymous volumes, removed with the container; the engine copies the image's
            // ownership (the sandbox user) into each. HOME too: npm, pip and git write there,
            // and the root file system is read-only.
            // The checkpoints' volume: only root (the agent) may enter it (the image makes it 0700),
            // and it lives as long as the container, like the workspace.
            .withVolumes(new Volume(WORKSPACE), new Volume(HOME), new Volume(CHECKPOINTS))
            .withStopTimeout(10)
            .withHostConfig(host)
            .exec()
            .getId();
      } catch (NotFoundException e) {
        // The engine answers the create itself with 404 when the image is missing: no lookup first.
        throw new SandboxException("image '" + spec.image() + "' not found on the container engine at " + engine.host()
            + ": build it (docker build -t " + spec.image() + " container-agent, see docs/containers.md, \"Container image\")"
            + " or pull it first", e);
      } catch (DockerException e) {
        // Docker: 409; Podman 4: 500 "that name is already in use".
        if (spec.name() == null || !(e instanceof ConflictException || String.valueOf(e.getMessage()).contains("already in use"))) {
          throw e;
        }
        throw new SandboxException("a container sandbox named '" + spec.name() + "' exists already (container " + name
            + "): ContainerProvider.get(\"" + spec.name() + "\") returns it, destroy() removes it", e);
      }
    });
  }

  /**
   * Polls the agent's {@code /api/ping} on the published port until it answers, checking between
   * tries that the container still runs. Ready is the agent's own word (ping answers only once
   * it serves), not the engine's "running".
   */
  static URI awaitReady(Engine engine, String id, Duration timeout, String connectHost) {
    long deadline = System.nanoTime() + timeout.toNanos();
    URI endpoint = null;
    int tries = 0;
    while (true) {
      if (endpoint == null || tries % 5 == 0) {
        InspectContainerResponse c = engine.inspect(id).orElseThrow(() ->
            new SandboxException("the sandbox container " + id + " disappeared during start-up"
                + " (removed by someone else, or the engine removed it)", null));
        if (c.getState() == null || !Boolean.TRUE.equals(c.getState().getRunning())) {
          Long code = c.getState() == null ? null : c.getState().getExitCodeLong();
          throw new SandboxException("the sandbox container exited during start-up (status " + code
              + (c.getState() != null && Boolean.TRUE.equals(c.getState().getOOMKilled()) ? ", killed for memory" : "")
              + "); its last output:\n" + engine.lastLogLines(id, LOG_LINES), null);
        }
        int port = Engine.hostPort(c, AGENT_PORT);
        if (port > 0) {
          endpoint = endpoint(connectHost, port);
        }
      }
      if (endpoint != null && answersPing(endpoint)) {
        return endpoint;
      }
      if (System.nanoTime() > deadline) {
        throw new SandboxTimeoutException("the sandbox container's agent did not answer within " + timeout
            + (endpoint == null ? " (the engine published no port)" : " at " + endpoint)
            + "; its last output:\n" + engine.lastLogLines(id, LOG_LINES), null);
      }
      tries++;
      try {
        Thread.sleep(tries < 40 ? 25 : 100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new SandboxException("interrupted while waiting for the sandbox container to start", e);
      }
    }
  }

  /** The agent's address at a published port; an IPv6 host gets its brackets. */
  public static URI endpoint(String host, int port) {
    String literal = host.indexOf(':') >= 0 && !host.startsWith("[") ? "[" + host + "]" : host;
    return URI.create("http://" + literal + ":" + port);
  }

  /** One GET /api/ping with short timeouts; true on a 200 whose body says healthy. */
  static boolean answersPing(URI endpoint) {
    try {
      HttpURLConnection c = (HttpURLConnection) endpoint.resolve("/api/ping").toURL().openConnection();
      c.setConnectTimeout(500);
      c.setReadTimeout(1000);
      try {
        if (c.getResponseCode() != 200) {
          return false;
        }
        try (InputStream in = c.getInputStream()) {
          return new String(in.readNBytes(4096), StandardCharsets.UTF_8).contains("healthy");
        }
      } finally {
        c.disconnect();
      }
    } catch (IOException e) {
      return false;
    }
  }
}
