package dev.sandboxsdk.agent.http;

import dev.sandboxsdk.agent.AgentException;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;

/** Strict query-string parameters: unknown or repeated names are a 400, like unknown body fields. */
public final class Query {
  private final Map<String, String> values;

  private Query(Map<String, String> values) {
    this.values = values;
  }

  /** Rejects any query parameter, for the routes that take none (400 naming it). */
  public static void none(com.sun.net.httpserver.HttpExchange exchange) {
    parse(exchange.getRequestURI(), Set.of());
  }

  /**
   * The query of {@code uri}, percent-decoded.
   *
   * @throws AgentException VALIDATION_FAILED for a name not in {@code allowed}, a name given twice or
   *     malformed percent-encoding
   */
  public static Query parse(URI uri, Set<String> allowed) {
    Map<String, String> values = new HashMap<>();
    String raw = uri.getRawQuery();
    if (raw != null && !raw.isEmpty()) {
      for (String pair : raw.split("&")) {
        if (pair.isEmpty()) {
          continue;
        }
        int eq = pair.indexOf('=');
        String name;
        String value;
        try {
          name = URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
          value = eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
          throw AgentException.invalid("query", "malformed query string: " + e.getMessage());
        }
        if (!allowed.contains(name)) {
          throw AgentException.invalid(name, "unknown query parameter '" + name + "'; allowed: " + new java.util.TreeSet<>(allowed));
        }
        if (values.put(name, value) != null) {
          throw AgentException.invalid(name, "query parameter '" + name + "' given more than once");
        }
      }
    }
    return new Query(values);
  }

  /** The parameter's value ({@code ""} for a bare name), or null when absent. */
  public String string(String name) {
    return values.get(name);
  }

  /**
   * The parameter as an integer, or {@code defaultValue} when absent.
   *
   * @throws AgentException VALIDATION_FAILED if it is not an integer from {@code min} to {@code max}
   */
  public long integer(String name, long min, long max, long defaultValue) {
    String v = values.get(name);
    if (v == null) {
      return defaultValue;
    }
    try {
      long n = Long.parseLong(v.strip()); // not trim(): it also drops NUL and other control characters
      if (n >= min && n <= max) {
        return n;
      }
    } catch (NumberFormatException ignored) {
      // reported below
    }
    throw AgentException.invalid(name, "query parameter '" + name + "' must be an integer from " + min + " to " + max + ", got '" + v + "'");
  }
}
