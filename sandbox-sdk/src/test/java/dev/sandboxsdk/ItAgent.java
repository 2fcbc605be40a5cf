package dev.sandboxsdk;

import dev.sandboxsdk.local.LocalSandbox;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The agent jar started by hand, the way an operator starts it
 * ({@code java -jar container-agent.jar --port 0 --bind 127.0.0.1 --workspace W --token-file F}),
 * for tests that need to know the token (it is not public API of {@link LocalSandbox}).
 */
final class ItAgent implements AutoCloseable {
  private static final String READY = "SANDBOX_AGENT_READY ";
  private static final Pattern URL = Pattern.compile("\"url\":\"([^\"]+)\"");

  private final Process process;
  private final URI url;
  private final String token;
  private final Path dir;

  private ItAgent(Process process, URI url, String token, Path dir) {
    this.process = process;
    this.url = url;
    this.token = token;
    this.dir = dir;
  }

  /** The agent jar built by container-agent (failsafe passes its path as {@code agent.jar}). */
  static Path agentJar() {
    String configured = System.getProperty("agent.jar");
    Path jar = configured != null ? Path.of(configured)
        : Path.of("..", "container-agent", "target", "container-agent.jar");
    if (!Files.isRegularFile(jar)) {
      throw new IllegalStateException("no agent jar at " + jar.toAbsolutePath()
          + " (build container-agent first, or run through failsafe)");
    }
    return jar.toAbsolutePath().normalize();
  }

  static Path currentJava() {
    return Path.of(System.getProperty("java.home"), "bin", "java");
  }

  /** Starts the agent with a random token in a new temporary directory and waits for its ready line. */
  static ItAgent start(String... extraArgs) throws Exception {
    return start(0, "it-" + UUID.randomUUID(), extraArgs);
  }

  /** Starts the agent on {@code port} (0: any free one) with this token, e.g. to restart it where it was. */
  static ItAgent start(int port, String token, String... extraArgs) throws Exception {
    Path dir = Files.createTempDirectory("it-agent-");
    Path workspace = dir.resolve("ws");
    Path tokenFile = dir.resolve("token");
    Files.writeString(tokenFile, token, StandardCharsets.US_ASCII);
    List<String> cmd = new ArrayList<>(List.of(currentJava().toString(), "-jar", agentJar().toString(),
        "--port", Integer.toString(port), "--bind", "127.0.0.1", "--workspace", workspace.toString(), "--token-file",
        tokenFile.toString(), "--exit-on-stdin-eof"));
    cmd.addAll(List.of(extraArgs));
    Process p = new ProcessBuilder(cmd).redirectError(dir.resolve("agent.err").toFile()).start();
    BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    CompletableFuture<String> ready = CompletableFuture.supplyAsync(() -> {
      try {
        for (String line; (line = out.readLine()) != null; ) {
          if (line.startsWith(READY)) {
            return line.substring(READY.length());
          }
        }
        return null;
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    });
    String json;
    try {
      json = ready.get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      p.destroyForcibly();
      throw new IllegalStateException("the agent did not get ready: " + stderr(dir), e);
    }
    if (json == null) {
      p.destroyForcibly();
      throw new IllegalStateException("the agent exited before its ready line: " + stderr(dir));
    }
    Matcher m = URL.matcher(json);
    if (!m.find()) {
      p.destroyForcibly();
      throw new IllegalStateException("no url in the ready line " + json);
    }
    return new ItAgent(p, URI.create(m.group(1)), token, dir);
  }

  URI url() {
    return url;
  }

  String token() {
    return token;
  }

  /** The agent's workspace (the default working directory of commands). */
  Path workspace() {
    return dir.resolve("ws");
  }

  long pid() {
    return process.pid();
  }

  /** A client that talks to this agent through {@code baseUrl} (e.g. a proxy in front of it). */
  Sandbox connect(URI baseUrl) {
    return Sandbox.builder().baseUrl(baseUrl).token(token).build();
  }

  private static String stderr(Path dir) {
    try {
      return Files.readString(dir.resolve("agent.err"));
    } catch (IOException e) {
      return "(no stderr: " + e + ")";
    }
  }

  /** SIGKILL, as a crash would; {@link #close()} still cleans up. */
  void kill() throws InterruptedException {
    process.destroyForcibly();
    process.waitFor(10, TimeUnit.SECONDS);
  }

  /** SIGTERM (the agent stops everything it started), SIGKILL if it hangs; deletes its directory. Idempotent. */
  @Override
  public void close() throws Exception {
    if (!Files.exists(dir)) {
      return;
    }
    process.destroy();
    if (!process.waitFor(Duration.ofSeconds(15).toMillis(), TimeUnit.MILLISECONDS)) {
      process.destroyForcibly();
      process.waitFor(5, TimeUnit.SECONDS);
    }
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }
}
