package dev.sandboxsdk.contract;

import com.sun.net.httpserver.HttpServer;
import dev.sandboxsdk.testkit.TestRepositories;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.Map;

/**
 * A test repository made with the host's git ({@link TestRepositories}): a bare repository with one commit on {@code main}
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
    TestRepositories.createBare(bare, Map.of("README.md", README));
    TestRepositories.git(bare, "update-server-info");
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

  @Override
  public void close() {
    server.stop(0);
  }
}
