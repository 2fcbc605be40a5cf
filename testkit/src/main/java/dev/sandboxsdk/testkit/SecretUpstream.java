package dev.sandboxsdk.testkit;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;

/**
 * The HTTPS destination of the egress secrets tests: a server with a {@link TestCertificate} of its
 * own for a few test names, on every address of the host (so a container reaches it at its
 * network's gateway), that records every request it receives ({@link #received()}: what the proxy
 * really sent, the credential included) and answers it with {@link HelloUpstream#BODY}, except
 * under a repository added by {@link #addRepository}: there a private git repository is served
 * over git's smart HTTP ({@code git http-backend}, the CGI program git ships) to requests that
 * carry its token, {@code 401} to the rest.
 *
 * <p>Serving repositories needs {@code git} on the host; the rest needs the JDK only.
 */
public final class SecretUpstream implements AutoCloseable {
  private final TestCertificate certificate;
  private final HttpsServer server;
  private final ExecutorService executor = Executors.newCachedThreadPool(r -> {
    Thread t = new Thread(r, "secret-upstream");
    t.setDaemon(true);
    return t;
  });
  private final List<Received> received = new CopyOnWriteArrayList<>();
  private final Path repositories;

  /** A request as it arrived: method, path and query, and its headers (names in lower case). */
  public record Received(String method, String target, Map<String, List<String>> headers) {
    public Received {
      headers = Map.copyOf(headers);
    }

    /** The first value of header {@code name} (any case), or null. */
    public String header(String name) {
      List<String> values = headers.get(name.toLowerCase(Locale.ROOT));
      return values == null || values.isEmpty() ? null : values.get(0);
    }
  }

  private SecretUpstream(String... names) throws IOException {
    this.certificate = TestCertificate.forNames(names);
    this.repositories = Files.createTempDirectory("secret-upstream-git-");
    this.server = HttpsServer.create(new InetSocketAddress(0), 50);
    server.setHttpsConfigurator(new HttpsConfigurator(certificate.serverContext()));
    server.createContext("/", ex -> {
      record(ex);
      HelloUpstream.answer(ex);
    });
    server.setExecutor(executor);
    server.start();
  }

