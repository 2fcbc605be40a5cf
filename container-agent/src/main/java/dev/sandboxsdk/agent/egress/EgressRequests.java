package dev.sandboxsdk.agent.egress;

import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.http.Json;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * A policy as JSON, the one form both {@code --egress-policy FILE} and {@code PUT
 * /api/egress/policy} take: {@code {"mode":"allow-list","rules":["allow *.example.com:443",
 * "deny 10.0.0.0/8"]}}. {@code mode} is {@code off}, {@code allow-list} or {@code open}; {@code
 * rules}, optional, are {@link EgressRule}s as text, in order. Bounded: at most {@value
 * #MAX_RULES} rules of at most {@value #MAX_RULE_CHARS} characters each.
 */
public final class EgressRequests {
  /** The most rules a policy may have. */
  public static final int MAX_RULES = 1_000;
  /** The longest rule, in characters (a domain is at most 253). */
  public static final int MAX_RULE_CHARS = 512;
  /** The largest policy body accepted: room for {@value #MAX_RULES} ordinary rules. */
  public static final int MAX_BODY_BYTES = 256 * 1024;
  private static final Set<String> FIELDS = Set.of("mode", "rules");

  private EgressRequests() {}

  /**
   * The policy the JSON object describes.
   *
   * @throws AgentException VALIDATION_FAILED naming the field, or the rule and its index
   */
  public static EgressPolicy parse(Json body) {
    body.allowOnly(FIELDS);
    String mode = body.string("mode");
    if (mode == null) {
      throw AgentException.invalid("mode", "'mode' is required: off, allow-list or open");
    }
    List<String> texts = body.stringList("rules");
    texts = texts == null ? List.of() : texts;
    if (texts.size() > MAX_RULES) {
      throw new AgentException(ErrorCode.VALIDATION_FAILED, "a policy has at most " + MAX_RULES + " rules, got "
          + texts.size(), Map.of("field", "rules", "limit", MAX_RULES));
    }
    List<EgressRule> rules = new ArrayList<>(texts.size());
    for (int i = 0; i < texts.size(); i++) {
      rules.add(rule(texts.get(i), i));
    }
    return new EgressPolicy(mode(mode), rules);
  }

  private static EgressRule rule(String text, int index) {
    String field = "rules[" + index + "]";
    if (text.length() > MAX_RULE_CHARS) {
      throw new AgentException(ErrorCode.VALIDATION_FAILED, "rule " + index + " is longer than " + MAX_RULE_CHARS
          + " characters", Map.of("field", field));
    }
    try {
      return EgressRule.parse(text);
    } catch (IllegalArgumentException e) {
      throw new AgentException(ErrorCode.VALIDATION_FAILED, "invalid rule " + index + " '" + text + "': "
          + e.getMessage(), Map.of("field", field, "rule", text));
    }
  }

  /** {@code off}, {@code allow-list} or {@code open}. */
  static EgressPolicy.Mode mode(String name) {
    switch (name) {
      case "off":
        return EgressPolicy.Mode.OFF;
      case "allow-list":
        return EgressPolicy.Mode.ALLOW_LIST;
      case "open":
        return EgressPolicy.Mode.OPEN;
      default:
        throw AgentException.invalid("mode", "'mode' must be off, allow-list or open, got '" + name + "'");
    }
  }

  /** The wire name of a mode. */
  public static String name(EgressPolicy.Mode mode) {
    return mode.name().toLowerCase(Locale.ROOT).replace('_', '-');
  }

  /** The rules as text, in order. */
  static List<String> rules(EgressPolicy policy) {
    List<String> out = new ArrayList<>(policy.rules().size());
    for (EgressRule r : policy.rules()) {
      out.add(r.toString());
    }
    return out;
  }
}
