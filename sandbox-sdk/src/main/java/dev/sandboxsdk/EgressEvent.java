package dev.sandboxsdk;

import java.time.Instant;
import java.util.Objects;

/**
 * One connection attempt through a sandbox's egress proxy, allowed or refused, as its audit
 * recorded it when the connection ended ({@link SandboxEgress#events(long, int)}).
 *
 * @param sequence its number, from 1, increasing; pass the last one seen as {@code since}
 * @param time when the request came
 * @param host the host asked for (a name or an address literal, as the client wrote it)
 * @param port the port asked for
 * @param address the address connected to, or null when refused before one was known
 * @param allowed whether the policy let it through
 * @param rule the rule that decided, as text ({@code "deny denied.test"}), or a built-in reason:
 *     {@code mode-off}, {@code no-rule}, {@code mode-open}, {@code private-address},
 *     {@code unresolvable}, {@code invalid-host}, {@code sni-mismatch}, {@code host-mismatch},
 *     {@code connection-limit}; new reasons may be added
 * @param bytesUp bytes sent from the command to the destination
 * @param bytesDown bytes sent from the destination to the command
 * @param closedAt when the connection ended
 * @param outcome how it ended: {@code closed}, {@code refused}, {@code connect-failed},
 *     {@code idle-timeout}, {@code handshake-timeout}, {@code error}, {@code proxy-closed}; new
 *     outcomes may be added
 */
public record EgressEvent(long sequence, Instant time, String host, int port, String address, boolean allowed,
    String rule, long bytesUp, long bytesDown, Instant closedAt, String outcome) {

  /** Checks the required components. */
  public EgressEvent {
    Objects.requireNonNull(time, "time == null");
    Objects.requireNonNull(host, "host == null");
    Objects.requireNonNull(rule, "rule == null");
    Objects.requireNonNull(closedAt, "closedAt == null");
    Objects.requireNonNull(outcome, "outcome == null");
  }
}
