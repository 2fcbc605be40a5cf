package dev.sandboxsdk.agent.egress;

import java.time.Instant;
import java.util.List;

/**
 * One connection attempt through the proxy, as the audit keeps it.
 *
 * @param sequence the audit's number for it, increasing by one per event
 * @param time when the request arrived
 * @param host the host asked for (a normalised name, or an address), or the raw text if invalid
 * @param port the port asked for (0 if the request was malformed before one was known)
 * @param address the address decided on, or null if refused before one was known
 * @param allowed whether the policy let it out
 * @param rule the rule that decided, as text, or the built-in reason ({@link Decision})
 * @param bytesUp bytes relayed from the client to the destination
 * @param bytesDown bytes relayed from the destination to the client
 * @param closedAt when the connection ended
 * @param outcome how it ended: {@code closed}, {@code refused}, {@code connect-failed},
 *     {@code idle-timeout}, {@code handshake-timeout}, {@code tls-failed}, {@code error},
 *     {@code proxy-closed}
 * @param secrets the names of the secrets the request carried: put in when allowed, the cause of
 *     the refusal otherwise ({@link EgressSecrets}); never a value
 */
public record EgressEvent(long sequence, Instant time, String host, int port, String address,
    boolean allowed, String rule, long bytesUp, long bytesDown, Instant closedAt, String outcome,
    List<String> secrets) {

  public EgressEvent {
    secrets = List.copyOf(secrets);
  }

  EgressEvent withSequence(long seq) {
    return new EgressEvent(seq, time, host, port, address, allowed, rule, bytesUp, bytesDown, closedAt, outcome,
        secrets);
  }
}
