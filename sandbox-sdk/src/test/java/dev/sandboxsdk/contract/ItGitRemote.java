package dev.sandboxsdk.contract;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A test repository made with the host's git: a bare repository with one commit on {@code main}
 * (a {@code README.md} holding {@link #README}), served read-only over git's "dumb" HTTP protocol
 * (plain files, after {@code git update-server-info}) by a small HTTP server, so that a sandbox
 * whose commands cannot see the host's directories (bubblewrap, a container) clones it by URL.
 */
public final class ItGitRemote implements AutoCloseable {
  /** The README's content. */
  public static final String README = "# lifecycle test repository\n";

  private final HttpServer server;
  private final Path bare;

  private ItGitRemote(HttpServer server, Path bare) {
    this.server = server;
    this.bare = bare;
  }

  /**
   * Makes {@code <dir>/repo.git} and serves it on {@code bindAddress} (127.0.0.1 for a local sandbox,
   * 0.0.0.0 for a container, which reaches the host by another address).
   */
  public static ItGitRemote serve(Path dir, String bindAddress) throws IOException, InterruptedException {
    Path bare = dir.resolve("repo.git");
    Path seed = Files.createDirectories(dir.resolve("seed"));
    git(seed, "init", "-q", "-b", "main");
    Files.writeString(seed.resolve("README.md"), README);
    git(seed, "add", "-A");
    git(seed, "-c", "user.name=test", "-c", "user.email=test@example.com", "commit", "-qm", "initial");
    git(dir, "clone", "-q", "--bare", seed.toString(), bare.toString());
    git(bare, "update-server-info");
    HttpServer server = HttpServer.create(new InetSocketAddress(bindAddress, 0), 0);
    server.createContext("/repo.git/", exchange -> {
      try (exchange) {
        String rel = exchange.getRequestURI().getPath().substring("/repo.git/".length());
        Path file = bare.resolve(rel).normalize();
        if (!file.startsWith(bare) || !Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
          exchange.sendResponseHeaders(404, -1);
          return;
        }
        exchange.sendResponseHeaders(200, Files.size(file));
        try (InputStream in = Files.newInputStream(file); OutputStream out = exchange.getResponseBody()) {
          in.transferTo(out);
        }
      }
    });
    server.start();
    return new ItGitRemote(server, bare);
  }

  /** The repository's URL with the given host, e.g. {@code http://127.0.0.1:40123/repo.git}. */
  public String url(String host) {
    return "http://" + host + ":" + server.getAddress().getPort() + "/repo.git";
  }

  /** The bare repository on the host. */
  public Path bare() {
    return bare;
  }

  private static void git(Path dir, String... args) throws IOException, InterruptedException {
    List<String> cmd = new java.util.ArrayList<>(List.of("git"));
    cmd.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true);
    pb.environment().putAll(Map.of("GIT_CONFIG_NOSYSTEM", "1", "HOME", dir.toString()));
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new IOException("git " + String.join(" ", args) + " failed: " + out);
    }
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
