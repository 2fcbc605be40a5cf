package dev.sandboxsdk;

import static dev.sandboxsdk.Fixtures.eventStream;
import static dev.sandboxsdk.Fixtures.sse;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Arrays;
import okhttp3.mockwebserver.RecordedRequest;
import org.junit.jupiter.api.Test;

/** The SDK's code context calls against the golden captures of docs/protocol (code-*, context-*). */
class RealCodeTest extends MockAgentTest {

  private CodeContext created() throws Exception {
    server.enqueue(Fixtures.json(Fixtures.read("context-create-response.json")));
    CodeContext c = sandbox.code().createContext(CodeContextOptions.of(CodeLanguage.PYTHON).withEnv("PATH", "/usr/bin"));
    RecordedRequest request = server.takeRequest();
    assertThat(request.getPath()).isEqualTo("/api/contexts");
    assertThat(Fixtures.body(request)).isEqualTo(Fixtures.parse(
        "{\"language\":\"python\",\"env_vars\":{\"PATH\":\"/usr/bin\"}}"));
    return c;
  }

  @Test
  void createThenRunCollectsOutputValueAndCompletion() throws Exception {
    CodeContext c = created();
    assertThat(c.id()).isEqualTo("ctx_8ca40ec62557462f");
    server.enqueue(eventStream(Fixtures.sseFromJsonl("code-run-events.jsonl")));

    CodeResult r = c.run("x", Duration.ofSeconds(5));

    assertThat(r.stdout()).isEqualTo("café\n");
    assertThat(r.stderr()).isEqualTo("warn\n");
    assertThat(r.value().orElseThrow().text()).isEqualTo("42");
    assertThat(r.error()).isNull();
    assertThat(r.isSuccess()).isTrue();
    assertThat(r.executionCount()).isEqualTo(1);
    assertThat(r.duration()).isEqualTo(Duration.ofMillis(6));
    RecordedRequest request = server.takeRequest();
    assertThat(request.getPath()).isEqualTo("/api/execute/code");
    assertThat(Fixtures.body(request)).isEqualTo(Fixtures.parse(
        "{\"context_id\":\"ctx_8ca40ec62557462f\",\"code\":\"x\",\"timeout_ms\":5000}"));
  }

  @Test
  void aTracebackIsDataNotAnException() throws Exception {
    CodeContext c = created();
    server.enqueue(eventStream(Fixtures.sseFromJsonl("code-run-error-events.jsonl")));

    CodeResult r = c.run("f()");

    assertThat(r.isSuccess()).isFalse();
    assertThat(r.error().name()).isEqualTo("ZeroDivisionError");
    assertThat(r.error().message()).isEqualTo("division by zero");
    assertThat(r.error().traceback()).hasSize(4).last().isEqualTo("ZeroDivisionError: division by zero\n");
    assertThat(Fixtures.body(server.takeRequest()).has("timeout_ms")).isFalse();
  }

  @Test
  void aFigureIsAPngOutput() throws Exception {
    CodeContext c = created();
    server.enqueue(eventStream(Fixtures.sseFromJsonl("code-run-figure-events.jsonl")));

    CodeResult r = c.run("plt.plot([1, 2])");

    assertThat(r.value()).isEmpty();
    byte[] png = r.outputs().get(0).png().orElseThrow();
    assertThat(Arrays.copyOf(png, 8)).containsExactly(0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n');
  }

  @Test
  void aStreamWithoutItsCompletionIsAnErrorNotAResult() throws Exception {
    CodeContext c = created();
    server.enqueue(eventStream(sse("{\"type\":\"stdout\",\"text\":\"partial\"}")));

    assertThatThrownBy(() -> c.run("1")).isInstanceOf(SandboxConnectionException.class);
  }

  @Test
  void theAgentsOwnErrorEventIsAnExceptionButTheCodesIsNot() throws Exception {
    CodeContext c = created();
    server.enqueue(eventStream(sse("{\"type\":\"error\",\"code\":\"INTERNAL_ERROR\",\"message\":\"boom\"}")));

    assertThatThrownBy(() -> c.run("1")).isInstanceOf(SandboxServerException.class).hasMessageContaining("boom");
  }

  @Test
  void anUnknownContextIsNotFoundAndListingReadsTheRecords() throws Exception {
    CodeContext c = created();
    server.enqueue(Fixtures.json(404, Fixtures.read("context-error-response.json")));
    assertThatThrownBy(() -> c.run("1")).isInstanceOf(SandboxNotFoundException.class)
        .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo("CONTEXT_NOT_FOUND"));
    server.takeRequest();

    server.enqueue(Fixtures.json(Fixtures.read("context-list-response.json")));
    CodeContextInfo info = sandbox.code().contexts().get(0);
    assertThat(info.id()).isEqualTo("ctx_8ca40ec62557462f");
    assertThat(info.language()).isEqualTo(CodeLanguage.PYTHON);
    assertThat(info.executions()).isEqualTo(3);
    assertThat(info.pid()).isEqualTo(24288);
    assertThat(info.cwd()).isNull();
  }

  @Test
  void interruptAndDeleteUseTheirRoutesAndDeleteIsIdempotent() throws Exception {
    CodeContext c = created();
    server.enqueue(Fixtures.json(Fixtures.read("context-interrupt-response.json")));
    assertThat(c.interrupt()).isFalse();
    assertThat(server.takeRequest().getPath()).isEqualTo("/api/contexts/ctx_8ca40ec62557462f/interrupt");

    server.enqueue(Fixtures.json(Fixtures.read("context-delete-response.json")));
    c.delete();
    RecordedRequest delete = server.takeRequest();
    assertThat(delete.getMethod()).isEqualTo("DELETE");
    server.enqueue(Fixtures.json(404, Fixtures.read("context-error-response.json")));
    c.close(); // gone already: no exception
  }
}
