package dev.sandboxsdk;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The egress policy value: factories, withers, and the cheap client-side checks. */
class EgressPolicyTest {

  @Test
  void factoriesAndWithersBuildRulesInOrder() {
    EgressPolicy p = EgressPolicy.allowList("*.pypi.org", "github.com:443").withDeny("10.0.0.0/8")
        .withRule("allow [2001:db8::/32]:443");

    assertThat(p.mode()).isEqualTo(EgressPolicy.Mode.ALLOW_LIST);
    assertThat(p.rules()).containsExactly("allow *.pypi.org", "allow github.com:443", "deny 10.0.0.0/8",
        "allow [2001:db8::/32]:443");
    assertThat(p.withMode(EgressPolicy.Mode.OPEN).rules()).isEqualTo(p.rules());
    assertThat(EgressPolicy.open()).isEqualTo(EgressPolicy.of(EgressPolicy.Mode.OPEN, List.of()));
    assertThat(EgressPolicy.off().withRules(List.of("allow a.test")).rules()).containsExactly("allow a.test");
  }

  @Test
  void modesHaveTheAgentsWireNames() {
    assertThat(EgressPolicy.Mode.ALLOW_LIST.wireName()).isEqualTo("allow-list");
    assertThat(EgressPolicy.Mode.fromWire("off")).isEqualTo(EgressPolicy.Mode.OFF);
    assertThat(EgressPolicy.Mode.fromWire("open")).isEqualTo(EgressPolicy.Mode.OPEN);
    assertThatThrownBy(() -> EgressPolicy.Mode.fromWire("ALLOW_LIST")).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void onlyWhatIsCertainlyWrongIsRefused() {
    for (String rule : List.of("", "allow", "permit a.test", "allow a.test b.test", "allow a\u0000.test",
        "allow " + "a".repeat(EgressPolicy.MAX_RULE_CHARS))) {
      assertThatThrownBy(() -> EgressPolicy.open().withRule(rule)).as(rule).isInstanceOf(IllegalArgumentException.class);
    }
    for (String destination : List.of("", "a b", "a\tb", "x\n")) {
      assertThatThrownBy(() -> EgressPolicy.allowList(destination)).as(destination)
          .isInstanceOf(IllegalArgumentException.class);
    }
    // The agent is the authority on destinations: these reach it (and it refuses the second).
    assertThat(EgressPolicy.open().withRule("  DENY   a.test ").rules()).hasSize(1);
    assertThat(EgressPolicy.allowList("*.example..com").rules()).containsExactly("allow *.example..com");
    assertThatThrownBy(() -> EgressPolicy.open().withRule(null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> EgressPolicy.of(null, List.of())).isInstanceOf(NullPointerException.class);
  }

  @Test
  void atMostAThousandRules() {
    List<String> rules = new ArrayList<>(Collections.nCopies(EgressPolicy.MAX_RULES, "deny a.test"));
    assertThat(EgressPolicy.of(EgressPolicy.Mode.OPEN, rules).rules()).hasSize(EgressPolicy.MAX_RULES);
    rules.add("deny b.test");
    assertThatThrownBy(() -> EgressPolicy.of(EgressPolicy.Mode.OPEN, rules)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("at most 1000");
  }

  @Test
  void aNullRuleIsNamedByItsIndex() {
    assertThatThrownBy(() -> EgressPolicy.of(EgressPolicy.Mode.OPEN, java.util.Arrays.asList("deny a.test", null)))
        .isInstanceOf(NullPointerException.class).hasMessage("rules[1] == null");
  }

  @Test
  void rulesThatWouldOverflowTheAgentsBodyBoundAreRefused() {
    String longRule = "deny " + "a".repeat(EgressPolicy.MAX_RULE_CHARS - 10) + ".test";
    List<String> rules = new ArrayList<>(Collections.nCopies(500, longRule)); // about 256 KB of JSON
    assertThat(EgressPolicy.of(EgressPolicy.Mode.OPEN, rules).rules()).hasSize(500);
    rules.addAll(Collections.nCopies(20, longRule));
    assertThatThrownBy(() -> EgressPolicy.of(EgressPolicy.Mode.OPEN, rules)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("bytes of JSON").hasMessageContaining(String.valueOf(EgressPolicy.MAX_JSON_BYTES));
  }

  @Test
  void rulesAreCopied() {
    List<String> rules = new ArrayList<>(List.of("allow a.test"));
    EgressPolicy p = EgressPolicy.of(EgressPolicy.Mode.ALLOW_LIST, rules);
    rules.add("allow b.test");
    assertThat(p.rules()).containsExactly("allow a.test");
  }

  @Test
  void theSpecCarriesThePolicy() {
    SandboxSpec spec = SandboxSpec.builder().egressPolicy(EgressPolicy.allowList("a.test")).build();
    assertThat(spec.egressPolicy()).isEqualTo(EgressPolicy.allowList("a.test"));
    assertThat(spec.toBuilder().build().egressPolicy()).isEqualTo(spec.egressPolicy());
    assertThat(spec.toString()).contains("egress=allow-list with 1 rules");
    assertThat(SandboxSpec.defaults().egressPolicy()).isNull();
  }
}
