package dev.sandboxsdk;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** The rules {@link SandboxSpec.Builder#egressSecret} adds: a policy, distinct names and values, at most 64. */
class SandboxSpecSecretsTest {
  private static final EgressPolicy POLICY = EgressPolicy.allowList("api.example.com");

  private static EgressSecret secret(int i) {
    return EgressSecret.of("KEY_" + i, "value-" + i + "-0123456789", "api.example.com");
  }

  @Test
  void secretsAreKeptInOrderAndSurviveToBuilder() {
    SandboxSpec spec = SandboxSpec.builder().egressPolicy(POLICY).egressSecret(secret(1)).egressSecret(secret(2)).build();

    assertThat(spec.egressSecrets()).containsExactly(secret(1), secret(2));
    assertThat(spec.toBuilder().build().egressSecrets()).containsExactly(secret(1), secret(2));
    assertThat(SandboxSpec.defaults().egressSecrets()).isEmpty();
    assertThat(spec.toString()).contains("egressSecrets=[KEY_1, KEY_2]").doesNotContain("value-1");
  }

  @Test
  void secretsWithoutAPolicyAreRefusedAtBuild() {
    SandboxSpec.Builder b = SandboxSpec.builder().egressSecret(secret(1));
    assertThatThrownBy(b::build).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("egress secrets need an egress policy");
  }

  @Test
  void duplicateNamesAndValuesAndMoreThanSixtyFourAreRefused() {
    SandboxSpec.Builder b = SandboxSpec.builder().egressPolicy(POLICY).egressSecret(secret(1));
    assertThatThrownBy(() -> b.egressSecret(EgressSecret.of("KEY_1", "another-value-123", "a.test")))
        .isInstanceOf(IllegalArgumentException.class).hasMessage("egress secret KEY_1 is given twice");
    assertThatThrownBy(() -> b.egressSecret(EgressSecret.of("OTHER", "value-1-0123456789", "a.test")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("egress secret OTHER has the same value as egress secret KEY_1");
    for (int i = 2; i <= 64; i++) {
      b.egressSecret(secret(i));
    }
    assertThatThrownBy(() -> b.egressSecret(secret(65))).hasMessageContaining("at most 64 egress secrets");
    assertThat(b.build().egressSecrets()).hasSize(64);
    assertThatThrownBy(() -> b.egressSecret(null)).isInstanceOf(NullPointerException.class);
  }

  @Test
  void anEnvVariableOfASecretsNameIsRefused() {
    SandboxSpec.Builder b = SandboxSpec.builder().egressPolicy(POLICY).egressSecret(secret(1)).env("KEY_1", "x");
    assertThatThrownBy(b::build).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("env KEY_1 would give commands a value where egress secret KEY_1 gives them a placeholder");
  }
}
