package dev.sandboxsdk;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Instant;
import java.util.List;
import okhttp3.mockwebserver.RecordedRequest;
import org.junit.jupiter.api.Test;

/** The SDK's egress calls against the golden answers of docs/protocol/egress-*.json. */
class RealEgressTest extends MockAgentTest {
  private static final EgressPolicy FIXTURE_POLICY = EgressPolicy.of(EgressPolicy.Mode.ALLOW_LIST,
      List.of("deny denied.test", "allow allowed.test:80", "allow 127.0.0.1/32"));

  @Test
  void policyReadsTheModeAndRules() throws Exception {
    server.enqueue(Fixtures.json(Fixtures.read("egress-policy-response.json")));

    assertThat(sandbox.egress().policy()).isEqualTo(FIXTURE_POLICY);
    RecordedRequest request = server.takeRequest();
    assertThat(request.getMethod()).isEqualTo("GET");
    assertThat(request.getPath()).isEqualTo("/api/egress/policy");
  }

  @Test
  void updatePutsThePolicyAsTheAgentReadsItAndReturnsTheAnswer() throws Exception {
    server.enqueue(Fixtures.json(Fixtures.read("egress-policy-response.json")));

    EgressPolicy sent = EgressPolicy.allowList("allowed.test:80", "127.0.0.1/32").withRules(FIXTURE_POLICY.rules());
    assertThat(sandbox.egress().update(sent)).isEqualTo(FIXTURE_POLICY);
    RecordedRequest request = server.takeRequest();
    assertThat(request.getMethod()).isEqualTo("PUT");
    assertThat(request.getPath()).isEqualTo("/api/egress/policy");
    assertThat(Fixtures.body(request)).isEqualTo(Fixtures.parse(
        "{\"mode\":\"allow-list\",\"rules\":[\"deny denied.test\",\"allow allowed.test:80\",\"allow 127.0.0.1/32\"]}"));
  }

  @Test
  void anEmptyPolicyStillSendsItsRules() throws Exception {
    server.enqueue(Fixtures.json("{\"mode\":\"off\",\"rules\":[],\"proxyUrl\":\"http://127.0.0.1:1\",\"success\":true}"));

    assertThat(sandbox.egress().update(EgressPolicy.off())).isEqualTo(EgressPolicy.off());
    assertThat(Fixtures.body(server.takeRequest())).isEqualTo(Fixtures.parse("{\"mode\":\"off\",\"rules\":[]}"));
  }

