package dev.sandboxsdk.agent.egress;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * A sandbox's egress policy: a mode and ordered rules. Immutable and thread-safe.
 *
 * <p>How a connection to {@code host:port} is decided, for each address the host resolved to (an IP
 * literal is its own one address):
 *
 * <ol>
 *   <li>mode {@link Mode#OFF}: refused ({@code mode-off});
 *   <li>the first rule that matches decides if it denies: a domain rule matches the name asked for
 *       (never an IP literal), an address rule the address;
 *   <li>an address in a built-in blocked range (private, loopback, link-local and metadata,
 *       multicast, reserved, and their IPv6 forms; see {@code BlockedRanges}) goes out only if the
 *       first address rule that covers it allows it: a domain rule never lets a name reach such an
 *       address, whatever the name resolves to ({@code private-address});
 *   <li>otherwise the first matching rule allows; with none, {@link Mode#ALLOW_LIST} refuses
 *       ({@code no-rule}) and {@link Mode#OPEN} allows ({@code mode-open}).
 * </ol>
 *
 * <p>The connection goes to the first address allowed; if none is, the first address's refusal
 * stands.
 */
public record EgressPolicy(Mode mode, List<EgressRule> rules) {
  /** How the policy treats what no rule matches. */
  public enum Mode {
    /** No egress at all, whatever the rules say. */
    OFF,
    /** Only what a rule allows. */
    ALLOW_LIST,
    /** Everything but what a rule denies and the built-in blocked addresses. */
    OPEN
  }

  public EgressPolicy {
    Objects.requireNonNull(mode, "mode");
    rules = List.copyOf(rules);
  }

  /** No egress at all. */
  public static EgressPolicy off() {
    return new EgressPolicy(Mode.OFF, List.of());
  }

  /** Only what the rules allow. */
  public static EgressPolicy allowList(EgressRule... rules) {
    return new EgressPolicy(Mode.ALLOW_LIST, List.of(rules));
  }

  /** Everything but what the rules deny (and the built-in blocked addresses). */
  public static EgressPolicy open(EgressRule... rules) {
    return new EgressPolicy(Mode.OPEN, List.of(rules));
  }

  /** A builder for a policy in the mode, to add rules to in order. */
  public static Builder builder(Mode mode) {
    return new Builder(mode);
  }

  /**
   * Decides a connection to {@code host} (a name or an IP literal, as the client wrote it) on
   * {@code port}, given the addresses the name resolved to (ignored for an IP literal).
   */
  public Decision decide(String host, int port, List<InetAddress> resolved) {
    HostNames.Host parsed;
    try {
      parsed = HostNames.parse(host);
    } catch (IllegalArgumentException e) {
      return Decision.deny(Decision.INVALID_HOST, null);
    }
    return decide(parsed, port, resolved);
  }

  Decision decide(HostNames.Host host, int port, List<InetAddress> resolved) {
    if (mode == Mode.OFF) {
      return Decision.deny(Decision.MODE_OFF, null);
    }
    List<InetAddress> addresses = host.isLiteral() ? List.of(host.literal()) : resolved;
    if (addresses.isEmpty()) {
      return Decision.deny(Decision.UNRESOLVABLE, null);
    }
    Decision first = null;
    for (InetAddress address : addresses) {
      Decision d = decideAddress(host, port, address);
      if (d.allowed()) {
        return d;
      }
      first = first == null ? d : first;
    }
    return first;
  }

  /**
   * Refuses what no address could let through, before the name is resolved (so a name that is
   * refused anyway is never looked up); empty when the addresses decide.
   */
  Optional<Decision> decideBeforeResolving(HostNames.Host host, int port) {
    if (mode == Mode.OFF) {
      return Optional.of(Decision.deny(Decision.MODE_OFF, null));
    }
    if (host.isLiteral()) {
      return Optional.empty();
    }
    for (EgressRule rule : rules) {
      if (rule.isAddressRule() && rule.matchesPort(port)) {
        return Optional.empty(); // an address rule ahead may decide, depending on the address
      }
      if (rule.matchesName(host.name(), port)) {
        return rule.isAllow() ? Optional.empty() : Optional.of(Decision.deny(rule.toString(), null));
      }
    }
    return mode == Mode.ALLOW_LIST ? Optional.of(Decision.deny(Decision.NO_RULE, null)) : Optional.empty();
  }

  private Decision decideAddress(HostNames.Host host, int port, InetAddress address) {
    EgressRule first = null;
    for (EgressRule rule : rules) {
      if (rule.matchesAddress(address, port) || (!host.isLiteral() && rule.matchesName(host.name(), port))) {
        first = rule;
        break;
      }
    }
    if (first != null && !first.isAllow()) {
      return Decision.deny(first.toString(), address);
    }
    if (BlockedRanges.isBlocked(address)) {
      for (EgressRule rule : rules) {
        if (rule.matchesAddress(address, port)) {
          return rule.isAllow() ? Decision.allow(rule.toString(), address) : Decision.deny(rule.toString(), address);
        }
      }
      return Decision.deny(Decision.PRIVATE_ADDRESS, address);
    }
    if (first != null) {
      return Decision.allow(first.toString(), address);
    }
    return mode == Mode.ALLOW_LIST ? Decision.deny(Decision.NO_RULE, address) : Decision.allow(Decision.MODE_OPEN, address);
  }

  /** Collects rules in order. */
  public static final class Builder {
    private final Mode mode;
    private final List<EgressRule> rules = new ArrayList<>();

    private Builder(Mode mode) {
      this.mode = Objects.requireNonNull(mode, "mode");
    }

    public Builder allow(String destination) {
      rules.add(EgressRule.allow(destination));
      return this;
    }

    public Builder deny(String destination) {
      rules.add(EgressRule.deny(destination));
      return this;
    }

    public Builder rule(EgressRule rule) {
      rules.add(Objects.requireNonNull(rule, "rule"));
      return this;
    }

    public EgressPolicy build() {
      return new EgressPolicy(mode, rules);
    }
  }
}
