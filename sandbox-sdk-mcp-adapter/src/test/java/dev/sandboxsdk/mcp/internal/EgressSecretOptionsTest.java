package dev.sandboxsdk.mcp.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandboxsdk.EgressSecret;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code --egress-secret NAME[=ENV]@HOST[,HOST...][#HEADER]}: parsed, checked, values from the environment only. */
class EgressSecretOptionsTest {
  private static final String VALUE = "sk-ant-0123456789abcdef";
  private static final Map<String, String> ENV = Map.of("ANTHROPIC_API_KEY", VALUE, "GH", "ghp_0123456789abcdef",
      "SANDBOX_MCP_TOKEN", "mcp-token-123", "SAME", VALUE);

  @TempDir
  Path tmp;
  private Path policy;

  @BeforeEach
  void policyFile() throws IOException {
    policy = Files.writeString(tmp.resolve("policy.json"), "{\"mode\":\"allow-list\",\"rules\":[\"allow api.anthropic.com\"]}");
  }

  private AdapterConfig parse(String... args) {
    List<String> all = new ArrayList<>(List.of("--egress-policy", policy.toString()));
    all.addAll(List.of(args));
    return AdapterConfig.parse(all.toArray(String[]::new), ENV);
  }

  @Test
  void aSecretTakesItsValueFromTheServersEnvironment() {
    AdapterConfig c = parse("--egress-secret", "ANTHROPIC_API_KEY@api.anthropic.com#x-api-key",
        "--egress-secret", "GH_TOKEN=GH@api.github.com,*.githubusercontent.com:443");

    assertThat(c.egressSecrets()).containsExactly(
        EgressSecret.of("ANTHROPIC_API_KEY", VALUE, "api.anthropic.com").withHeader("x-api-key"),
        EgressSecret.of("GH_TOKEN", "ghp_0123456789abcdef", "api.github.com", "*.githubusercontent.com:443"));
    assertThat(c.toString()).contains("egressSecrets=[ANTHROPIC_API_KEY, GH_TOKEN]").doesNotContain(VALUE);
    assertThat(SandboxTools.secrets(c)).as("redacted from output").containsEntry("ANTHROPIC_API_KEY", VALUE);
    assertThat(AdapterConfig.defaults().egressSecrets()).isEmpty();
  }

  @Test
  void mistakesAreUsageErrorsThatNameTheOptionAndNeverTheValue() {
    Map<String, String> bad = new java.util.LinkedHashMap<>();
    bad.put("ANTHROPIC_API_KEY", "expected NAME[=ENV]@HOST");
    bad.put("ANTHROPIC_API_KEY@", "expected NAME[=ENV]@HOST");
    bad.put("@api.anthropic.com", "expected NAME[=ENV]@HOST");
    bad.put("MISSING@a.test", "the variable MISSING is not set in the server's environment");
    bad.put("K=not-a-var@a.test", "'not-a-var' is not an environment variable name");
    bad.put("K=SANDBOX_MCP_TOKEN@a.test", "the server's own token is never a secret");
    bad.put("PATH=ANTHROPIC_API_KEY@a.test", "a variable the agent sets itself");
    bad.put("ANTHROPIC_API_KEY@127.0.0.1", "not to addresses");
    bad.put("ANTHROPIC_API_KEY@a.test,", "invalid host ''");
    bad.put("ANTHROPIC_API_KEY@a.test#Host", "the proxy sets or drops Host itself");
    for (Map.Entry<String, String> e : bad.entrySet()) {
      assertThatThrownBy(() -> parse("--egress-secret", e.getKey())).as(e.getKey())
          .isInstanceOf(AdapterConfig.UsageException.class)
          .hasMessageStartingWith("--egress-secret " + e.getKey() + ": ").hasMessageContaining(e.getValue())
          .hasMessageNotContaining(VALUE);
    }
    assertThatThrownBy(() -> parse("--egress-secret", "ANTHROPIC_API_KEY@a.test", "--egress-secret", "K=SAME@b.test"))
        .hasMessageContaining("egress secret K has the same value as egress secret ANTHROPIC_API_KEY")
        .hasMessageNotContaining(VALUE);
    assertThatThrownBy(() -> parse("--egress-secret", "ANTHROPIC_API_KEY@a.test", "--egress-secret",
        "ANTHROPIC_API_KEY=GH@b.test")).hasMessageContaining("given twice");
  }

  @Test
  void aSecretNeedsAPolicyAProviderAndNoPassEnvOfItsValue() {
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--egress-secret", "ANTHROPIC_API_KEY@a.test"}, ENV))
        .isInstanceOf(AdapterConfig.UsageException.class)
        .hasMessage("--egress-secret ANTHROPIC_API_KEY@... needs --egress-policy: the proxy that puts secrets into"
            + " requests runs only with a policy, which must allow the secrets' hosts");
    for (String provider : new String[] {"container", "kubernetes"}) {
      assertThat(AdapterConfig.parse(new String[] {"--provider", provider, "--egress-policy", policy.toString(),
          "--egress-secret", "ANTHROPIC_API_KEY@a.test"}, ENV).egressSecrets()).as(provider)
          .extracting(dev.sandboxsdk.EgressSecret::name).containsExactly("ANTHROPIC_API_KEY");
    }
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--agent-url", "http://a.test:1", "--egress-secret",
        "ANTHROPIC_API_KEY@a.test"}, Map.of("SANDBOX_AGENT_TOKEN", "t", "ANTHROPIC_API_KEY", VALUE)))
        .hasMessageContaining("not to a remote agent (it has its own --egress-secrets)");
    assertThatThrownBy(() -> parse("--pass-env", "ANTHROPIC_API_KEY", "--egress-secret", "ANTHROPIC_API_KEY@a.test"))
        .hasMessageContaining("--pass-env ANTHROPIC_API_KEY conflicts with --egress-secret ANTHROPIC_API_KEY");
    assertThatThrownBy(() -> parse("--pass-env", "GH", "--egress-secret", "GH_TOKEN=GH@a.test"))
        .hasMessageContaining("the value the secret keeps out of the sandbox");
  }
}
