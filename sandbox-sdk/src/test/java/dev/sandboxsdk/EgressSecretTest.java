package dev.sandboxsdk;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@link EgressSecret} checks what the agent's secrets file checks, and never shows the value. */
class EgressSecretTest {
  private static final String VALUE = "sk-live-0123456789abcdef";

  @Test
  void aValidSecretKeepsItsPartsAndCopiesTheHosts() {
    List<String> hosts = new ArrayList<>(List.of("api.example.com", "*.example.org:443"));
    EgressSecret s = new EgressSecret("API_KEY", VALUE, hosts, "X-Api-Key");
    hosts.add("later.example.com");

    assertThat(s.hosts()).containsExactly("api.example.com", "*.example.org:443");
    assertThat(s.header()).isEqualTo("X-Api-Key");
    assertThat(EgressSecret.of("API_KEY", VALUE, "api.example.com").header()).isNull();
    assertThat(EgressSecret.of("API_KEY", VALUE, "a.test").withHeader("Authorization").withoutHeader())
        .isEqualTo(EgressSecret.of("API_KEY", VALUE, List.of("a.test")));
  }

  @Test
  void toStringRedactsTheValue() {
    EgressSecret s = EgressSecret.of("API_KEY", VALUE, "api.example.com").withHeader("x-api-key");
    assertThat(s.toString()).isEqualTo("EgressSecret[name=API_KEY, value=***, hosts=[api.example.com], header=x-api-key]")
        .doesNotContain(VALUE);
  }

  @Test
  void namesAreVariableNamesTheAgentDoesNotSetItself() {
    for (String name : List.of("", "1KEY", "A-B", "A B", "x".repeat(129), "SANDBOX_KEY", "sandbox_x", "PATH", "home",
        "HTTPS_PROXY", "no_proxy", "SSL_CERT_FILE", "GIT_SSL_CAINFO", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS")) {
      assertThatThrownBy(() -> EgressSecret.of(name, VALUE, "a.test")).as(name)
          .isInstanceOf(IllegalArgumentException.class).hasMessageNotContaining(VALUE);
    }
    assertThatThrownBy(() -> EgressSecret.of("PATH", VALUE, "a.test")).hasMessageContaining("sets itself");
    assertThatCode(() -> EgressSecret.of("_k" + "x".repeat(126), VALUE, "a.test")).doesNotThrowAnyException();
  }

  @Test
  void valuesArePrintableAsciiWithinBoundsAndNeverInAMessage() {
    String secret = "s3cr3t-VALUE";
    List<String> bad = List.of("", " " + secret, secret + " ", secret + "\r\nX-Evil: 1", secret + "\n", secret + "\t",
        secret + "é", secret + "\u0000", "a".repeat(4097), "x-sandbox-secret-" + secret);
    for (String v : bad) {
      assertThatThrownBy(() -> EgressSecret.of("API_KEY", v, "a.test")).as("%s", v.length())
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("API_KEY")
          .satisfies(e -> assertThat(e.getMessage()).doesNotContain(secret).doesNotContain("aaaa"));
    }
    assertThatCode(() -> EgressSecret.of("API_KEY", "a".repeat(4096), "a.test")).doesNotThrowAnyException();
    assertThatCode(() -> EgressSecret.of("API_KEY", "Bearer x y", "a.test")).doesNotThrowAnyException();
    assertThatThrownBy(() -> EgressSecret.of("API_KEY", null, "a.test")).isInstanceOf(NullPointerException.class)
        .hasMessageContaining("unset environment variable");
  }

  @Test
  void hostsAreOneToThirtyTwoNamesNeverAddresses() {
    List<String> bad = List.of("", "a..b", "-a.test", "a.test:0", "a.test:65536", "a.test:x", "*.com", "*", "a.*.test",
        "127.0.0.1", "10.1", "0x7f.1", "[::1]", "::1", "[::1]:443", "2001:db8::1", "a test", "a/b", "x".repeat(64) + ".test");
    for (String h : bad) {
      assertThatThrownBy(() -> EgressSecret.of("API_KEY", VALUE, h)).as(h).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("API_KEY").hasMessageNotContaining(VALUE);
    }
    assertThatThrownBy(() -> EgressSecret.of("API_KEY", VALUE, "127.0.0.1")).hasMessageContaining("not to addresses");
    for (String h : List.of("api.example.com", "API.Example.COM.", "*.example.com", "a.test:443", "*.a.b:8443", "x_y.test",
        "localhost", "a1.test")) {
      assertThatCode(() -> EgressSecret.of("API_KEY", VALUE, h)).as(h).doesNotThrowAnyException();
    }
    assertThatThrownBy(() -> EgressSecret.of("API_KEY", VALUE)).hasMessageContaining("1 to 32 hosts, got 0");
    assertThatThrownBy(() -> EgressSecret.of("API_KEY", VALUE, Collections.nCopies(33, "a.test")))
        .hasMessageContaining("1 to 32 hosts, got 33");
    assertThatCode(() -> EgressSecret.of("API_KEY", VALUE, Collections.nCopies(32, "a.test"))).doesNotThrowAnyException();
    assertThatThrownBy(() -> EgressSecret.of("API_KEY", VALUE, java.util.Arrays.asList("a.test", null)))
        .isInstanceOf(NullPointerException.class).hasMessageContaining("hosts[1]");
  }

  @Test
  void theHeaderIsATokenTheProxyDoesNotSetItself() {
    EgressSecret s = EgressSecret.of("API_KEY", VALUE, "a.test");
    for (String h : List.of("", "X Api", "X:Api", "Host", "content-length", "Transfer-Encoding", "Connection",
        "Proxy-Authorization", "TE", "upgrade", "x".repeat(129))) {
      assertThatThrownBy(() -> s.withHeader(h)).as(h).isInstanceOf(IllegalArgumentException.class)
          .hasMessageNotContaining(VALUE);
    }
    assertThat(s.withHeader("Authorization").header()).isEqualTo("Authorization");
  }
}
