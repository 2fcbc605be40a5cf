package dev.sandboxsdk.mcp.internal;

import com.sun.net.httpserver.HttpExchange;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;

/**
 * The checks every request to the HTTP transport passes before it is routed: Host and Origin
 * (against DNS rebinding) and, unless {@code --no-auth}, the bearer token compared in constant
 * time. Thread-safe.
 */
final class HttpGuard {
  private static final Pattern IPV4 = Pattern.compile("\\d{1,3}(\\.\\d{1,3}){3}");
  private static final Pattern IPV6 = Pattern.compile("\\[[0-9a-f:.]*:[0-9a-f:.]*]");

  private final AdapterConfig config;
  private final byte[] token;
  private final Set<String> allowedHosts;

  HttpGuard(AdapterConfig config) {
    this.config = config;
    this.token = config.httpToken() == null ? null : config.httpToken().getBytes(StandardCharsets.UTF_8);
    Set<String> hosts = ConcurrentHashMap.newKeySet();
    hosts.addAll(List.of("localhost", "127.0.0.1", "[::1]"));
    hosts.addAll(config.allowedHosts());
    if (!config.bind().equals("0.0.0.0") && !config.bind().equals("::")) {
      hosts.add(config.bind().contains(":") && !config.bind().startsWith("[") ? "[" + config.bind() + "]" : config.bind());
    }
    this.allowedHosts = hosts;
  }

  /** Null if Host and Origin are acceptable, else why not (MCP: validate Origin against DNS rebinding). */
  String checkHostAndOrigin(HttpExchange ex) {
    String host = ex.getRequestHeaders().getFirst("Host");
    if (host == null || !hostAllowed(hostName(host))) {
      return "Host header '" + host + "' is not allowed (DNS rebinding protection); use localhost or an IP"
          + " address, or start the server with --allow-host";
    }
    String origin = ex.getRequestHeaders().getFirst("Origin");
    if (origin != null) {
      String o = origin.toLowerCase(Locale.ROOT);
      if (config.allowedOrigins().contains(o)) {
        return null;
      }
      URI u;
      try {
        u = URI.create(o);
      } catch (IllegalArgumentException e) {
        return "Origin '" + origin + "' is not allowed";
      }
      if (u.getScheme() == null || !Set.of("http", "https").contains(u.getScheme()) || u.getHost() == null
          || !originHostAllowed(u.getHost())) {
        return "Origin '" + origin + "' is not allowed; start the server with --allow-origin to accept it";
      }
    }
    return null;
  }

  private boolean hostAllowed(String name) {
    String h = name.toLowerCase(Locale.ROOT);
    // An IP literal cannot be a rebound DNS name, so any is fine; names must be listed.
    return allowedHosts.contains(h) || IPV4.matcher(h).matches() || IPV6.matcher(h).matches();
  }

  /**
   * An Origin names the page that made the request, so unlike Host any IP will not do: only the
   * names and addresses this server answers to as itself, and loopback addresses.
   */
  private boolean originHostAllowed(String name) {
    String h = name.toLowerCase(Locale.ROOT);
    String bracketed = h.contains(":") && !h.startsWith("[") ? "[" + h + "]" : h;
    return allowedHosts.contains(h) || allowedHosts.contains(bracketed) || h.startsWith("127.")
        && IPV4.matcher(h).matches() || bracketed.equals("[::1]");
  }

  /** The host part of a Host header (without the port); a malformed header gives a name that never passes. */
  private static String hostName(String hostHeader) {
    String h = hostHeader.strip();
    if (h.startsWith("[")) {
      int end = h.indexOf(']');
      if (end < 0 || end + 1 < h.length() && !h.substring(end + 1).matches(":\\d{1,5}")) {
        return "invalid";
      }
      return h.substring(0, end + 1);
    }
    int colon = h.lastIndexOf(':');
    return colon >= 0 ? h.substring(0, colon) : h;
  }

  /**
   * Whether the request carries the server's token (always true with {@code --no-auth}); else
   * answers 401 and says false.
   */
  boolean authorized(HttpExchange ex) throws IOException {
    if (token == null) {
      return true;
    }
    String auth = ex.getRequestHeaders().getFirst("Authorization");
    if (auth == null || !auth.regionMatches(true, 0, "Bearer ", 0, 7)) {
      ex.getResponseHeaders().set("WWW-Authenticate", "Bearer realm=\"sandbox-mcp\"");
      HttpExchanges.rpcError(ex, 401, "authentication required: send Authorization: Bearer <token>");
      return false;
    }
    // Exact bytes: a token followed by anything (a NUL, a space, a tab) is a different token.
    byte[] given = auth.substring(7).getBytes(StandardCharsets.ISO_8859_1);
    if (!MessageDigest.isEqual(given, token)) { // constant time for equal lengths
      ex.getResponseHeaders().set("WWW-Authenticate",
          "Bearer realm=\"sandbox-mcp\", error=\"invalid_token\", error_description=\"the token is not valid\"");
      HttpExchanges.rpcError(ex, 401, "invalid bearer token");
      return false;
    }
    return true;
  }
}
