package dev.sandboxsdk.agent.egress;

import java.net.InetAddress;
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

  private final EgressProxy proxy;
  private final String proxyUrl;

  public Egress(EgressProxy proxy, String proxyUrl) {
    this.proxy = Objects.requireNonNull(proxy, "proxy");
    this.proxyUrl = Objects.requireNonNull(proxyUrl, "proxyUrl");
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
    return env;
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
  }
}
