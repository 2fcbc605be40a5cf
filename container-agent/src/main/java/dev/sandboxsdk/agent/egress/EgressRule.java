package dev.sandboxsdk.agent.egress;

import java.net.InetAddress;
import java.util.Locale;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One rule of an {@link EgressPolicy}: allow or deny a destination, by domain or by address block,
 * on every port or on a port range. Written as text, which is also how events and refusals name
 * it: {@code example.com} (that name only), {@code *.example.com} (any name under it, not {@code
 * example.com} itself), {@code 10.0.0.0/8}, {@code 2001:db8::/32}, {@code 203.0.113.7} (one
 * address), each optionally followed by {@code :443} or {@code :8000-8999} (an IPv6 block with a
 * port goes in brackets: {@code [2001:db8::/32]:443}). A domain rule matches the name asked for,
 * never an IP literal; an address rule matches the address the proxy would connect to. IPv4
 * blocks are written as dotted quads: odd forms such as {@code 2130706433} are refused.
 *
 * <p>Immutable and thread-safe.
 */
public final class EgressRule {
  private static final Pattern PORTS = Pattern.compile("([0-9]{1,5})(?:-([0-9]{1,5}))?");

  /** What a matching rule decides. */
  public enum Action {
    ALLOW,
    DENY
  }

  private final Action action;
  private final String domain; // "example.com" or "*.example.com"; null for an address rule
  private final AddressRange range; // null for a domain rule
  private final int fromPort;
  private final int toPort;

  private EgressRule(Action action, String domain, AddressRange range, int fromPort, int toPort) {
    this.action = action;
    this.domain = domain;
    this.range = range;
    this.fromPort = fromPort;
    this.toPort = toPort;
  }

  /** A rule that allows the destination ({@code "*.example.com:443"}, {@code "10.0.0.0/8"}, ...). */
  public static EgressRule allow(String destination) {
    return parse(Action.ALLOW, destination);
  }

  /** A rule that denies the destination. */
  public static EgressRule deny(String destination) {
    return parse(Action.DENY, destination);
  }

  /**
   * Parses a rule as {@link #toString()} writes it: {@code "allow example.com:443"}.
   *
   * @throws IllegalArgumentException if it is not one
   */
  public static EgressRule parse(String text) {
    String[] parts = text.trim().split("\\s+");
    if (parts.length != 2) {
      throw new IllegalArgumentException("a rule is 'allow|deny <destination>': " + text);
    }
    Action action = switch (parts[0].toLowerCase(Locale.ROOT)) {
      case "allow" -> Action.ALLOW;
      case "deny" -> Action.DENY;
      default -> throw new IllegalArgumentException("a rule starts with allow or deny: " + text);
    };
    return parse(action, parts[1]);
  }

  private static EgressRule parse(Action action, String destination) {
    Objects.requireNonNull(destination, "destination");
    String target = destination;
    String ports = null;
    if (target.startsWith("[")) {
      int close = target.indexOf(']');
      if (close < 0) {
        throw new IllegalArgumentException("unclosed bracket: " + destination);
      }
      String after = target.substring(close + 1);
      if (!after.isEmpty() && !after.startsWith(":")) {
        throw new IllegalArgumentException("invalid destination: " + destination);
      }
      ports = after.isEmpty() ? null : after.substring(1);
      target = target.substring(1, close);
    } else if (target.indexOf(':') == target.lastIndexOf(':') && target.indexOf(':') >= 0) {
      ports = target.substring(target.indexOf(':') + 1);
      target = target.substring(0, target.indexOf(':'));
    }
    int[] range = ports == null ? new int[] {0, 65535} : ports(ports, destination);
    if (target.indexOf('/') >= 0 || target.indexOf(':') >= 0 || target.matches("[0-9.]+")) {
      return new EgressRule(action, null, AddressRange.parse(target), range[0], range[1]);
    }
    return new EgressRule(action, domain(target, destination), null, range[0], range[1]);
  }

  private static String domain(String target, String destination) {
    boolean wildcard = target.startsWith("*.");
    HostNames.Host host;
    try {
      host = HostNames.parse(wildcard ? target.substring(2) : target);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("invalid domain: " + destination, e);
    }
    if (host.isLiteral()) {
      throw new IllegalArgumentException("an address is written as a dotted quad or IPv6: " + destination);
    }
    return wildcard ? "*." + host.name() : host.name();
  }

  private static int[] ports(String text, String destination) {
    Matcher m = PORTS.matcher(text);
    if (!m.matches()) {
      throw new IllegalArgumentException("invalid port or port range: " + destination);
    }
    int from = Integer.parseInt(m.group(1));
    int to = m.group(2) == null ? from : Integer.parseInt(m.group(2));
    if (from < 1 || to > 65535 || from > to) {
      throw new IllegalArgumentException("invalid port or port range: " + destination);
    }
    return new int[] {from, to};
  }

  public Action action() {
    return action;
  }

  public boolean isAllow() {
    return action == Action.ALLOW;
  }

  /** True for a rule on an address block rather than a domain. */
  public boolean isAddressRule() {
    return range != null;
  }

  /** True if this domain rule matches the (normalised) name on the port. */
  boolean matchesName(String name, int port) {
    if (domain == null || !matchesPort(port)) {
      return false;
    }
    return domain.startsWith("*.") ? name.endsWith(domain.substring(1)) : name.equals(domain);
  }

  /** True if this address rule covers the address on the port. */
  boolean matchesAddress(InetAddress address, int port) {
    return range != null && matchesPort(port) && range.contains(address);
  }

  boolean matchesPort(int port) {
    return port >= fromPort && port <= toPort;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof EgressRule r && r.action == action && Objects.equals(r.domain, domain)
        && Objects.equals(r.range, range) && r.fromPort == fromPort && r.toPort == toPort;
  }

  @Override
  public int hashCode() {
    return Objects.hash(action, domain, range, fromPort, toPort);
  }

  /** The rule as text, {@code "allow *.example.com:443"}: what events and refusals name. */
  @Override
  public String toString() {
    String target = domain != null ? domain : range.toString();
    String text = action.name().toLowerCase(Locale.ROOT) + " ";
    if (fromPort == 0 && toPort == 65535) {
      return text + target;
    }
    String port = fromPort == toPort ? Integer.toString(fromPort) : fromPort + "-" + toPort;
    return text + (range != null && !range.isIpv4() ? "[" + target + "]" : target) + ":" + port;
  }
}
