package dev.sandboxsdk.agent.egress;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.List;

/**
 * Resolves a name for the proxy. The proxy resolves each name once, checks the addresses, and
 * connects to the address it checked: nothing resolves the name a second time. Tests map their
 * names to loopback through this seam.
 */
@FunctionalInterface
public interface EgressResolver {
  /**
   * The addresses of a (normalised, non-literal) name, in the order to try them.
   *
   * @throws UnknownHostException if it has none
   */
  List<InetAddress> resolve(String host) throws UnknownHostException;

  /** The JDK's resolver (the system's, with the JDK's cache). */
  static EgressResolver system() {
    return host -> List.of(InetAddress.getAllByName(host));
  }
}
