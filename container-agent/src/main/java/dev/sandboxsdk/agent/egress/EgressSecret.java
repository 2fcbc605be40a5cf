package dev.sandboxsdk.agent.egress;

import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * A secret the proxy puts into requests for commands, which only ever see its placeholder.
 *
 * @param name the secret's name, also the variable commands find the placeholder in
 * @param value the real value; never logged, never in an event, never given to a command
 * @param placeholder what commands get instead: {@code sandbox-secret-} and 32 random hex digits
 * @param hosts the hosts it may be sent to
 * @param header the one header (lower case) it may appear in, or null for the request line and
 *     any header
 */
public record EgressSecret(String name, String value, String placeholder, List<Host> hosts, String header) {
  /** What every placeholder starts with. */
  public static final String PLACEHOLDER_PREFIX = "sandbox-secret-";

  public EgressSecret {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(value, "value");
    Objects.requireNonNull(placeholder, "placeholder");
    hosts = List.copyOf(hosts);
    header = header == null ? null : header.toLowerCase(Locale.ROOT);
  }

  /** Whether it may be sent to {@code host} on {@code port}. */
  boolean boundTo(HostNames.Host host, int port) {
    for (Host h : hosts) {
      if (h.matches(host, port)) {
        return true;
      }
    }
    return false;
  }

  /** Never prints the value. */
  @Override
  public String toString() {
    return "EgressSecret[" + name + " -> " + hosts + (header == null ? "" : " in " + header) + "]";
  }

  /**
   * A host a secret is bound to: a name ({@code api.example.com}) or every name under a domain
   * ({@code *.example.com}, not the domain itself), on one port or on any.
   *
   * @param name the normalised name, without {@code *.}
   * @param wildcard whether it is {@code *.name}
   * @param port the port, or 0 for any
   */
  public record Host(String name, boolean wildcard, int port) {
    /**
     * Parses {@code [*.]name[:port]}.
     *
     * @throws IllegalArgumentException saying what is wrong
     */
    public static Host parse(String text) {
      String s = text;
      int port = 0;
      int colon = s.lastIndexOf(':');
      if (colon >= 0) {
        String p = s.substring(colon + 1);
        if (!p.matches("[0-9]{1,5}") || Integer.parseInt(p) < 1 || Integer.parseInt(p) > 65535) {
          throw new IllegalArgumentException("invalid port in host '" + text + "'");
        }
        port = Integer.parseInt(p);
        s = s.substring(0, colon);
      }
      boolean wildcard = s.startsWith("*.");
      if (wildcard) {
        s = s.substring(2);
      }
      HostNames.Host h;
      try {
        h = HostNames.parse(s);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("invalid host '" + text + "': " + e.getMessage(), e);
      }
      if (h.isLiteral() || s.indexOf('*') >= 0) {
        throw new IllegalArgumentException("invalid host '" + text + "': a secret is bound to names"
            + " (example.com or *.example.com), not to addresses");
      }
      if (wildcard && h.name().indexOf('.') < 0) {
        throw new IllegalArgumentException("invalid host '" + text + "': a wildcard needs a domain of two labels or more");
      }
      return new Host(h.name(), wildcard, port);
    }

    boolean matches(HostNames.Host host, int targetPort) {
      if (host.isLiteral() || (port != 0 && port != targetPort)) {
        return false;
      }
      return wildcard ? host.name().endsWith("." + name) : host.name().equals(name);
    }

    @Override
    public String toString() {
      return (wildcard ? "*." : "") + name + (port == 0 ? "" : ":" + port);
    }
  }
}
