package dev.sandboxsdk.agent.egress;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * What a requested host is: a domain name, normalised, or an IP literal, parsed to the address it
 * denotes. A string that any resolver would read as a number is an address, never a name: besides
 * the dotted quad, the forms of {@code inet_aton} (decimal {@code 2130706433}, octal {@code
 * 0177.0.0.1}, hex {@code 0x7f.1}, shortened {@code 127.1}), so no domain rule can match it and the
 * policy checks the address it denotes.
 */
final class HostNames {
  private static final Pattern LABEL = Pattern.compile("[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?");
  private static final Pattern NUMBER = Pattern.compile("0[xX][0-9a-fA-F]*|[0-9]+");

  private HostNames() {}

  /** A host as the proxy was asked for it: a normalised name, or an address. */
  record Host(String name, InetAddress literal) {
    boolean isLiteral() {
      return literal != null;
    }

    /** The text an event and a log show: the name, or the address. */
    String text() {
      return literal != null ? literal.getHostAddress() : name;
    }
  }

  /**
   * Parses a host as it came in a request (brackets around IPv6 allowed).
   *
   * @throws IllegalArgumentException if it is neither a valid name nor a valid literal
   */
  static Host parse(String raw) {
    if (raw == null || raw.isEmpty() || raw.length() > 255) {
      throw new IllegalArgumentException("empty or overlong host");
    }
    String s = raw;
    if (s.startsWith("[")) {
      if (!s.endsWith("]")) {
        throw new IllegalArgumentException("unclosed bracket in host");
      }
      return new Host(null, ipv6(s.substring(1, s.length() - 1)));
    }
    if (s.indexOf(':') >= 0) {
      return new Host(null, ipv6(s));
    }
    s = s.toLowerCase(Locale.ROOT);
    if (s.endsWith(".")) {
      s = s.substring(0, s.length() - 1);
    }
    if (s.isEmpty() || s.length() > 253) {
      throw new IllegalArgumentException("empty or overlong host");
    }
    String[] labels = s.split("\\.", -1);
    String last = labels[labels.length - 1];
    if (NUMBER.matcher(last).matches()) {
      // Like the WHATWG URL parser: a numeric last label makes the host an IPv4 literal or nothing.
      return new Host(null, ipv4(labels));
    }
    for (String label : labels) {
      if (!LABEL.matcher(label).matches()) {
        throw new IllegalArgumentException("invalid host name");
      }
    }
    return new Host(s, null);
  }

  /** Normalises a name the way {@link #parse} does, for comparing SNI with a CONNECT host. */
  static String normalise(String name) {
    String s = name.toLowerCase(Locale.ROOT);
    return s.endsWith(".") ? s.substring(0, s.length() - 1) : s;
  }

  private static InetAddress ipv6(String s) {
    if (s.isEmpty() || s.indexOf(':') < 0 || s.indexOf('%') >= 0 || !s.matches("[0-9a-fA-F:.]+")) {
      throw new IllegalArgumentException("invalid IPv6 literal");
    }
    try {
      return InetAddress.getByName(s); // a literal with ':' is parsed, never looked up
    } catch (UnknownHostException e) {
      throw new IllegalArgumentException("invalid IPv6 literal", e);
    }
  }

  /** {@code inet_aton}: 1 to 4 parts, each decimal, octal (leading 0) or hex (0x); the last fills the rest. */
  private static InetAddress ipv4(String[] parts) {
    if (parts.length > 4) {
      throw new IllegalArgumentException("invalid IPv4 literal");
    }
    long[] values = new long[parts.length];
    for (int i = 0; i < parts.length; i++) {
      values[i] = number(parts[i]);
    }
    long address = 0;
    for (int i = 0; i < parts.length - 1; i++) {
      if (values[i] > 255) {
        throw new IllegalArgumentException("invalid IPv4 literal");
      }
      address |= values[i] << (24 - 8 * i);
    }
    long rest = values[parts.length - 1];
    if (rest >= 1L << (8 * (5 - parts.length))) {
      throw new IllegalArgumentException("invalid IPv4 literal");
    }
    address |= rest;
    byte[] b = {(byte) (address >>> 24), (byte) (address >>> 16), (byte) (address >>> 8), (byte) address};
    try {
      return InetAddress.getByAddress(b);
    } catch (UnknownHostException e) {
      throw new IllegalStateException(e); // four bytes are always an address
    }
  }

  private static long number(String part) {
    if (!NUMBER.matcher(part).matches() || part.length() > 12) {
      throw new IllegalArgumentException("invalid IPv4 literal");
    }
    if (part.startsWith("0x") || part.startsWith("0X")) {
      return part.length() == 2 ? 0 : Long.parseLong(part.substring(2), 16);
    }
    if (part.length() > 1 && part.startsWith("0")) {
      if (!part.matches("[0-7]+")) {
        throw new IllegalArgumentException("invalid octal part in IPv4 literal");
      }
      return Long.parseLong(part, 8);
    }
    return Long.parseLong(part);
  }

  /** True for an IPv6 address with a scope (never a destination the proxy accepts). */
  static boolean scoped(InetAddress address) {
    return address instanceof Inet6Address a && (a.getScopeId() != 0 || a.getScopedInterface() != null);
  }
}
