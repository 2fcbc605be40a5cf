package dev.sandboxsdk.agent.egress;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Arrays;
import java.util.List;

/**
 * The addresses no sandbox reaches unless a CIDR rule allows them explicitly: the host's private
 * networks, loopback, link-local (with the cloud metadata service at 169.254.169.254), shared and
 * benchmark space, multicast and reserved space, in both families, and IPv4 addresses inside IPv6
 * (mapped {@code ::ffff:a.b.c.d}, compatible {@code ::a.b.c.d}, NAT64 {@code 64:ff9b::a.b.c.d} and
 * 6to4 {@code 2002:aabb:ccdd::}), which reach the same IPv4 host through a translator.
 */
final class BlockedRanges {
  private static final List<AddressRange> IPV4 = ranges("0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10",
      "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24", "192.168.0.0/16",
      "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4");
  private static final List<AddressRange> IPV6 = ranges("::/128", "::1/128", "fc00::/7", "fe80::/10",
      "fec0::/10", "ff00::/8", "64:ff9b:1::/48");
  private static final AddressRange MAPPED = AddressRange.of(
      new byte[] {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (byte) 0xff, (byte) 0xff, 0, 0, 0, 0}, 96);
  private static final AddressRange COMPATIBLE = AddressRange.parse("::/96");
  private static final AddressRange NAT64 = AddressRange.parse("64:ff9b::/96");
  private static final AddressRange SIX_TO_FOUR = AddressRange.parse("2002::/16");

  private BlockedRanges() {}

  /** True if the address is one of the built-in blocked ones. */
  static boolean isBlocked(InetAddress address) {
    if (HostNames.scoped(address)) {
      return true;
    }
    if (address instanceof Inet4Address) {
      return IPV4.stream().anyMatch(r -> r.contains(address));
    }
    if (IPV6.stream().anyMatch(r -> r.contains(address))) {
      return true;
    }
    InetAddress embedded = embeddedIpv4((Inet6Address) address);
    return embedded != null && isBlocked(embedded);
  }

  /** The IPv4 address an IPv6 one stands for (mapped, compatible, NAT64, 6to4), or null. */
  static InetAddress embeddedIpv4(Inet6Address address) {
    byte[] b = address.getAddress();
    int from;
    if (MAPPED.contains(address) || COMPATIBLE.contains(address) || NAT64.contains(address)) {
      from = 12;
    } else if (SIX_TO_FOUR.contains(address)) {
      from = 2;
    } else {
      return null;
    }
    try {
      return InetAddress.getByAddress(new byte[] {b[from], b[from + 1], b[from + 2], b[from + 3]});
    } catch (UnknownHostException e) {
      throw new IllegalStateException(e); // four bytes are always an address
    }
  }

  private static List<AddressRange> ranges(String... cidrs) {
    return Arrays.stream(cidrs).map(AddressRange::parse).toList();
  }
}
