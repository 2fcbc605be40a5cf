package dev.sandboxsdk;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * A secret that never enters the sandbox: commands get the variable {@code name} holding a
 * placeholder ({@code sandbox-secret-} and 32 random hex digits, new at every agent start), and
 * the sandbox's egress proxy puts the real value in for the placeholder only in HTTPS requests to
 * {@code hosts}, and only in {@code header} if one is given (docs/protocol/egress.md, "Secrets").
 * A sandbox gets secrets with {@link SandboxSpec.Builder#egressSecret(EgressSecret)} or
 * {@code LocalSandbox.Builder.egressSecret}, always together with an {@link EgressPolicy}.
 *
 * <pre>{@code
 * EgressSecret key = EgressSecret.of("ANTHROPIC_API_KEY", System.getenv("ANTHROPIC_API_KEY"),
 *     "api.anthropic.com").withHeader("x-api-key");
 * }</pre>
 *
 * <p>It is checked as the agent checks its secrets file, so a secret this record accepts never
 * stops an agent at start. No message of an exception this class throws, and not
 * {@link #toString()}, shows the value. Immutable and thread-safe.
 *
 * @param name the variable commands find the placeholder in: {@code [A-Za-z_][A-Za-z0-9_]*}, at
 *     most 128 characters, not one the agent sets itself ({@code SANDBOX_*}, {@code PATH},
 *     {@code HOME}, {@code LANG}, {@code TERM}, {@code TMPDIR}, the proxy variables, the CA bundle
 *     variables)
 * @param value the real value: 1 to {@value #MAX_VALUE_CHARS} printable ASCII characters, no
 *     leading or trailing space
 * @param hosts 1 to {@value #MAX_HOSTS} host names it may be sent to: {@code api.example.com},
 *     or {@code *.example.com} (any name under it, not the apex), each optionally with
 *     {@code :port}; never an address
 * @param header the one request header the value may go in (a header name, not {@code Host},
 *     {@code Content-Length}, {@code Transfer-Encoding} or a hop-by-hop header), or null for the
 *     request line and any header
 */
public record EgressSecret(String name, String value, List<String> hosts, String header) {
  /** The most secrets one sandbox holds (the agent's limit). */
  public static final int MAX_SECRETS = 64;
  /** The most hosts one secret is bound to (the agent's limit). */
  public static final int MAX_HOSTS = 32;
  /** The longest value, in characters (the agent's limit). */
  public static final int MAX_VALUE_CHARS = 4096;

  private static final int MAX_NAME_CHARS = 128;
  private static final String PLACEHOLDER_PREFIX = "sandbox-secret-";
  private static final Pattern NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");
  private static final Pattern TOKEN = Pattern.compile("[!#$%&'*+.^_`|~0-9A-Za-z-]+");
  private static final Pattern LABEL = Pattern.compile("[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?");
  private static final Pattern NUMBER = Pattern.compile("0[xX][0-9a-fA-F]*|[0-9]+");
  private static final Set<String> RESERVED_NAMES = Set.of("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
      "PATH", "HOME", "LANG", "TERM", "TMPDIR", "SSL_CERT_FILE", "GIT_SSL_CAINFO");
  private static final Set<String> RESERVED_HEADERS = Set.of("host", "connection", "keep-alive",
      "proxy-authenticate", "proxy-authorization", "proxy-connection", "te", "trailer", "upgrade",
      "transfer-encoding", "content-length");

  /**
   * Checks and copies.
   *
   * @throws NullPointerException if {@code name}, {@code value}, {@code hosts} or a host is null
   * @throws IllegalArgumentException naming the secret and what is wrong (never the value)
   */
  public EgressSecret {
    Objects.requireNonNull(name, "name == null");
    checkName(name);
    if (value == null) {
      throw new NullPointerException("the value of egress secret " + name + " is null (an unset environment variable?)");
    }
    checkValue(name, value);
    Objects.requireNonNull(hosts, "hosts of egress secret " + name + " == null");
    hosts = new ArrayList<>(hosts);
    if (hosts.isEmpty() || hosts.size() > MAX_HOSTS) {
      throw new IllegalArgumentException("egress secret " + name + ": 1 to " + MAX_HOSTS + " hosts, got " + hosts.size());
    }
    for (int i = 0; i < hosts.size(); i++) {
      String h = Objects.requireNonNull(hosts.get(i), "hosts[" + i + "] of egress secret " + name + " == null");
      checkHost(name, h);
    }
    hosts = List.copyOf(hosts);
    if (header != null) {
      checkHeader(name, header);
    }
  }

  /** A secret for the request line and any header of requests to {@code hosts}. */
  public static EgressSecret of(String name, String value, String... hosts) {
    return new EgressSecret(name, value, Arrays.asList(hosts), null);
  }

  /** A secret for the request line and any header of requests to {@code hosts}. */
  public static EgressSecret of(String name, String value, List<String> hosts) {
    return new EgressSecret(name, value, hosts, null);
  }

  /** This secret, allowed only in the request header {@code header} ({@code "x-api-key"}, {@code "Authorization"}). */
  public EgressSecret withHeader(String header) {
    return new EgressSecret(name, value, hosts, Objects.requireNonNull(header, "header == null"));
  }

  /** This secret, allowed in the request line and any header. */
  public EgressSecret withoutHeader() {
    return new EgressSecret(name, value, hosts, null);
  }

  /** Never shows the value. */
  @Override
  public String toString() {
    return "EgressSecret[name=" + name + ", value=***, hosts=" + hosts + (header != null ? ", header=" + header : "")
        + "]";
  }

  private static void checkName(String name) {
    if (name.isEmpty() || name.length() > MAX_NAME_CHARS || !NAME.matcher(name).matches()) {
      throw new IllegalArgumentException("not an egress secret name: '" + clip(name)
          + "' (a variable name, [A-Za-z_][A-Za-z0-9_]*, at most " + MAX_NAME_CHARS + " characters)");
    }
    String upper = name.toUpperCase(Locale.ROOT);
    if (upper.startsWith("SANDBOX_") || RESERVED_NAMES.contains(upper) || upper.endsWith("_CA_BUNDLE")
        || upper.endsWith("_CA_CERTS")) {
      throw new IllegalArgumentException("egress secret " + name + ": a variable the agent sets itself"
          + " (SANDBOX_*, PATH, HOME, LANG, TERM, TMPDIR, the proxy and CA bundle variables)");
    }
  }

  private static void checkValue(String name, String value) {
    String at = "the value of egress secret " + name;
    if (value.isEmpty()) {
      throw new IllegalArgumentException(at + " is empty");
    }
    if (value.length() > MAX_VALUE_CHARS) {
      throw new IllegalArgumentException(at + " is longer than " + MAX_VALUE_CHARS + " characters");
    }
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c == '\r' || c == '\n') {
        throw new IllegalArgumentException(at + " contains CR or LF (it would split a header)");
      }
      if (c < 0x20 || c > 0x7e) {
        throw new IllegalArgumentException(at + " has a character outside printable ASCII at index " + i);
      }
    }
    if (value.startsWith(" ") || value.endsWith(" ")) {
      throw new IllegalArgumentException(at + " starts or ends with a space (a header value would lose it)");
    }
    if (value.contains(PLACEHOLDER_PREFIX)) {
      throw new IllegalArgumentException(at + " contains '" + PLACEHOLDER_PREFIX + "' (a placeholder)");
    }
  }

  /** As the agent's {@code EgressSecret.Host.parse}: {@code [*.]name[:port]}, a name and never an address. */
  private static void checkHost(String secret, String text) {
    String s = text;
    int colon = s.lastIndexOf(':');
    if (colon >= 0) {
      String p = s.substring(colon + 1);
      if (!p.matches("[0-9]{1,5}") || Integer.parseInt(p) < 1 || Integer.parseInt(p) > 65535) {
        throw invalidHost(secret, text, "the port must be 1 to 65535");
      }
      s = s.substring(0, colon);
    }
    boolean wildcard = s.startsWith("*.");
    s = (wildcard ? s.substring(2) : s).toLowerCase(Locale.ROOT);
    if (s.startsWith("[") || s.indexOf(':') >= 0) {
      throw invalidHost(secret, text, "a secret is bound to names (example.com or *.example.com), not to addresses");
    }
    if (s.endsWith(".")) {
      s = s.substring(0, s.length() - 1);
    }
    if (s.isEmpty() || s.length() > 253) {
      throw invalidHost(secret, text, "empty or longer than 253 characters");
    }
    String[] labels = s.split("\\.", -1);
    if (NUMBER.matcher(labels[labels.length - 1]).matches()) {
      throw invalidHost(secret, text, "a secret is bound to names (example.com or *.example.com), not to addresses");
    }
    for (String label : labels) {
      if (!LABEL.matcher(label).matches()) {
        throw invalidHost(secret, text, "not a host name (labels of letters, digits, '-' and '_', dot-separated)");
      }
    }
    if (wildcard && labels.length < 2) {
      throw invalidHost(secret, text, "a wildcard needs a domain of two labels or more");
    }
  }

  private static IllegalArgumentException invalidHost(String secret, String host, String why) {
    return new IllegalArgumentException("egress secret " + secret + ": invalid host '" + clip(host) + "': " + why);
  }

  private static void checkHeader(String secret, String header) {
    if (header.length() > MAX_NAME_CHARS || !TOKEN.matcher(header).matches()) {
      throw new IllegalArgumentException("egress secret " + secret + ": '" + clip(header) + "' is not a header name");
    }
    if (RESERVED_HEADERS.contains(header.toLowerCase(Locale.ROOT))) {
      throw new IllegalArgumentException("egress secret " + secret + ": the proxy sets or drops " + header
          + " itself (not Host, Content-Length, Transfer-Encoding or a hop-by-hop header)");
    }
  }

  private static String clip(String s) {
    String printable = s.replaceAll("[^\\x20-\\x7e]", "?");
    return printable.length() > 64 ? printable.substring(0, 64) + "..." : printable;
  }
}
