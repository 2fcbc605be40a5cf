package dev.sandboxsdk.agent.egress;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The agent's running egress: its one {@link EgressProxy} and the URL at which commands reach it
 * ({@code http://127.0.0.1:PORT}, on the host's loopback, or inside the sandbox's own network
 * namespace through the relay). Closing it closes the proxy.
 */
public final class Egress implements AutoCloseable {
  /** What {@code NO_PROXY} lists: the command's own loopback is never sent through the proxy. */
  public static final String NO_PROXY = "localhost,127.0.0.1,::1";

  /** The variables common TLS clients read for a CA bundle: all get {@link #BUNDLE_FILE}. */
  public static final List<String> CA_VARIABLES = List.of("SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS",
      "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO");
  /** The system's CAs and the proxy's, in the CA directory. */
  public static final String BUNDLE_FILE = "ca-bundle.pem";
  /** The proxy's CA alone, in the CA directory. */
  public static final String CA_FILE = "egress-ca.pem";
  /** Where distributions keep their CA bundle, the first that exists is used. */
  static final List<String> SYSTEM_BUNDLES = List.of("/etc/ssl/certs/ca-certificates.crt",
      "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/ca-bundle.pem", "/etc/ssl/cert.pem");

  private final EgressProxy proxy;
  private final String proxyUrl;
  private final Path caDir;

  public Egress(EgressProxy proxy, String proxyUrl) {
    this(proxy, proxyUrl, null);
  }

  /** {@code caDir}: the directory of {@link #writeCaFiles}, deleted on close; null without secrets. */
  public Egress(EgressProxy proxy, String proxyUrl, Path caDir) {
    this.proxy = Objects.requireNonNull(proxy, "proxy");
    this.proxyUrl = Objects.requireNonNull(proxyUrl, "proxyUrl");
    this.caDir = caDir;
  }

  public EgressProxy proxy() {
    return proxy;
  }

  /** The proxy's URL as commands see it. */
  public String proxyUrl() {
    return proxyUrl;
  }

  /**
   * The variables every command gets, upper and lower case, as curl, wget, pip, npm, git and the
   * JDK's and Python's HTTP clients read them.
   */
  public Map<String, String> environment() {
    Map<String, String> env = new LinkedHashMap<>();
    for (String name : List.of("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")) {
      env.put(name, proxyUrl);
      env.put(name.toLowerCase(java.util.Locale.ROOT), proxyUrl);
    }
    env.put("NO_PROXY", NO_PROXY);
    env.put("no_proxy", NO_PROXY);
    if (caDir != null) {
      for (String name : CA_VARIABLES) {
        env.put(name, caDir.resolve(BUNDLE_FILE).toString());
      }
    }
    env.putAll(proxy.secrets().placeholders());
    return env;
  }

  /**
   * Writes the CA's certificate (never its key) where commands can read it: a new directory
   * (0755) with {@value #CA_FILE} and {@value #BUNDLE_FILE}, the system's bundle (the first of
   * {@link #SYSTEM_BUNDLES}, else the JDK's trusted CAs) followed by the CA (0644 each).
   */
  public static Path writeCaFiles(CertificateAuthority ca) throws IOException {
    Path dir = Files.createTempDirectory("sandbox-egress-ca-", PosixFilePermissions.asFileAttribute(
        PosixFilePermissions.fromString("rwxr-xr-x")));
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x")); // past the umask
    StringBuilder bundle = new StringBuilder(systemBundle());
    if (bundle.length() > 0 && bundle.charAt(bundle.length() - 1) != '\n') {
      bundle.append('\n');
    }
    bundle.append(ca.pem());
    for (String[] file : new String[][] {{CA_FILE, ca.pem()}, {BUNDLE_FILE, bundle.toString()}}) {
      Path p = dir.resolve(file[0]);
      Files.writeString(p, file[1], StandardCharsets.US_ASCII);
      Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rw-r--r--"));
    }
    return dir;
  }

  private static String systemBundle() throws IOException {
    for (String candidate : SYSTEM_BUNDLES) {
      Path p = Path.of(candidate);
      if (Files.isReadable(p)) {
        return Files.readString(p, StandardCharsets.ISO_8859_1);
      }
    }
    StringBuilder out = new StringBuilder();
    try {
      javax.net.ssl.TrustManagerFactory tmf = javax.net.ssl.TrustManagerFactory.getInstance(
          javax.net.ssl.TrustManagerFactory.getDefaultAlgorithm());
      tmf.init((java.security.KeyStore) null);
      for (javax.net.ssl.TrustManager tm : tmf.getTrustManagers()) {
        if (tm instanceof javax.net.ssl.X509TrustManager x) {
          for (java.security.cert.X509Certificate c : x.getAcceptedIssuers()) {
            out.append(CertificateAuthority.pem(c));
          }
        }
      }
    } catch (java.security.GeneralSecurityException e) {
      throw new IOException("no system CA bundle and no JDK trust store: " + e.getMessage(), e);
    }
    return out.toString();
  }

  /** Deletes the directory of {@link #writeCaFiles} (null: nothing). */
  public static void deleteCaFiles(Path dir) {
    if (dir == null) {
      return;
    }
    try {
      Files.deleteIfExists(dir.resolve(CA_FILE));
      Files.deleteIfExists(dir.resolve(BUNDLE_FILE));
      Files.deleteIfExists(dir);
    } catch (IOException e) {
      // a temporary directory: left for the system's cleaner
    }
  }

  /**
   * The JDK's resolver, except for the names of {@code testHosts} (name to IP literal), which
   * resolve to their address: a test hook ({@code --egress-test-hosts}) so tests reach loopback
   * servers by name.
   */
  public static EgressResolver resolver(Map<String, String> testHosts) {
    if (testHosts.isEmpty()) {
      return EgressResolver.system();
    }
    Map<String, InetAddress> mapped = new LinkedHashMap<>();
    testHosts.forEach((name, address) -> mapped.put(HostNames.parse(name).name(), literal(address)));
    EgressResolver system = EgressResolver.system();
    return host -> mapped.containsKey(host) ? List.of(mapped.get(host)) : system.resolve(host);
  }

  /**
   * The test hosts of {@code --egress-test-hosts name=address,...}.
   *
   * @throws IllegalArgumentException naming the entry that is not {@code name=IP}
   */
  public static Map<String, String> testHosts(String value) {
    Map<String, String> out = new LinkedHashMap<>();
    for (String entry : value.split(",", -1)) {
      int eq = entry.indexOf('=');
      if (eq <= 0) {
        throw new IllegalArgumentException("expected name=address, got '" + entry + "'");
      }
      String name = entry.substring(0, eq).trim();
      String address = entry.substring(eq + 1).trim();
      HostNames.Host host = HostNames.parse(name);
      if (host.isLiteral()) {
        throw new IllegalArgumentException("'" + name + "' is an address, not a name");
      }
      literal(address);
      out.put(host.name(), address);
    }
    return out;
  }

  private static InetAddress literal(String address) {
    HostNames.Host host = HostNames.parse(address);
    if (!host.isLiteral()) {
      throw new IllegalArgumentException("'" + address + "' is not an IP address");
    }
    return host.literal();
  }

  @Override
  public void close() {
    proxy.close();
    deleteCaFiles(caDir);
  }
}
