package dev.sandboxsdk;

import static dev.sandboxsdk.Fixtures.body;
import static dev.sandboxsdk.Fixtures.errorResponse;
import static dev.sandboxsdk.Fixtures.eventStream;
import static dev.sandboxsdk.Fixtures.json;
import static dev.sandboxsdk.Fixtures.parse;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import okhttp3.mockwebserver.RecordedRequest;
import org.junit.jupiter.api.Test;

/** {@link Terminal} against a scripted agent: what goes on the wire and how answers are read. */
class TerminalTest extends MockAgentTest {
  /** The answer of GET /api/process/{id} for the captured ProcessInfo of a terminal. */
  private static final String INFO_PTY = "{\"process\":" + Fixtures.read("process-info-pty.json") + ",\"success\":true}";

  @Test
  void openTerminalStartsTheCommandWithItsSizeAndTerm() throws Exception {
    server.enqueue(json(Fixtures.read("process-start-pty-response.json")));

    Terminal t = sandbox.terminals().open(TerminalOptions.builder().command(Command.of("bash", "--norc", "-i"))
        .cols(100).rows(30).env("PS1", "$ ").processId("term-1").cwd("site").build());

    RecordedRequest request = server.takeRequest();
    assertThat(request.getPath()).isEqualTo("/api/process/start");
    assertThat(body(request)).isEqualTo(parse("{\"argv\":[\"bash\",\"--norc\",\"-i\"],\"env\":{\"PS1\":\"$ \"},"
        + "\"cwd\":\"site\",\"processId\":\"term-1\",\"pty\":{\"cols\":100,\"rows\":30,\"term\":\"xterm-256color\"}}"));
    assertThat(t.id()).isEqualTo("term-1");
    assertThat(t.pid()).isEqualTo(28495);
    assertThat(t.process().command()).isEqualTo("bash --norc -i");
  }

  @Test
  void theDefaultsAreALoginShellOnAnEightyByTwentyFourXterm() throws Exception {
    server.enqueue(json(Fixtures.read("process-start-pty-response.json")));

    sandbox.terminals().open(TerminalOptions.defaults());

    assertThat(body(server.takeRequest())).isEqualTo(parse("{\"command\":\"if command -v bash >/dev/null 2>&1; then"
        + " exec bash -l; else exec sh -l; fi\",\"pty\":{\"cols\":80,\"rows\":24,\"term\":\"xterm-256color\"}}"));
  }

  @Test
  void writeSendsRawBytesAsBase64AndResizeSendsTheSize() throws Exception {
    server.enqueue(json(Fixtures.read("process-start-pty-response.json")));
    server.enqueue(json("{\"processId\":\"term-1\",\"bytesWritten\":3,\"eof\":false,\"success\":true}"));
    server.enqueue(json("{\"processId\":\"term-1\",\"bytesWritten\":3,\"eof\":false,\"success\":true}"));
    server.enqueue(json(Fixtures.read("process-resize-response.json")));
    Terminal t = sandbox.terminals().open(TerminalOptions.builder().processId("term-1").build());
    server.takeRequest();

    t.write(new byte[] {3, (byte) 0xff, 0});
    t.write("\u00e9\r");
    t.resize(132, 43);

    RecordedRequest raw = server.takeRequest();
    assertThat(raw.getPath()).isEqualTo("/api/process/term-1/stdin");
    assertThat(body(raw)).isEqualTo(parse("{\"data\":\"A/8A\",\"encoding\":\"base64\"}"));
    assertThat(Base64.getDecoder().decode(body(server.takeRequest()).get("data").asText()))
        .isEqualTo("\u00e9\r".getBytes(StandardCharsets.UTF_8));
    RecordedRequest resize = server.takeRequest();
    assertThat(resize.getPath()).isEqualTo("/api/process/term-1/resize");
    assertThat(body(resize)).isEqualTo(parse("{\"cols\":132,\"rows\":43}"));
    assertThatThrownBy(() -> t.resize(0, 10)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> t.resize(80, 1001)).isInstanceOf(IllegalArgumentException.class);
    assertThat(server.getRequestCount()).isEqualTo(4);
  }

  @Test
  void outputDecodesTheBase64StreamIntoRawChunksAndCompletesAtExit() throws Exception {
    server.enqueue(json(INFO_PTY));
    server.enqueue(eventStream(Fixtures.sse(
        "{\"type\":\"process_info\",\"processId\":\"term-1\",\"pid\":28495,\"command\":\"bash\",\"status\":\"running\"}",
        "{\"type\":\"stdout\",\"processId\":\"term-1\",\"data\":\"YeKC\",\"offset\":5,\"bytes\":3}",
        "{\"type\":\"stdout\",\"processId\":\"term-1\",\"data\":\"rGIbWzBt\",\"offset\":8,\"bytes\":6}",
        "{\"type\":\"exit\",\"processId\":\"term-1\",\"exitCode\":0,\"status\":\"completed\",\"timedOut\":false}")));
    Terminal t = sandbox.terminals().attach("term-1");
    assertThat(server.takeRequest().getPath()).isEqualTo("/api/process/term-1");
    RecordingSubscriber<TerminalOutput> out = new RecordingSubscriber<>();

    t.output(5).subscribe(out);
    out.request(10);

    List<TerminalOutput> chunks = out.takeAllUntilComplete();
    assertThat(server.takeRequest().getPath()).isEqualTo("/api/process/term-1/stream?since=5&encoding=base64");
    assertThat(chunks).containsExactly(new TerminalOutput(5, new byte[] {'a', (byte) 0xe2, (byte) 0x82}),
        new TerminalOutput(8, new byte[] {(byte) 0xac, 'b', 0x1b, '[', '0', 'm'}));
    assertThat(chunks.get(1).nextOffset()).isEqualTo(14);
  }

  @Test
  void attachingToAProcessWithoutATerminalIsAnInvalidRequest() {
    server.enqueue(json(Fixtures.read("process-info.json")));
    server.enqueue(errorResponse(404, "PROCESS_NOT_FOUND", "no process with id 'gone'", "{\"processId\":\"gone\"}"));

    assertThatThrownBy(() -> sandbox.terminals().attach("fixture-1")).isInstanceOf(SandboxInvalidRequestException.class)
        .hasMessageContaining("does not run on a terminal");
    assertThatThrownBy(() -> sandbox.terminals().attach("gone")).isInstanceOf(ProcessNotFoundException.class);
  }

  @Test
  void optionsAreCheckedWhenBuiltAndPrintNoEnvironmentValues() {
    assertThatThrownBy(() -> TerminalOptions.builder().cols(0).build()).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> TerminalOptions.builder().rows(1001).build()).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> TerminalOptions.builder().term("x;rm").build()).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> TerminalOptions.builder().processId("list").build())
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(TerminalOptions.builder().env("SECRET", "hunter2").build().toString()).contains("SECRET")
        .doesNotContain("hunter2");
    TerminalOptions o = TerminalOptions.builder().cols(120).build();
    assertThat(o.toBuilder().build()).isEqualTo(o);
    assertThat(new TerminalOutput(3, new byte[] {'x'}).toString()).doesNotContain("x}");
  }
}