  /** A started upstream with a certificate for {@code names} (DNS names the tests map to its address). */
  public static SecretUpstream start(String... names) {
    try {
      return new SecretUpstream(names);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The port it listens on, on every address. */
  public int port() {
    return server.getAddress().getPort();
  }

  /** Its certificate in PEM: what a client (or the agent's {@code --egress-test-trust}) must trust. */
  public String pem() {
    return certificate.pem();
  }

  /** A client context that trusts this upstream alone. */
  public SSLContext clientContext() {
    return certificate.clientContext();
  }

  /** Every request received so far, in order. */
  public List<Received> received() {
    return List.copyOf(received);
  }

  /** The last request received; fails if there was none. */
  public Received last() {
    List<Received> all = received();
    if (all.isEmpty()) {
      throw new IllegalStateException("the upstream received no request");
    }
    return all.get(all.size() - 1);
  }

  /**
   * Serves a new bare repository at {@code /NAME.git} holding one commit on {@code main} with
   * {@code files} (path to text): a request must carry {@code token} as {@code Authorization:
   * Bearer TOKEN} or as the password of Basic credentials (what {@code https://user:TOKEN@host/}
   * sends), else it is answered {@code 401}.
   *
   * @throws IllegalStateException if git fails (not installed, say)
   */
  public void addRepository(String name, String token, Map<String, String> files) {
    if (!name.matches("[A-Za-z0-9_-]+")) {
      throw new IllegalArgumentException("invalid repository name: " + name);
    }
    try {
      TestRepositories.createBare(repositories.resolve(name + ".git"), files);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    server.createContext("/" + name + ".git/", ex -> {
      record(ex);
      if (!authorized(ex.getRequestHeaders().getFirst("Authorization"), token)) {
        ex.getResponseHeaders().set("WWW-Authenticate", "Basic realm=\"" + name + "\"");
        ex.sendResponseHeaders(401, -1);
        ex.close();
        return;
      }
      GitRepositories.serve(ex, repositories, executor);
    });
  }

  private static boolean authorized(String authorization, String token) {
    if (authorization == null) {
      return false;
    }
    if (authorization.equals("Bearer " + token)) {
      return true;
    }
    if (authorization.startsWith("Basic ")) {
      try {
        String pair = new String(Base64.getDecoder().decode(authorization.substring(6).trim()), StandardCharsets.UTF_8);
        return pair.endsWith(":" + token);
      } catch (IllegalArgumentException e) {
        return false;
      }
    }
    return false;
  }

  private void record(HttpExchange ex) {
    Map<String, List<String>> headers = new TreeMap<>();
    ex.getRequestHeaders().forEach((k, v) -> headers.put(k.toLowerCase(Locale.ROOT), List.copyOf(v)));
    received.add(new Received(ex.getRequestMethod(), ex.getRequestURI().toString(), headers));
  }

  /** Stops the server and deletes its repositories. */
  @Override
  public void close() {
    server.stop(0);
    executor.shutdownNow();
    try {
      executor.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    TempFiles.deleteTree(repositories);
  }

  /** Serving repositories with {@code git http-backend}. */
  static final class GitRepositories {
    private GitRepositories() {
    }

    /**
     * Runs {@code git http-backend} for the exchange (RFC 3875: the request in the environment and
     * its body on stdin; headers, a blank line and the body on stdout) and relays its answer.
     */
    static void serve(HttpExchange ex, Path root, ExecutorService executor) throws IOException {
      ProcessBuilder pb = new ProcessBuilder("git", "http-backend")
          .redirectError(ProcessBuilder.Redirect.INHERIT);
      Map<String, String> env = pb.environment();
      TestRepositories.isolate(env);
      env.put("GIT_PROJECT_ROOT", root.toString());
      env.put("GIT_HTTP_EXPORT_ALL", "1");
      env.put("REQUEST_METHOD", ex.getRequestMethod());
      env.put("PATH_INFO", ex.getRequestURI().getRawPath());
      env.put("QUERY_STRING", ex.getRequestURI().getRawQuery() == null ? "" : ex.getRequestURI().getRawQuery());
      env.put("REMOTE_ADDR", ex.getRemoteAddress().getAddress().getHostAddress());
      env.put("REMOTE_USER", "test");
      putHeader(env, "CONTENT_TYPE", ex.getRequestHeaders().getFirst("Content-Type"));
      putHeader(env, "HTTP_CONTENT_ENCODING", ex.getRequestHeaders().getFirst("Content-Encoding"));
      putHeader(env, "HTTP_GIT_PROTOCOL", ex.getRequestHeaders().getFirst("Git-Protocol"));
      Process p = pb.start();
      try (ex) {
        executor.execute(() -> {
          try (OutputStream in = p.getOutputStream(); InputStream body = ex.getRequestBody()) {
            body.transferTo(in);
          } catch (IOException e) {
            p.destroy(); // the request broke off
          }
        });
        InputStream out = p.getInputStream();
        int status = 200;
        for (String line = readLine(out); line != null && !line.isEmpty(); line = readLine(out)) {
          int colon = line.indexOf(':');
          if (colon <= 0) {
            continue;
          }
          String name = line.substring(0, colon).trim();
          String value = line.substring(colon + 1).trim();
          if (name.equalsIgnoreCase("Status")) {
            status = Integer.parseInt(value.split(" ", 2)[0]);
          } else {
            ex.getResponseHeaders().add(name, value);
          }
        }
        ex.sendResponseHeaders(status, 0); // chunked, as a git host answers
        out.transferTo(ex.getResponseBody());
      } finally {
        p.destroy();
      }
    }

    private static void putHeader(Map<String, String> env, String name, String value) {
      if (value != null) {
        env.put(name, value);
      }
    }

    /** A CGI header line without its line end, or null at the end of the stream. */
    private static String readLine(InputStream in) throws IOException {
      ByteArrayOutputStream line = new ByteArrayOutputStream();
      int c;
      while ((c = in.read()) >= 0 && c != '\n') {
        line.write(c);
      }
      if (c < 0 && line.size() == 0) {
        return null;
      }
      String s = line.toString(StandardCharsets.ISO_8859_1);
      return s.endsWith("\r") ? s.substring(0, s.length() - 1) : s;
    }
  }
}
