package dev.sandboxsdk;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Instant;
import okhttp3.mockwebserver.MockResponse;
import okhttp3.mockwebserver.RecordedRequest;
import org.junit.jupiter.api.Test;

/** The SDK's session calls against the golden answers of docs/protocol/session-*.json. */
class RealSessionsTest extends MockAgentTest {

  @Test
  void createSendsTheOptionsAndReadsTheSession() throws Exception {
    server.enqueue(Fixtures.json(Fixtures.read("session-create-response.json")));

    Session s = sandbox.sessions().create(SessionOptions.defaults().withId("build").withCwd("app").withEnv("A", "1"));
    assertThat(s.id()).isEqualTo("build");
    RecordedRequest request = server.takeRequest();
    assertThat(request.getMethod()).isEqualTo("POST");
    assertThat(request.getPath()).isEqualTo("/api/sessions");
    assertThat(Fixtures.body(request)).isEqualTo(Fixtures.parse("{\"id\":\"build\",\"cwd\":\"app\",\"env\":{\"A\":\"1\"}}"));
  }

  @Test
  void aSessionsCommandsCarryItsIdAndNothingElseChanges() throws Exception {
    server.enqueue(Fixtures.json(Fixtures.read("session-create-response.json")));
    server.enqueue(Fixtures.json(Fixtures.read("execute-response.json")));
    server.enqueue(Fixtures.json(Fixtures.read("execute-response.json")));

    Session s = sandbox.sessions().create();
    server.takeRequest();
    s.exec("echo hi");
    assertThat(Fixtures.body(server.takeRequest()).get("sessionId").asText()).isEqualTo("build");
    sandbox.exec("echo hi");
    assertThat(Fixtures.body(server.takeRequest()).has("sessionId")).isFalse();
  }

  @Test
  void listReadsEverySession() throws Exception {
    server.enqueue(Fixtures.json(Fixtures.read("session-list-response.json")));

    assertThat(sandbox.sessions().list()).containsExactly(new SessionInfo("build",
        Instant.parse("2026-12-07T21:56:18.671325717Z"), Instant.parse("2026-12-07T21:56:18.886381165Z"), 2, true));
    assertThat(server.takeRequest().getPath()).isEqualTo("/api/sessions");
  }

  @Test
  void getIsEmptyForAnUnknownSessionAndDeleteSaysItIsGone() throws Exception {
    server.enqueue(new MockResponse().setResponseCode(404).setHeader("Content-Type", "application/json")
        .setBody(Fixtures.read("session-error-response.json")));
    server.enqueue(new MockResponse().setResponseCode(404).setHeader("Content-Type", "application/json")
        .setBody(Fixtures.read("session-error-response.json")));

    assertThat(sandbox.sessions().get("build")).isEmpty();
    assertThat(server.takeRequest().getPath()).isEqualTo("/api/sessions/build");
    assertThatThrownBy(() -> sandbox.sessions().delete("build"))
        .isInstanceOf(SandboxNotFoundException.class)
        .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo("SESSION_NOT_FOUND"));
    RecordedRequest delete = server.takeRequest();
    assertThat(delete.getMethod()).isEqualTo("DELETE");
    assertThat(delete.getPath()).isEqualTo("/api/sessions/build");
  }

  @Test
  void closeDeletesOnceAndToleratesAGoneSession() throws Exception {
    server.enqueue(Fixtures.json(Fixtures.read("session-create-response.json")));
    server.enqueue(new MockResponse().setResponseCode(404).setHeader("Content-Type", "application/json")
        .setBody(Fixtures.read("session-error-response.json")));

    Session s = sandbox.sessions().create();
    s.close();
    s.close();
    assertThat(server.getRequestCount()).isEqualTo(2);
  }
}
