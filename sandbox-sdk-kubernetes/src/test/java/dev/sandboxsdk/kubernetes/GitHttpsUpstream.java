package dev.sandboxsdk.kubernetes;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import dev.sandboxsdk.agent.egress.CertificateAuthority;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * An HTTPS git server for egress tests: one repository ({@code /repo.git}, one commit whose
 * {@code README} holds {@link #CONTENT}) served over git's "dumb" HTTP protocol (plain files, made
 * by {@code git update-server-info}) to requests whose {@code Authorization} header is exactly
 * {@code Bearer TOKEN}; every other request gets {@code 401}. Listens on every address of this
 * host, with a certificate for {@code host} issued by a CA of its own ({@link #caPem()}).
 * Needs {@code git} on this host to build the repository.
 */
final class GitHttpsUpstream implements AutoCloseable {
  /** The README of the repository's only commit. */
  static final String CONTENT = "cloned through the egress proxy";

  private final HttpsServer server;
  private final Path dir;
  private final String caPem;
  private final String token;
  private final List<String> authorizations = new CopyOnWriteArrayList<>();

  /** A started server for {@code host} that demands {@code Bearer token}. */
  GitHttpsUpstream(String host, String token) throws IOException, InterruptedException {
    this.token = token;
    dir = Files.createTempDirectory("git-upstream-");
    Path work = dir.resolve("work");
    git(dir, "init", "-q", work.toString());
    Files.writeString(work.resolve("README"), CONTENT + "\n");
    git(work, "add", "README");
    git(work, "-c", "user.name=test", "-c", "user.email=test@example.com", "commit", "-q", "-m", "first");
    git(dir, "clone", "-q", "--bare", work.toString(), dir.resolve("repo.git").toString());
    git(dir.resolve("repo.git"), "update-server-info");
    CertificateAuthority ca = CertificateAuthority.create("git upstream test CA");
    caPem = ca.pem();
    server = HttpsServer.create(new InetSocketAddress(0), 50);
    server.setHttpsConfigurator(new HttpsConfigurator(ca.serverContext(host)));
    server.createContext("/", this::serve);
    server.start();
  }

  int port() {
    return server.getAddress().getPort();
  }

  /** The certificate of the CA that issued the server's, in PEM. */
  String caPem() {
    return caPem;
  }

  /** The {@code Authorization} header of every request so far ("" for none), in order. */
  List<String> authorizations() {
    return List.copyOf(authorizations);
  }

  private void serve(HttpExchange ex) throws IOException {
    try {
      String auth = ex.getRequestHeaders().getFirst("Authorization");
      authorizations.add(auth == null ? "" : auth);
      if (!("Bearer " + token).equals(auth)) {
        ex.getResponseHeaders().add("WWW-Authenticate", "Bearer");
        ex.sendResponseHeaders(401, -1);
        return;
      }
      Path file = dir.resolve(ex.getRequestURI().getPath().substring(1)).normalize();
      if (!file.startsWith(dir.resolve("repo.git")) || !Files.isRegularFile(file)) {
        ex.sendResponseHeaders(404, -1);
        return;
      }
      byte[] body = Files.readAllBytes(file);
      ex.sendResponseHeaders(200, body.length);
      try (OutputStream out = ex.getResponseBody()) {
        out.write(body);
      }
    } finally {
      ex.close();
    }
  }

  private static void git(Path cwd, String... args) throws IOException, InterruptedException {
    List<String> argv = new ArrayList<>(List.of("git"));
    argv.addAll(List.of(args));
    Process p = new ProcessBuilder(argv).directory(cwd.toFile()).redirectErrorStream(true).start();
    String out;
    try (InputStream in = p.getInputStream()) {
      out = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
      p.destroyForcibly();
      throw new IOException(argv + " failed: " + out);
    }
  }

  @Override
  public void close() throws IOException {
    server.stop(0);
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path f : files.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(f);
      }
    }
  }
}
