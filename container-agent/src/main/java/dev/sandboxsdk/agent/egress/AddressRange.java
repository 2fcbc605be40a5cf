package dev.sandboxsdk.agent.egress;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Arrays;
import java.util.regex.Pattern;

/**
 * A CIDR block, IPv4 or IPv6; an address matches only a block of its own family (an IPv4 block
 * does not cover an IPv6 form of its addresses: the proxy connects to the address as given).
 */
final class AddressRange {
  private static final Pattern DOTTED_QUAD =
      Pattern.compile("(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}");
  private final byte[] network;
  private final int prefix;

  private AddressRange(byte[] network, int prefix) {
    this.network = network;
    this.prefix = prefix;
  }

  /** The block of the first {@code prefix} bits of an address's bytes (4 or 16 of them). */
  static AddressRange of(byte[] address, int prefix) {
    if ((address.length != 4 && address.length != 16) || prefix < 0 || prefix > address.length * 8) {
      throw new IllegalArgumentException("invalid address block");
    }
    return new AddressRange(mask(address, prefix), prefix);
  }

  /**
   * Parses {@code a.b.c.d/n}, {@code x::y/n}, or an address alone (a /32 or /128).
   *
   * @throws IllegalArgumentException if it is not one
   */
  static AddressRange parse(String cidr) {
    int slash = cidr.indexOf('/');
    String addressText = slash < 0 ? cidr : cidr.substring(0, slash);
    if (addressText.indexOf(':') < 0 && !DOTTED_QUAD.matcher(addressText).matches()) {
      throw new IllegalArgumentException("not an address (a CIDR takes a dotted quad or IPv6): " + cidr);
    }
    byte[] bytes = HostNames.parse(addressText).literal().getAddress();
    int max = bytes.length * 8;
    int prefix = max;
    if (slash >= 0) {
      String p = cidr.substring(slash + 1);
      if (!p.matches("[0-9]{1,3}") || Integer.parseInt(p) > max) {
        throw new IllegalArgumentException("invalid prefix length: " + cidr);
      }
      prefix = Integer.parseInt(p);
    }
    return new AddressRange(mask(bytes, prefix), prefix);
  }

  boolean contains(InetAddress address) {
    byte[] b = address.getAddress();
    return b.length == network.length && Arrays.equals(mask(b, prefix), network);
  }

  boolean isIpv4() {
    return network.length == 4;
  }

  private static byte[] mask(byte[] bytes, int prefix) {
    byte[] out = bytes.clone();
    for (int i = 0; i < out.length; i++) {
      int keep = Math.max(0, Math.min(8, prefix - 8 * i));
      out[i] &= (byte) (0xff << (8 - keep));
    }
    return out;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof AddressRange r && r.prefix == prefix && Arrays.equals(r.network, network);
  }

  @Override
  public int hashCode() {
    return 31 * Arrays.hashCode(network) + prefix;
  }

  @Override
  public String toString() {
    try {
      InetAddress a = network.length == 4 ? InetAddress.getByAddress(network)
          : Inet6Address.getByAddress(null, network, -1);
      return a.getHostAddress() + "/" + prefix;
    } catch (UnknownHostException e) {
      throw new IllegalStateException(e); // 4 or 16 bytes are always an address
    }
  }
}
