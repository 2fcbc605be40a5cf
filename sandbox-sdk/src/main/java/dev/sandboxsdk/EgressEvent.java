package dev.sandboxsdk;

import java.time.Instant;
import java.util.List;
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
 *     {@code connection-limit}, and with {@linkplain EgressSecret secrets} {@code secret-to-unbound-host},
 *     {@code secret-outside-bound-header}, {@code secret-over-plain-http},
 *     {@code request-head-too-large}, {@code malformed-request}, {@code not-origin-form}; new
 *     reasons may be added
 * @param bytesUp bytes sent from the command to the destination
 * @param bytesDown bytes sent from the destination to the command
 * @param closedAt when the connection ended
 * @param outcome how it ended: {@code closed}, {@code refused}, {@code connect-failed},
 *     {@code idle-timeout}, {@code handshake-timeout}, {@code tls-failed} (the command's TLS
 *     handshake with the proxy, which intercepts the hosts of secrets, failed), {@code error},
 *     {@code proxy-closed}; new outcomes may be added
 * @param secrets the names (never the values) of the {@linkplain EgressSecret secrets} the request
 *     carried: put in when {@code allowed}, the cause of the refusal otherwise; empty for every
 *     other connection, and from an agent that predates secrets
 */
public record EgressEvent(long sequence, Instant time, String host, int port, String address, boolean allowed,
    String rule, long bytesUp, long bytesDown, Instant closedAt, String outcome, List<String> secrets) {

  /** Checks the required components; a null {@code secrets} is empty. */
  public EgressEvent {
    Objects.requireNonNull(time, "time == null");
    Objects.requireNonNull(host, "host == null");
    Objects.requireNonNull(rule, "rule == null");
    Objects.requireNonNull(closedAt, "closedAt == null");
    Objects.requireNonNull(outcome, "outcome == null");
    secrets = secrets == null ? List.of() : List.copyOf(secrets);
  }

  /** An event that names no secrets (the constructor before {@code secrets} was added). */
  public EgressEvent(long sequence, Instant time, String host, int port, String address, boolean allowed,
      String rule, long bytesUp, long bytesDown, Instant closedAt, String outcome) {
    this(sequence, time, host, port, address, allowed, rule, bytesUp, bytesDown, closedAt, outcome, List.of());
  }
}
