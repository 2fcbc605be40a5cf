package dev.sandboxsdk.bench.agent;

import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;

/**
 * What the agent's egress proxy adds to a command's HTTPS traffic: an HTTPS server on loopback
 * (its own self-signed certificate for {@code bench.test}), the real agent started with an egress
 * policy that allows that name (and {@code --egress-test-hosts} mapping it to loopback), and one
 * client that does the same work directly (the floor) and through the proxy's {@code CONNECT}
 * tunnel, alternating:
 *
 * <ul>
 *   <li>an HTTPS request on a new connection each time (TCP connect, {@code CONNECT} through the
 *       proxy, TLS handshake with certificate and host-name checks, {@code GET} of 1 KiB, close):
 *       p50, p90, p99; and the same to {@code secret.test}, to which a secret is bound, so the proxy
 *       intercepts it (its own certificate to the client, the secret put into the request's header,
 *       its own verified TLS to the server; the server checks that it got the value);
 *   <li>a download of {@code --mib} MiB over one HTTPS connection: MB/s, best of the runs.
 * </ul>
 *
 * JDK only; run it with
 *
 * <pre>
 *   bash benchmarks/scripts/egress.sh [--requests 500] [--warmup 100] [--mib 1024] [--runs 2] [--smoke]
 * </pre>
 *
 * Percentiles: samples sorted ascending, p-th percentile = sample at index ceil(p*n)-1. Every
 * answer is checked (status, length); a failed check ends the run with an exception.
 */
public class EgressBench {
  private static final String HOST = "bench.test";
  /** A name a secret is bound to: the proxy intercepts HTTPS to it and puts the value in. */
  private static final String SECRET_HOST = "secret.test";
  private static final String SECRET = "bench-secret-value-0123456789";
  private static final int SMALL = 1024;
  private static final char[] PASSWORD = "bench-pass".toCharArray();

  private int requests = 500;
  private int warmup = 100;
  private int mib = 1024;
  private int runs = 2;
  private String jar = "container-agent/target/container-agent.jar";

  public static void main(String[] args) throws Exception {
    // The JDK's server leaves Nagle on, and a TLS handshake's small records then wait for the
    // client's delayed ACK (~40 ms), in both paths at random: the upstream must not add that noise.
    System.setProperty("sun.net.httpserver.nodelay", "true");
    EgressBench b = new EgressBench();
    b.parse(args);
    b.run();
  }

