package dev.sandboxsdk;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * What a sandbox's commands may connect to through its egress proxy: a {@link Mode} and ordered
 * rules in the agent's syntax (docs/protocol/egress.md). The first rule that matches a connection
 * decides; what no rule matches is refused in {@link Mode#ALLOW_LIST} and let through in
 * {@link Mode#OPEN}. Private, loopback, link-local and metadata addresses are refused in every
 * mode unless an address rule covers them ({@code allow 127.0.0.1/32}).
 *
 * <pre>{@code
 * EgressPolicy p = EgressPolicy.allowList("pypi.org:443", "files.pythonhosted.org:443")
 *     .withDeny("evil.example.com");        // appended: rules are read in order
 * }</pre>
 *
 * <p>A rule is {@code allow} or {@code deny}, one space, and a destination: {@code example.com},
 * {@code *.example.com} (any name under it, not the apex), an IPv4 address or CIDR block as dotted
 * quads, an IPv6 address or block, each optionally with {@code :port} or {@code :from-to} (an IPv6
 * block with a port in brackets: {@code [2001:db8::/32]:443}). This record checks only what is
 * certainly wrong (the shape {@code allow|deny DESTINATION}, the length, the count); the agent is
 * the authority on the destination and refuses a bad one with {@link SandboxInvalidRequestException}
 * ({@code VALIDATION_FAILED}, naming the rule). Immutable and thread-safe.
 *
 * @param mode what happens to a connection no rule matches
 * @param rules the rules in order, as text ({@code "allow *.example.com:443"})
 */
public record EgressPolicy(Mode mode, List<String> rules) {
  /** The most rules a policy may have (the agent's limit). */
  public static final int MAX_RULES = 1_000;
  /** The longest rule, in characters (the agent's limit). */
  public static final int MAX_RULE_CHARS = 512;
  /** The largest policy as the JSON the agent reads, in bytes (the agent's limit on its body and file). */
  public static final int MAX_JSON_BYTES = 256 * 1024;

  /** What a policy does with a connection that no rule matches. */
  public enum Mode {
    /** Nothing goes out, whatever the rules say. */
    OFF,
    /** Only what a rule allows goes out. */
    ALLOW_LIST,
    /** Everything goes out but what a rule denies (and the built-in blocked addresses). */
    OPEN;

    /** The wire name: {@code off}, {@code allow-list} or {@code open}. */
    public String wireName() {
      return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    /**
     * Parses a {@link #wireName()}.
     *
     * @throws IllegalArgumentException if it is none of them
     */
    public static Mode fromWire(String text) {
      Objects.requireNonNull(text, "text == null");
      for (Mode m : values()) {
        if (m.wireName().equals(text)) {
          return m;
        }
      }
      throw new IllegalArgumentException("not an egress mode: '" + text + "' (off, allow-list or open)");
    }
  }

  /**
   * Validates and copies.
   *
   * @throws NullPointerException if {@code mode}, {@code rules} or a rule is null (the message
   *     names its index)
   * @throws IllegalArgumentException if a rule is not {@code allow|deny DESTINATION}, is longer
   *     than {@value #MAX_RULE_CHARS} characters or has control characters, there are more
   *     than {@value #MAX_RULES}, or together they come to more than {@value #MAX_JSON_BYTES}
   *     bytes of JSON
   */
  public EgressPolicy {
    Objects.requireNonNull(mode, "mode == null");
    Objects.requireNonNull(rules, "rules == null");
    rules = new ArrayList<>(rules); // one snapshot, so a list changed meanwhile is checked as it is kept
    if (rules.size() > MAX_RULES) {
      throw new IllegalArgumentException("a policy has at most " + MAX_RULES + " rules, got " + rules.size());
    }
    long jsonBytes = 40; // {"mode":"allow-list","rules":[]}
    for (int i = 0; i < rules.size(); i++) {
      checkRule(rules.get(i), i);
      jsonBytes += jsonBytes(rules.get(i)) + 3; // quotes and comma
    }
    if (jsonBytes > MAX_JSON_BYTES) {
      throw new IllegalArgumentException("the rules come to " + jsonBytes + " bytes of JSON; the agent reads at most "
          + MAX_JSON_BYTES);
    }
    rules = List.copyOf(rules);
  }

  /** A policy of this mode and these rules. */
  public static EgressPolicy of(Mode mode, List<String> rules) {
    return new EgressPolicy(mode, rules);
  }

  /** Only these destinations ({@code "*.pypi.org"}, {@code "github.com:443"}, ...), each as an {@code allow} rule. */
  public static EgressPolicy allowList(String... destinations) {
    EgressPolicy p = new EgressPolicy(Mode.ALLOW_LIST, List.of());
    for (String d : destinations) {
      p = p.withAllow(d);
    }
    return p;
  }

  /** Everything but the built-in blocked addresses; add {@link #withDeny(String)} rules to refuse more. */
  public static EgressPolicy open() {
    return new EgressPolicy(Mode.OPEN, List.of());
  }

  /** Nothing goes out (until the policy is {@linkplain SandboxEgress#update updated}). */
  public static EgressPolicy off() {
    return new EgressPolicy(Mode.OFF, List.of());
  }

  /** This policy with another mode, the same rules. */
  public EgressPolicy withMode(Mode mode) {
    return new EgressPolicy(mode, rules);
  }

  /** This policy with these rules instead of its own. */
  public EgressPolicy withRules(List<String> rules) {
    return new EgressPolicy(mode, rules);
  }

  /** This policy with {@code rule} ({@code "deny 10.0.0.0/8"}) appended: it decides after the others. */
  public EgressPolicy withRule(String rule) {
    List<String> more = new ArrayList<>(rules);
    more.add(Objects.requireNonNull(rule, "rule == null"));
    return new EgressPolicy(mode, more);
  }

  /** This policy with {@code allow DESTINATION} appended. */
  public EgressPolicy withAllow(String destination) {
    return withRule("allow " + destination(destination));
  }

  /** This policy with {@code deny DESTINATION} appended. */
  public EgressPolicy withDeny(String destination) {
    return withRule("deny " + destination(destination));
  }

  private static String destination(String destination) {
    Objects.requireNonNull(destination, "destination == null");
    if (destination.isEmpty() || destination.chars().anyMatch(c -> Character.isWhitespace(c) || c < ' ' || c == 0x7f)) {
      throw new IllegalArgumentException("not a destination: '" + destination + "' (example.com, *.example.com,"
          + " 10.0.0.0/8, each optionally with :port or :from-to)");
    }
    return destination;
  }

  /** The bytes of {@code text} in a JSON string: UTF-8, quote, backslash and tab escaped. */
  private static long jsonBytes(String text) {
    long n = 0;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      n += c == '"' || c == '\\' || c == '\t' ? 2 : c < 0x80 ? 1 : c < 0x800 || Character.isSurrogate(c) ? 2 : 3;
    }
    return n;
  }

  private static void checkRule(String rule, int index) {
    Objects.requireNonNull(rule, "rules[" + index + "] == null");
    if (rule.length() > MAX_RULE_CHARS) {
      throw new IllegalArgumentException("rule " + index + " is longer than " + MAX_RULE_CHARS + " characters");
    }
    if (rule.chars().anyMatch(c -> c < ' ' && c != '\t' || c == 0x7f)) {
      throw new IllegalArgumentException("rule " + index + " has control characters");
    }
    String[] parts = rule.trim().split("\\s+");
    if (parts.length != 2 || !parts[0].equalsIgnoreCase("allow") && !parts[0].equalsIgnoreCase("deny")) {
      throw new IllegalArgumentException("rule " + index + " is not 'allow|deny DESTINATION': '" + rule + "'");
    }
  }
}
