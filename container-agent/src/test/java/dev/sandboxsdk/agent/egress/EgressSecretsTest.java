package dev.sandboxsdk.agent.egress;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.security.cert.X509Certificate;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The secrets file's validation, the placeholder replacement, and the certificate authority. */
class EgressSecretsTest {
  static EgressSecrets parse(String json) {
    return SecretsFile.parse(json.getBytes(StandardCharsets.UTF_8));
  }

  static final EgressSecrets SECRETS = parse("[{\"name\":\"API_KEY\",\"value\":\"real-key-123\","
      + "\"hosts\":[\"api.test\",\"*.wild.test:443\"],\"header\":\"X-Api-Key\"},"
      + "{\"name\":\"TOKEN\",\"value\":\"tok en\",\"hosts\":[\"api.test:8443\"]}]");

  static String placeholder(String name) {
    return SECRETS.placeholders().get(name);
  }

  static List<String[]> headers(String... nameValues) {
    java.util.ArrayList<String[]> out = new java.util.ArrayList<>();
    for (int i = 0; i < nameValues.length; i += 2) {
      out.add(new String[] {nameValues[i], nameValues[i + 1]});
    }
    return out;
  }

  static HostNames.Host host(String name) {
    return HostNames.parse(name);
  }

  @Test
  void placeholdersAreUnguessableAndDistinct() {
    String a = placeholder("API_KEY");
    String b = placeholder("TOKEN");
    assertThat(a).matches("sandbox-secret-[0-9a-f]{32}");
    assertThat(b).matches("sandbox-secret-[0-9a-f]{32}").isNotEqualTo(a);
    assertThat(parse("[{\"name\":\"API_KEY\",\"value\":\"v\",\"hosts\":[\"a.test\"]}]").placeholders().get("API_KEY"))
        .as("a new placeholder per start").isNotEqualTo(a);
    assertThat(SECRETS.toString()).doesNotContain("real-key-123", "tok en");
  }

  @Test
  void aBoundHeaderGetsTheValueOnTheBoundHost() {
    EgressSecrets.Rewrite r = SECRETS.rewrite("/v1?x=1", headers("Host", "api.test", "x-api-key",
        "key " + placeholder("API_KEY")), host("api.test"), 443, true);
    assertThat(r.refused()).isFalse();
    assertThat(r.headers().get(1)[1]).isEqualTo("key real-key-123");
    assertThat(r.secrets()).containsExactly("API_KEY");
    assertThat(r.target()).isEqualTo("/v1?x=1");
    EgressSecrets.Rewrite wild = SECRETS.rewrite("/", headers("X-API-KEY", placeholder("API_KEY")),
        host("a.b.wild.test"), 443, true);
    assertThat(wild.headers().get(0)[1]).isEqualTo("real-key-123");
  }

  @Test
  void aSecretWithoutHeaderGoesInTheRequestLineAndAnyHeader() {
    EgressSecrets.Rewrite r = SECRETS.rewrite("/q?t=" + placeholder("TOKEN"), headers("Authorization",
        "Bearer " + placeholder("TOKEN")), host("api.test"), 8443, true);
    assertThat(r.target()).isEqualTo("/q?t=tok%20en");
    assertThat(r.headers().get(0)[1]).isEqualTo("Bearer tok en");
    assertThat(r.secrets()).containsExactly("TOKEN");
  }

