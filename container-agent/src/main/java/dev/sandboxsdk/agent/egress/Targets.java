package dev.sandboxsdk.agent.egress;

import java.util.Locale;

/** The destination a request names: a CONNECT authority, or an absolute-form URL. */
record Targets(HostNames.Host host, int port, String path) {

  /**
   * Parses {@code host:port} (IPv6 in brackets), the target of a CONNECT; the port is required.
   *
   * @throws IllegalArgumentException if it is not one
   */
  static Targets authority(String authority, int defaultPort) {
    String hostText;
    String portText;
    if (authority.startsWith("[")) {
      int close = authority.indexOf(']');
      if (close < 0) {
        throw new IllegalArgumentException("unclosed bracket");
      }
      hostText = authority.substring(0, close + 1);
      String after = authority.substring(close + 1);
      if (!after.isEmpty() && !after.startsWith(":")) {
        throw new IllegalArgumentException("invalid authority");
      }
      portText = after.isEmpty() ? null : after.substring(1);
    } else {
      int colon = authority.lastIndexOf(':');
      if (colon >= 0 && authority.indexOf(':') != colon) {
        throw new IllegalArgumentException("an IPv6 host goes in brackets");
      }
      hostText = colon < 0 ? authority : authority.substring(0, colon);
      portText = colon < 0 ? null : authority.substring(colon + 1);
    }
    if (authority.indexOf('@') >= 0) {
      throw new IllegalArgumentException("user info in authority");
    }
    int port;
    if (portText == null) {
      if (defaultPort < 0) {
        throw new IllegalArgumentException("port required");
      }
      port = defaultPort;
    } else {
      if (!portText.matches("[0-9]{1,5}")) {
        throw new IllegalArgumentException("invalid port");
      }
      port = Integer.parseInt(portText);
    }
    if (port < 1 || port > 65535) {
      throw new IllegalArgumentException("invalid port");
    }
    return new Targets(HostNames.parse(hostText), port, null);
  }

  /**
   * Parses an absolute-form {@code http://host[:port]/path?query} target.
   *
   * @throws IllegalArgumentException if it is not one (https:// included: that goes by CONNECT)
   */
  static Targets absolute(String target) {
    if (!target.toLowerCase(Locale.ROOT).startsWith("http://")) {
      throw new IllegalArgumentException("not an absolute http:// URL");
    }
    String rest = target.substring("http://".length());
    if (rest.indexOf('#') >= 0) {
      throw new IllegalArgumentException("fragment in request target");
    }
    int end = rest.length();
    for (char c : new char[] {'/', '?'}) {
      int i = rest.indexOf(c);
      if (i >= 0 && i < end) {
        end = i;
      }
    }
    String path = rest.substring(end);
    if (path.isEmpty()) {
      path = "/";
    } else if (path.startsWith("?")) {
      path = "/" + path;
    }
    Targets authority = authority(rest.substring(0, end), 80);
    return new Targets(authority.host(), authority.port(), path);
  }

  /** True if both name the same host (same name, or same address) and port. */
  boolean sameDestination(Targets other) {
    if (port != other.port || host.isLiteral() != other.host.isLiteral()) {
      return false;
    }
    return host.isLiteral() ? host.literal().equals(other.host.literal()) : host.name().equals(other.host.name());
  }
}