  private void parse(String[] args) {
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--jar" -> jar = args[++i];
        case "--requests" -> requests = Integer.parseInt(args[++i]);
        case "--warmup" -> warmup = Integer.parseInt(args[++i]);
        case "--mib" -> mib = Integer.parseInt(args[++i]);
        case "--runs" -> runs = Integer.parseInt(args[++i]);
        case "--smoke" -> { // seconds-long, for CI: every path still runs and every answer is checked
          requests = 20;
          warmup = 5;
          mib = 16;
          runs = 1;
        }
        default -> throw new IllegalArgumentException("unknown option " + args[i]);
      }
    }
  }

  private void run() throws Exception {
    if (!Files.isRegularFile(Path.of(jar))) {
      throw new IllegalStateException(jar + " is missing: ./mvnw -o -q -pl container-agent package -DskipTests");
    }
    Path dir = Files.createTempDirectory("egress-bench-");
    SSLContext server = serverContext(dir);
    HttpsServer https = upstream(server);
    Path upstreamPem = dir.resolve("upstream.pem");
    Files.writeString(upstreamPem, pem(dir));
    try (Agent agent = Agent.start(jar, dir, upstreamPem)) {
      SSLContext client = clientContext(dir, agent.caPem());
      int port = https.getAddress().getPort();
      System.out.printf("EgressBench: %d requests after %d warm-up, %d MiB x %d download runs, %d CPUs, %s,"
          + " load average %s; proxy %s%n", requests, warmup, mib, runs, Runtime.getRuntime().availableProcessors(),
          System.getProperty("java.version"), Files.readString(Path.of("/proc/loadavg")).trim(), agent.proxy);
      Hop direct = new Hop(client, null, HOST, port, null);
      Hop proxied = new Hop(client, agent.proxy, HOST, port, null);
      Hop intercepted = new Hop(client, agent.proxy, SECRET_HOST, port, agent.placeholder);
      requests(direct, proxied, intercepted);
      downloads(direct, proxied);
    } finally {
      https.stop(0);
      IsolationBench.deleteTree(dir);
    }
  }

  /** New-connection HTTPS requests, the three ways alternating so all see the same machine. */
  private void requests(Hop direct, Hop proxied, Hop intercepted) throws IOException {
    long[] d = new long[requests];
    long[] p = new long[requests];
    long[] x = new long[requests];
    for (int i = -warmup; i < requests; i++) {
      long t0 = System.nanoTime();
      direct.get("/small", SMALL);
      long t1 = System.nanoTime();
      proxied.get("/small", SMALL);
      long t2 = System.nanoTime();
      intercepted.get("/secret", SMALL);
      long t3 = System.nanoTime();
      if (i >= 0) {
        d[i] = t1 - t0;
        p[i] = t2 - t1;
        x[i] = t3 - t2;
      }
    }
    Arrays.sort(d);
    Arrays.sort(p);
    Arrays.sort(x);
    System.out.println("HTTPS GET of 1 KiB on a new connection (connect, TLS handshake, request, close):");
    print("direct (floor)", d);
    print("tunnelled by proxy", p);
    print("intercepted, secret", x);
    System.out.printf("  added by the tunnel: p50 %+.2f ms, p90 %+.2f ms; by interception: p50 %+.2f ms, p90 %+.2f ms%n",
        ms(pct(p, 0.5) - pct(d, 0.5)), ms(pct(p, 0.9) - pct(d, 0.9)), ms(pct(x, 0.5) - pct(d, 0.5)),
        ms(pct(x, 0.9) - pct(d, 0.9)));
  }

  private void downloads(Hop direct, Hop proxied) throws IOException {
    long bytes = (long) mib << 20;
    double bestDirect = 0;
    double bestProxied = 0;
    long warm = Math.min(bytes, 64L << 20); // the client's TLS and copy paths compiled before the first timed run
    mbPerSecond(direct, warm);
    mbPerSecond(proxied, warm);
    for (int r = 0; r < runs; r++) {
      bestDirect = Math.max(bestDirect, mbPerSecond(direct, bytes));
      bestProxied = Math.max(bestProxied, mbPerSecond(proxied, bytes));
    }
    System.out.printf("HTTPS download of %d MiB on one connection, best of %d:%n", mib, runs);
    System.out.printf("  direct (floor)       %8.1f MB/s%n", bestDirect);
    System.out.printf("  through the tunnel   %8.1f MB/s  = %.0f%% of direct%n", bestProxied, 100 * bestProxied / bestDirect);
  }

  private static double mbPerSecond(Hop hop, long bytes) throws IOException {
    long t0 = System.nanoTime();
    hop.get("/big?bytes=" + bytes, bytes);
    return bytes / 1e6 / ((System.nanoTime() - t0) / 1e9);
  }

  private static void print(String label, long[] sorted) {
    System.out.printf("  %-20s p50 %6.2f ms  p90 %6.2f ms  p99 %6.2f ms  max %6.2f ms%n", label,
        ms(pct(sorted, 0.5)), ms(pct(sorted, 0.9)), ms(pct(sorted, 0.99)), ms(sorted[sorted.length - 1]));
  }

  static long pct(long[] sorted, double p) {
    return IsolationBench.pct(sorted, p);
  }

  static double ms(long nanos) {
    return nanos / 1e6;
  }

  // ---- the upstream

  /** A self-signed certificate for {@link #HOST} in a PKCS#12 store, made with the JDK's keytool. */
  private static SSLContext serverContext(Path dir) throws Exception {
    Path store = dir.resolve("upstream.p12");
    Process keytool = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "keytool").toString(),
        "-genkeypair", "-alias", "upstream", "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=" + HOST,
        "-ext", "san=dns:" + HOST + ",dns:" + SECRET_HOST, "-validity", "2", "-storetype", "PKCS12", "-keystore", store.toString(),
        "-storepass", new String(PASSWORD)).redirectErrorStream(true).start();
    String out = new String(keytool.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!keytool.waitFor(60, TimeUnit.SECONDS) || keytool.exitValue() != 0) {
      throw new IllegalStateException("keytool failed: " + out);
    }
    KeyStore keys = KeyStore.getInstance("PKCS12");
    try (InputStream in = Files.newInputStream(store)) {
      keys.load(in, PASSWORD);
    }
    KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
    kmf.init(keys, PASSWORD);
    SSLContext ctx = SSLContext.getInstance("TLS");
    ctx.init(kmf.getKeyManagers(), null, null);
    return ctx;
  }

  /** The upstream's certificate in PEM, for the agent's test trust. */
  private static String pem(Path dir) throws Exception {
    KeyStore keys = KeyStore.getInstance("PKCS12");
    try (InputStream in = Files.newInputStream(dir.resolve("upstream.p12"))) {
      keys.load(in, PASSWORD);
    }
    return "-----BEGIN CERTIFICATE-----\n" + java.util.Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII))
        .encodeToString(keys.getCertificate("upstream").getEncoded()) + "\n-----END CERTIFICATE-----\n";
  }

  /**
   * The client trusts the upstream's certificate and the agent's CA (what a command's bundle adds),
   * and checks the host name as browsers do.
   */
  private static SSLContext clientContext(Path dir, Path agentCa) throws Exception {
    KeyStore keys = KeyStore.getInstance("PKCS12");
    try (InputStream in = Files.newInputStream(dir.resolve("upstream.p12"))) {
      keys.load(in, PASSWORD);
    }
    KeyStore trust = KeyStore.getInstance("PKCS12");
    trust.load(null, null);
    trust.setCertificateEntry("upstream", keys.getCertificate("upstream"));
    try (InputStream in = Files.newInputStream(agentCa)) {
      trust.setCertificateEntry("agent-ca", java.security.cert.CertificateFactory.getInstance("X.509")
          .generateCertificate(in));
    }
    TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    tmf.init(trust);
    SSLContext ctx = SSLContext.getInstance("TLS");
    ctx.init(null, tmf.getTrustManagers(), null);
    return ctx;
  }

  /** {@code /small}: 1 KiB; {@code /big?bytes=N}: N bytes, streamed. */
  private static HttpsServer upstream(SSLContext ctx) throws IOException {
    HttpsServer server = HttpsServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 128);
    server.setHttpsConfigurator(new HttpsConfigurator(ctx));
    byte[] small = new byte[SMALL];
    server.createContext("/small", ex -> {
      ex.sendResponseHeaders(200, small.length);
      try (OutputStream out = ex.getResponseBody()) {
        out.write(small);
      }
    });
    server.createContext("/secret", ex -> {
      boolean got = SECRET.equals(ex.getRequestHeaders().getFirst("X-Api-Key"));
      ex.sendResponseHeaders(got ? 200 : 401, got ? small.length : -1);
      try (OutputStream out = ex.getResponseBody()) {
        if (got) {
          out.write(small);
        }
      }
    });
    server.createContext("/big", ex -> {
      long n = Long.parseLong(ex.getRequestURI().getQuery().substring("bytes=".length()));
      ex.sendResponseHeaders(200, n);
      byte[] chunk = new byte[64 * 1024];
      try (OutputStream out = ex.getResponseBody()) {
        for (long left = n; left > 0; left -= chunk.length) {
          out.write(chunk, 0, (int) Math.min(chunk.length, left));
        }
      }
    });
    server.setExecutor(java.util.concurrent.Executors.newFixedThreadPool(4, r -> {
      Thread t = new Thread(r, "bench-upstream");
      t.setDaemon(true);
      return t;
    }));
    server.start();
    return server;
  }

  // ---- the client

  /**
   * One way to the upstream at {@code host}: direct, or through the proxy at {@code proxy} ({@code
   * host:port}); with a {@code placeholder}, sent as the {@code X-Api-Key} header.
   */
  private record Hop(SSLContext tls, String proxy, String host, int port, String placeholder) {
    /** One GET on a new connection; checks the status and reads exactly {@code length} bytes of body. */
    void get(String path, long length) throws IOException {
      Socket raw = new Socket();
      raw.setTcpNoDelay(true);
      if (proxy == null) {
        raw.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 10_000);
      } else {
        String[] hp = proxy.split(":");
        raw.connect(new InetSocketAddress(hp[0], Integer.parseInt(hp[1])), 10_000);
        raw.getOutputStream().write(("CONNECT " + host + ":" + port + " HTTP/1.1\r\nHost: " + host + ":" + port
            + "\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
        String status = head(raw.getInputStream());
        if (!status.startsWith("HTTP/1.1 200")) {
          raw.close();
          throw new IOException("the proxy refused the tunnel: " + status);
        }
      }
      try (SSLSocket s = (SSLSocket) tls.getSocketFactory().createSocket(raw, host, port, true)) {
        SSLParameters params = s.getSSLParameters();
        params.setEndpointIdentificationAlgorithm("HTTPS");
        s.setSSLParameters(params);
        s.getOutputStream().write(("GET " + path + " HTTP/1.1\r\nHost: " + host + ":" + port
            + (placeholder == null ? "" : "\r\nX-Api-Key: " + placeholder)
            + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
        s.getOutputStream().flush();
        InputStream in = s.getInputStream();
        String head = head(in);
        if (!head.startsWith("HTTP/1.1 200")) {
          throw new IOException("upstream answered " + head);
        }
        byte[] buf = new byte[64 * 1024];
        long got = 0;
        for (int n; (n = in.read(buf)) > 0; ) {
          got += n;
        }
        if (got != length) {
          throw new IOException("expected " + length + " bytes of body, got " + got);
        }
      }
    }

    /** Reads a response head up to its blank line (byte by byte: it is short). */
    private static String head(InputStream in) throws IOException {
      StringBuilder sb = new StringBuilder();
      while (sb.length() < 4 || !sb.substring(sb.length() - 4).equals("\r\n\r\n")) {
        int c = in.read();
        if (c < 0) {
          throw new IOException("connection closed in a response head: " + sb);
        }
        sb.append((char) c);
      }
      return sb.toString();
    }
  }

  // ---- the agent

  /**
   * The real agent with an egress policy that allows both names (mapped to loopback), a secret
   * bound to {@link #SECRET_HOST}'s {@code X-Api-Key} header, and the upstream's certificate as a
   * test trust anchor of its own TLS; {@code placeholder} and {@code caPem} are what a command sees.
   */
  private record Agent(StdinAgent process, String proxy, String placeholder, Path caPem)
      implements AutoCloseable {
    static Agent start(String jar, Path dir, Path upstreamPem) throws Exception {
      Path ws = Files.createDirectories(dir.resolve("workspace"));
      Path policy = Files.writeString(dir.resolve("policy.json"), "{\"mode\":\"allow-list\",\"rules\":[\"allow "
          + HOST + "\",\"allow " + SECRET_HOST + "\",\"allow 127.0.0.1/32\"]}");
      Path secrets = Files.writeString(dir.resolve("secrets.json"), "[{\"name\":\"API_KEY\",\"value\":\"" + SECRET
          + "\",\"hosts\":[\"" + SECRET_HOST + "\"],\"header\":\"X-Api-Key\"}]");
      StdinAgent p = StdinAgent.start(jar, ws, "--isolation", "none", "--egress-policy", policy.toString(),
          "--egress-secrets", secrets.toString(), "--egress-test-trust", upstreamPem.toString(),
          "--egress-test-hosts", HOST + "=127.0.0.1," + SECRET_HOST + "=127.0.0.1");
      try {
        String proxy = find(call(p.url(), p.token(), "/api/egress/policy", null), "\"proxyUrl\"\\s*:\\s*\"http://([^\"]+)\"");
        String seen = find(call(p.url(), p.token(), "/api/execute",
            "{\"command\":\"printf '%s %s' \\\"$API_KEY\\\" \\\"$SSL_CERT_FILE\\\"\"}"), "\"stdout\"\\s*:\\s*\"([^\"]+)\"");
        String[] parts = seen.split(" ", 2);
        return new Agent(p, proxy, parts[0], Path.of(parts[1]).resolveSibling("egress-ca.pem"));
      } catch (IOException | RuntimeException e) {
        p.close();
        throw e;
      }
    }

    private static String call(String base, String token, String path, String json) throws Exception {
      HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).header("Authorization", "Bearer " + token);
      if (json != null) {
        b.header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(json));
      }
      HttpResponse<String> r = HttpClient.newHttpClient().send(b.build(), HttpResponse.BodyHandlers.ofString());
      if (r.statusCode() != 200) {
        throw new IllegalStateException(path + ": " + r.statusCode() + " " + r.body());
      }
      return r.body();
    }

    private static String find(String body, String regex) {
      Matcher m = Pattern.compile(regex).matcher(body);
      if (!m.find()) {
        throw new IllegalStateException("unexpected answer: " + body);
      }
      return m.group(1);
    }

    @Override
    public void close() {
      process.close();
    }
  }
}