  @Test
  void aPlaceholderAnywhereElseRefusesTheRequestNamingTheSecret() {
    EgressSecrets.Rewrite other = SECRETS.rewrite("/", headers("x-api-key", placeholder("API_KEY")),
        host("evil.test"), 443, true);
    assertThat(other.refusal()).isEqualTo(EgressSecrets.UNBOUND_HOST);
    assertThat(other.secrets()).containsExactly("API_KEY");
    assertThat(SECRETS.rewrite("/", headers("x-api-key", placeholder("API_KEY")), host("wild.test"), 443, true)
        .refusal()).as("*. is not the apex").isEqualTo(EgressSecrets.UNBOUND_HOST);
    assertThat(SECRETS.rewrite("/", headers("x-api-key", placeholder("API_KEY")), host("x.wild.test"), 8443, true)
        .refusal()).as("the port").isEqualTo(EgressSecrets.UNBOUND_HOST);
    assertThat(SECRETS.rewrite("/", headers("Authorization", placeholder("API_KEY")), host("api.test"), 443, true)
        .refusal()).isEqualTo(EgressSecrets.UNBOUND_HEADER);
    assertThat(SECRETS.rewrite("/?k=" + placeholder("API_KEY"), headers(), host("api.test"), 443, true).refusal())
        .isEqualTo(EgressSecrets.UNBOUND_HEADER);
    assertThat(SECRETS.rewrite("/", headers(placeholder("TOKEN"), "x"), host("api.test"), 8443, true).refusal())
        .isEqualTo(EgressSecrets.UNBOUND_HEADER);
    assertThat(SECRETS.rewrite("/", headers("x-api-key", placeholder("API_KEY")), host("api.test"), 80, false)
        .refusal()).isEqualTo(EgressSecrets.PLAIN_HTTP);
    assertThat(SECRETS.rewrite("/", headers("x-api-key", placeholder("API_KEY")), host("127.0.0.1"), 443, true)
        .refusal()).isEqualTo(EgressSecrets.UNBOUND_HOST);
    EgressSecrets.Rewrite none = SECRETS.rewrite("/", headers("x", "sandbox-secret-0000"), host("evil.test"), 80,
        false);
    assertThat(none.refused()).as("an unknown placeholder is just text").isFalse();
    assertThat(none.secrets()).isEmpty();
  }