  @Test
  void aRefusedRuleIsAValidationErrorNamingIt() {
    server.enqueue(Fixtures.json(400, Fixtures.read("egress-policy-error-response.json")));

    assertThatThrownBy(() -> sandbox.egress().update(EgressPolicy.allowList("*.example..com")))
        .isExactlyInstanceOf(SandboxInvalidRequestException.class)
        .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo("VALIDATION_FAILED"))
        .satisfies(e -> assertThat(((SandboxException) e).context())
            .containsEntry("field", "rules[2]").containsEntry("rule", "allow *.example..com"));
  }

  @Test
  void eventsReadEveryFieldOfTheFixture() throws Exception {
    server.enqueue(Fixtures.json(Fixtures.read("egress-events-response.json")));

    EgressEventPage page = sandbox.egress().events(0, 100);

    assertThat(page.lastSequence()).isEqualTo(2);
    assertThat(page.more()).isFalse();
    assertThat(page.events()).containsExactly(
        new EgressEvent(1, Instant.parse("2026-12-07T15:00:07.956209780Z"), "allowed.test", 18080, "127.0.0.1", true,
            "allow 127.0.0.1/32", 101, 1216, Instant.parse("2026-12-07T15:00:07.978406528Z"), "closed"),
        new EgressEvent(2, Instant.parse("2026-12-07T15:00:07.986592037Z"), "denied.test", 18080, null, false,
            "deny denied.test", 0, 0, Instant.parse("2026-12-07T15:00:07.997626499Z"), "refused"));
    assertThat(server.takeRequest().getPath()).isEqualTo("/api/egress/events?since=0&limit=100");
  }

  @Test
  void anAgentWithoutEgressSaysSoWithItsOwnException() {
    String body = Fixtures.error(404, "NOT_FOUND", "egress is not enabled on this agent: start it with --egress-policy"
        + " FILE", "{}");
    for (int i = 0; i < 3; i++) {
      server.enqueue(Fixtures.json(404, body));
    }

    for (Runnable call : List.<Runnable>of(() -> sandbox.egress().policy(),
        () -> sandbox.egress().update(EgressPolicy.open()), () -> sandbox.egress().events(0, 1))) {
      assertThatThrownBy(call::run).isExactlyInstanceOf(EgressNotEnabledException.class)
          .isInstanceOf(SandboxNotFoundException.class)
          .hasMessageContaining("egress is not enabled for this sandbox")
          .satisfies(e -> assertThat(((SandboxException) e).httpStatus()).isEqualTo(404));
    }
  }

  @Test
  void anAgentTooOldForTheRoutesIsTreatedAsWithoutEgress() {
    server.enqueue(Fixtures.json(404, Fixtures.error(404, "NOT_FOUND", "no such endpoint: /api/egress/policy",
        "{\"path\":\"/api/egress/policy\"}")));

    assertThatThrownBy(() -> sandbox.egress().policy()).isExactlyInstanceOf(EgressNotEnabledException.class);
  }

  @Test
  void malformedAnswersNameTheField() {
    List<String> policies = List.of("{\"rules\":[]}", "{\"mode\":\"closed\",\"rules\":[]}", "{\"mode\":\"open\"}",
        "{\"mode\":\"open\",\"rules\":[1]}", "{\"mode\":\"open\",\"rules\":[\"permit x\"]}", "[]");
    for (String p : policies) {
      server.enqueue(Fixtures.json(p));
      assertThatThrownBy(() -> sandbox.egress().policy()).as(p).isExactlyInstanceOf(SandboxException.class)
          .hasMessageContaining("malformed");
    }
    String event = "{\"sequence\":1,\"time\":\"2026-12-07T15:00:07Z\",\"host\":\"a.test\",\"port\":80,"
        + "\"address\":null,\"allowed\":false,\"rule\":\"no-rule\",\"bytesUp\":0,\"bytesDown\":0,"
        + "\"closedAt\":\"2026-12-07T15:00:07Z\",\"outcome\":\"refused\"}";
    List<String> pages = List.of("{\"lastSequence\":1,\"more\":false}",
        "{\"events\":[" + event + "],\"more\":false}",
        "{\"events\":[" + event + "],\"lastSequence\":1}",
        "{\"events\":[" + event.replace("\"allowed\":false", "\"allowed\":\"no\"") + "],\"lastSequence\":1,\"more\":false}",
        "{\"events\":[" + event.replace("\"port\":80,", "") + "],\"lastSequence\":1,\"more\":false}",
        "{\"events\":[" + event.replace("\"time\":\"2026-12-07T15:00:07Z\"", "\"time\":\"yesterday\"")
            + "],\"lastSequence\":1,\"more\":false}",
        "{\"events\":[" + event.replace("\"address\":null", "\"address\":7") + "],\"lastSequence\":1,\"more\":false}",
        "{\"events\":[" + event.replace("\"outcome\"", "\"secrets\":\"API_KEY\",\"outcome\"")
            + "],\"lastSequence\":1,\"more\":false}",
        "{\"events\":[" + event.replace("\"outcome\"", "\"secrets\":[1],\"outcome\"")
            + "],\"lastSequence\":1,\"more\":false}",
        "{\"events\":[3],\"lastSequence\":1,\"more\":false}");
    for (String p : pages) {
      server.enqueue(Fixtures.json(p));
      assertThatThrownBy(() -> sandbox.egress().events(0, 10)).as(p).isExactlyInstanceOf(SandboxException.class)
          .hasMessageContaining("malformed");
    }
  }

  @Test
  void unknownFieldsAreToleratedAndAnAbsentAddressIsNull() {
    server.enqueue(Fixtures.json("{\"events\":[{\"sequence\":7,\"time\":\"2026-12-07T15:00:07Z\",\"host\":\"a.test\","
        + "\"port\":443,\"allowed\":false,\"rule\":\"mode-off\",\"bytesUp\":0,\"bytesDown\":0,"
        + "\"closedAt\":\"2026-12-07T15:00:07Z\",\"outcome\":\"refused\",\"newField\":1}],\"lastSequence\":9,"
        + "\"more\":true,\"other\":{}}"));

    EgressEventPage page = sandbox.egress().events(5, 1);
    assertThat(page.events()).singleElement().satisfies(e -> assertThat(e.address()).isNull())
        .satisfies(e -> assertThat(e.secrets()).as("absent: none").isEmpty());
    assertThat(page.more()).isTrue();
    assertThat(page.lastSequence()).isEqualTo(9);
  }

  @Test
  void badArgumentsAreRefusedBeforeAnyRequest() {
    assertThatThrownBy(() -> sandbox.egress().events(-1, 1)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> sandbox.egress().events(0, 0)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> sandbox.egress().update(null)).isInstanceOf(NullPointerException.class);
    assertThat(server.getRequestCount()).isZero();
  }

  @Test
  void aLimitAboveTheAgentsIsSentAsItIsForTheAgentToLower() throws Exception {
    server.enqueue(Fixtures.json(Fixtures.read("egress-events-response.json")));

    assertThat(sandbox.egress().events(0, Integer.MAX_VALUE).events()).hasSize(2);
    assertThat(server.takeRequest().getRequestUrl().query()).isEqualTo("since=0&limit=2147483647");
  }

  @Test
  void eventsNameTheSecretsARequestCarriedAndANullListIsEmpty() {
    String event = "{\"sequence\":%d,\"time\":\"2026-12-07T15:00:07Z\",\"host\":\"secret.test\",\"port\":443,"
        + "\"address\":\"127.0.0.1\",\"allowed\":%s,\"rule\":\"%s\",\"bytesUp\":10,\"bytesDown\":20,"
        + "\"closedAt\":\"2026-12-07T15:00:08Z\",\"outcome\":\"%s\",\"secrets\":%s}";
    server.enqueue(Fixtures.json("{\"events\":[" + String.format(event, 1, true, "allow secret.test", "closed",
        "[\"API_KEY\",\"GH_TOKEN\"]") + "," + String.format(event, 2, false, "secret-to-unbound-host", "refused",
        "null") + "," + String.format(event, 3, true, "allow secret.test", "tls-failed", "[]")
        + "],\"lastSequence\":3,\"more\":false}"));

    List<EgressEvent> events = sandbox.egress().events(0, 10).events();

    assertThat(events).extracting(EgressEvent::secrets).containsExactly(List.of("API_KEY", "GH_TOKEN"), List.of(),
        List.of());
    assertThat(events.get(2).outcome()).isEqualTo("tls-failed");
    assertThatThrownBy(() -> events.get(0).secrets().add("X")).isInstanceOf(UnsupportedOperationException.class);
  }
}
