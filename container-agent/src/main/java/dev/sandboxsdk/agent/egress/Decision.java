package dev.sandboxsdk.agent.egress;

import java.net.InetAddress;

/**
 * What the policy decided for one connection: whether it may go out, what decided (the text of the
 * rule, {@code "allow *.example.com:443"}, or a built-in reason such as {@link #PRIVATE_ADDRESS}),
 * and the address it may go to (null when refused before one was known).
 */
public record Decision(boolean allowed, String rule, InetAddress address) {
  /** Mode off: no egress at all. */
  public static final String MODE_OFF = "mode-off";
  /** Allow-list mode and no rule matched. */
  public static final String NO_RULE = "no-rule";
  /** Open mode and no rule matched. */
  public static final String MODE_OPEN = "mode-open";
  /** The address is in a built-in blocked range and no address rule allows it. */
  public static final String PRIVATE_ADDRESS = "private-address";
  /** The host is neither a valid name nor a valid IP literal. */
  public static final String INVALID_HOST = "invalid-host";
  /** The name has no address. */
  public static final String UNRESOLVABLE = "unresolvable";
  /** A TLS ClientHello named another server than the CONNECT. */
  public static final String SNI_MISMATCH = "sni-mismatch";
  /** An absolute-form request whose Host header names another host than its URL. */
  public static final String HOST_MISMATCH = "host-mismatch";

  static Decision allow(String rule, InetAddress address) {
    return new Decision(true, rule, address);
  }

  static Decision deny(String rule, InetAddress address) {
    return new Decision(false, rule, address);
  }
}