  static String basic(String credentials) {
    return "Basic " + java.util.Base64.getEncoder().encodeToString(credentials.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void basicCredentialsAreLookedAtDecodedAndReEncoded() {
    EgressSecrets git = parse("[{\"name\":\"GIT_TOKEN\",\"value\":\"ghp_real:1\",\"hosts\":[\"git.test\"],"
        + "\"header\":\"Authorization\"},{\"name\":\"API_KEY\",\"value\":\"k\",\"hosts\":[\"git.test\"],"
        + "\"header\":\"X-Api-Key\"}]");
    String token = git.placeholders().get("GIT_TOKEN");
    EgressSecrets.Rewrite r = git.rewrite("/repo.git/info/refs", headers("Host", "git.test",
        "authorization", "basic  " + java.util.Base64.getEncoder().encodeToString(("x-access-token:" + token)
            .getBytes(StandardCharsets.UTF_8))), host("git.test"), 443, true);
    assertThat(r.refused()).isFalse();
    assertThat(r.secrets()).containsExactly("GIT_TOKEN");
    assertThat(r.headers().get(1)[1]).isEqualTo(basic("x-access-token:ghp_real:1"));

    assertThat(git.rewrite("/", headers("Authorization", basic("u:" + token)), host("evil.test"), 443, true))
        .as("encoded, to another host").returns(EgressSecrets.UNBOUND_HOST, EgressSecrets.Rewrite::refusal)
        .returns(List.of("GIT_TOKEN"), EgressSecrets.Rewrite::secrets);
    assertThat(git.rewrite("/", headers("Authorization", basic("u:" + token)), host("git.test"), 80, false).refusal())
        .as("encoded, over plain HTTP").isEqualTo(EgressSecrets.PLAIN_HTTP);
    assertThat(git.rewrite("/", headers("Authorization", basic("u:" + git.placeholders().get("API_KEY"))),
        host("git.test"), 443, true).refusal()).as("a secret bound to another header").isEqualTo(EgressSecrets.UNBOUND_HEADER);
    for (String other : new String[] {basic("user:no placeholder"), "Basic !!not-base64!!", "Bearer " + token}) {
      EgressSecrets.Rewrite plain = git.rewrite("/", headers("Authorization", other), host("git.test"), 443, true);
      assertThat(plain.refused()).as(other).isFalse();
      assertThat(plain.headers().get(0)[1]).as(other).isEqualTo(other.replace(token, "ghp_real:1"));
    }
  }

  @Test
  void theFileIsValidatedStrictlyNamingTheField() {
    String ok = "\"hosts\":[\"a.test\"]";
    assertThatThrownBy(() -> parse("[{\"name\":\"A\",\"value\":\"\"," + ok + "}]"))
        .hasMessage("secrets[0].value: empty");
    assertThatThrownBy(() -> parse("[{\"name\":\"A\",\"value\":\"x\\r\\ny\"," + ok + "}]"))
        .hasMessageStartingWith("secrets[0].value: contains CR or LF").hasMessageNotContaining("x");
    assertThatThrownBy(() -> parse("[{\"name\":\"A\",\"value\":\"x\"," + ok + "},{\"name\":\"A\",\"value\":\"y\","
        + ok + "}]")).hasMessage("secrets[1].name: duplicate name A");
    assertThatThrownBy(() -> parse("[{\"name\":\"A\",\"value\":\"x\",\"hosts\":[\"a..test\"]}]"))
        .hasMessageStartingWith("secrets[0].hosts[0]: invalid host 'a..test'");
    assertThatThrownBy(() -> parse("[{\"name\":\"A\",\"value\":\"x\",\"hosts\":[\"10.0.0.1\"]}]"))
        .hasMessageContaining("not to addresses");
    assertThatThrownBy(() -> parse("[{\"name\":\"A\",\"value\":\"x\",\"hosts\":[\"a.test:99999\"]}]"))
        .hasMessageContaining("invalid port");
    assertThatThrownBy(() -> parse("[{\"name\":\"A\",\"value\":\"x\",\"hosts\":[]}]"))
        .hasMessageStartingWith("secrets[0].hosts: required");
    assertThatThrownBy(() -> parse("[{\"name\":\"A-B\",\"value\":\"x\"," + ok + "}]"))
        .hasMessageStartingWith("secrets[0].name:");
    assertThatThrownBy(() -> parse("[{\"name\":\"HTTPS_PROXY\",\"value\":\"x\"," + ok + "}]"))
        .hasMessageContaining("the agent sets itself");
    assertThatThrownBy(() -> parse("[{\"name\":\"A\",\"value\":\"x\",\"header\":\"Host\"," + ok + "}]"))
        .hasMessageStartingWith("secrets[0].header:");
    assertThatThrownBy(() -> parse("[{\"name\":\"A\",\"value\":\"x\",\"extra\":1," + ok + "}]"))
        .hasMessageStartingWith("secrets[0].extra: unknown field");
    assertThatThrownBy(() -> parse("{\"name\":\"A\"}")).hasMessageContaining("expected a JSON list");
    assertThatThrownBy(() -> parse("[{\"name\":\"A\",\"value\":\"x\",\"value\":\"y\"," + ok + "}]"))
        .hasMessageContaining("not valid JSON");
    StringBuilder many = new StringBuilder("[");
    for (int i = 0; i <= SecretsFile.MAX_SECRETS; i++) {
      many.append(i == 0 ? "" : ",").append("{\"name\":\"S").append(i).append("\",\"value\":\"v").append(i)
          .append("\",").append(ok).append('}');
    }
    assertThatThrownBy(() -> parse(many.append(']').toString())).hasMessage("at most 64 secrets, got 65");
    assertThat(parse("[]").isEmpty()).isTrue();
  }

  @Test
  void theAuthorityIssuesVerifiableLeavesAndBoundsItsCache() throws Exception {
    CertificateAuthority ca = CertificateAuthority.create("Test CA");
    X509Certificate root = ca.certificate();
    root.verify(root.getPublicKey());
    assertThat(root.getBasicConstraints()).isEqualTo(0);
    X509Certificate leaf = ca.leafCertificate("api.example.test");
    leaf.verify(root.getPublicKey());
    leaf.checkValidity();
    assertThat(leaf.getSubjectAlternativeNames()).containsExactly(List.of(2, "api.example.test"));
    assertThat(leaf.getExtendedKeyUsage()).containsExactly("1.3.6.1.5.5.7.3.1");
    assertThat(leaf.getBasicConstraints()).isEqualTo(-1);
    assertThat(ca.leafCertificate("api.example.test")).as("cached").isSameAs(leaf);
    for (int i = 0; i < CertificateAuthority.MAX_CACHED + 40; i++) {
      ca.serverContext("h" + i + ".example.test");
    }
    assertThat(ca.cachedLeaves()).isEqualTo(CertificateAuthority.MAX_CACHED);
    assertThat(ca.pem()).startsWith("-----BEGIN CERTIFICATE-----\n").endsWith("-----END CERTIFICATE-----\n")
        .doesNotContain("PRIVATE");
  }
}
