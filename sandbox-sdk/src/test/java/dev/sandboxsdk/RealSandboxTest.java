package dev.sandboxsdk;

import static dev.sandboxsdk.Fixtures.body;
import static dev.sandboxsdk.Fixtures.errorResponse;
import static dev.sandboxsdk.Fixtures.eventStream;
import static dev.sandboxsdk.Fixtures.json;
import static dev.sandboxsdk.Fixtures.parse;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.junit.jupiter.params.provider.Arguments.arguments;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;
import okhttp3.mockwebserver.MockResponse;
import okhttp3.mockwebserver.RecordedRequest;
import okhttp3.mockwebserver.SocketPolicy;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

class RealSandboxTest extends MockAgentTest {
  private static final String LIST_BODY = "{\"processes\":["
      + "{\"id\":\"ticker\",\"pid\":10858,\"command\":\"while :; do date +%s; sleep 1; done\",\"status\":\"running\","
      + "\"startTime\":\"2026-11-22T01:10:11.945372090Z\",\"stdoutBytes\":66,\"stderrBytes\":0},"
      + "{\"id\":\"build\",\"pid\":12286,\"command\":\"echo built\",\"status\":\"completed\","
      + "\"startTime\":\"2026-11-22T01:10:17.138022501Z\",\"endTime\":\"2026-11-22T01:10:17.139528671Z\","
      + "\"exitCode\":0,\"timedOut\":false,\"stdoutBytes\":6,\"stderrBytes\":0}],"
      + "\"success\":true,\"timestamp\":\"2026-11-22T01:10:17.681185958Z\"}";


  // ---- request shapes

  @Test
  void execPostsTheShellCommandWithTheBearerToken() throws Exception {
    server.enqueue(json(Fixtures.read("execute-response.json")));

    sandbox.exec("echo hello; echo oops >&2; exit 3");

    RecordedRequest request = server.takeRequest();
    assertThat(request.getMethod()).isEqualTo("POST");
    assertThat(request.getPath()).isEqualTo("/api/execute");
    assertThat(request.getHeader("Authorization")).isEqualTo("Bearer t");
    assertThat(request.getHeader("Content-Type")).startsWith("application/json");
    // The agent rejects unknown fields, so nothing but the command may be sent.
    assertThat(body(request)).isEqualTo(parse("{\"command\":\"echo hello; echo oops >&2; exit 3\"}"));
  }

  @Test
  void execSendsAnArgvCommandAsArgvWithoutShell() throws Exception {
    server.enqueue(json(Fixtures.read("execute-response.json")));

    sandbox.exec(Command.of("printf", "%s|", "a b", "$HOME"), ExecOptions.defaults());

    JsonNode body = body(server.takeRequest());
    assertThat(body).isEqualTo(parse("{\"argv\":[\"printf\",\"%s|\",\"a b\",\"$HOME\"]}"));
  }

  @Test
  void execSendsEnvWithNullToUnsetCwdStdinTimeoutAndMaxOutputBytes() throws Exception {
    server.enqueue(json(Fixtures.read("execute-response.json")));

    sandbox.exec(Command.shell("pwd; cat"), ExecOptions.builder()
        .env("GREETING", "hi")
        .unsetEnv("HOME")
        .cwd("sub")
        .stdin("piped text\n")
        .timeout(Duration.ofMillis(1500))
        .maxOutputBytes(20)
        .build());

    JsonNode body = body(server.takeRequest());
    assertThat(body).isEqualTo(parse("{\"command\":\"pwd; cat\",\"env\":{\"GREETING\":\"hi\",\"HOME\":null},"
        + "\"cwd\":\"sub\",\"stdin\":\"piped text\\n\",\"timeoutMs\":1500,\"maxOutputBytes\":20}"));
    assertThat(body.get("env").get("HOME").isNull()).as("HOME is sent as JSON null, which unsets it").isTrue();
  }

  @Test
  void execUsesTheBuildersExecTimeoutUnlessTheCallSetsOne() throws Exception {
    try (Sandbox patient = Sandbox.builder().baseUrl(URI.create(server.url("/").toString())).token("t")
        .streamIdleTimeout(Duration.ofSeconds(2)).execTimeout(Duration.ofSeconds(90)).build()) {
      server.enqueue(json(Fixtures.read("execute-response.json")));
      server.enqueue(json(Fixtures.read("execute-response.json")));

      patient.exec("make");
      patient.exec(Command.shell("make"), ExecOptions.builder().timeout(Duration.ofSeconds(2)).build());

      assertThat(body(server.takeRequest()).get("timeoutMs").asLong()).isEqualTo(90_000);
      assertThat(body(server.takeRequest()).get("timeoutMs").asLong()).isEqualTo(2_000);
    }
  }

  @Test
  void execWithoutAnyTimeoutSendsNoTimeoutMs() throws Exception {
    server.enqueue(json(Fixtures.read("execute-response.json")));

    sandbox.exec("make");

    assertThat(body(server.takeRequest()).has("timeoutMs")).isFalse();
  }

  @Test
  void startProcessSendsProcessIdAutoCleanupAndStdinPipe() throws Exception {
    server.enqueue(json(Fixtures.read("process-start-response.json")));

    SandboxProcess process = sandbox.startProcess(
        Command.of("sh", "-c", "echo line 1; sleep 0.5; echo line 2; echo warn >&2; exit 1"),
        ProcessOptions.builder()
            .processId("fixture-1")
            .autoCleanup(true)
            .stdinPipe(true)
            .env("PORT", "8000")
            .cwd("site")
            .timeout(Duration.ofSeconds(30))
            .build());

    RecordedRequest request = server.takeRequest();
    assertThat(request.getMethod()).isEqualTo("POST");
    assertThat(request.getPath()).isEqualTo("/api/process/start");
    assertThat(request.getHeader("Authorization")).isEqualTo("Bearer t");
    assertThat(body(request)).isEqualTo(parse("{\"argv\":[\"sh\",\"-c\","
        + "\"echo line 1; sleep 0.5; echo line 2; echo warn >&2; exit 1\"],\"processId\":\"fixture-1\","
        + "\"autoCleanup\":true,\"stdin\":\"pipe\",\"env\":{\"PORT\":\"8000\"},\"cwd\":\"site\",\"timeoutMs\":30000}"));
    assertThat(process.id()).isEqualTo("fixture-1");
    assertThat(process.pid()).isEqualTo(10774);
    assertThat(process.command()).isEqualTo("sh -c 'echo line 1; sleep 0.5; echo line 2; echo warn >&2; exit 1'");
  }

  @Test
  void startProcessWithDefaultOptionsSendsOnlyTheCommand() throws Exception {
    server.enqueue(json("{\"processId\":\"proc_1a200cda6a7_23\",\"pid\":10767,\"command\":\"true\","
        + "\"status\":\"running\",\"success\":true,\"timestamp\":\"2026-11-22T01:10:07.278822948Z\"}"));

    SandboxProcess process = sandbox.startProcess("true");

    assertThat(body(server.takeRequest())).isEqualTo(parse("{\"command\":\"true\"}"));
    assertThat(process.id()).isEqualTo("proc_1a200cda6a7_23");
  }

  @Test
  void killProcessSendsDeleteWithTheSignal() throws Exception {
    server.enqueue(json("{\"processId\":\"s1\",\"signal\":\"SIGKILL\",\"status\":\"killed\",\"success\":true}"));
    server.enqueue(json("{\"processId\":\"s1\",\"signal\":\"SIGTERM\",\"status\":\"running\",\"success\":true}"));

    sandbox.killProcess("s1", Signal.SIGKILL);
    sandbox.killProcess("s1", Signal.SIGTERM);

    RecordedRequest kill = server.takeRequest();
    assertThat(kill.getMethod()).isEqualTo("DELETE");
    assertThat(kill.getPath()).isEqualTo("/api/process/s1?signal=SIGKILL");
    assertThat(kill.getHeader("Authorization")).isEqualTo("Bearer t");
    assertThat(server.takeRequest().getPath()).isEqualTo("/api/process/s1?signal=SIGTERM");
  }

  @Test
  void processIdsOutsideTheAgentsAlphabetAreRejectedBeforeAnyRequest() {
    // The agent only gives out ids matching [A-Za-z0-9][A-Za-z0-9._-]{0,127}; anything else could
    // only be a typo or an attempt to address another path.
    assertThatThrownBy(() -> sandbox.getProcess("a b/c?d#é"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not a valid process id");
    assertThatThrownBy(() -> sandbox.killProcess("../kill-all", Signal.SIGTERM))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(server.getRequestCount()).isZero();
  }

  @Test
  void processIdsWithDotsDashesAndUnderscoresAreSentAsOnePathSegment() throws Exception {
    server.enqueue(json("{\"processId\":\"x\",\"signal\":\"SIGTERM\",\"status\":\"running\",\"success\":true}"));

    sandbox.killProcess("web.server_1-a", Signal.SIGTERM);

    assertThat(server.takeRequest().getPath()).isEqualTo("/api/process/web.server_1-a?signal=SIGTERM");
  }

  @ParameterizedTest
  @ValueSource(strings = {".", "..", "list", "kill-all"})
  void processIdsThatAddressOtherEndpointsAreRejectedBeforeAnyRequest(String id) throws Exception {
    // OkHttp's addPathSegment treats "." and ".." as navigation, so without a check the id
    // silently addresses another endpoint (e.g. ".." turns DELETE /api/process/{id} into DELETE /api/);
    // "list" and "kill-all" are routes, not ids (ProcessOptions already rejects all four).
    for (int i = 0; i < 3; i++) {
      server.enqueue(errorResponse(404, "NOT_FOUND", "no such endpoint", "{}"));
    }

    Throwable get = catchThrowable(() -> sandbox.getProcess(id));
    Throwable kill = catchThrowable(() -> sandbox.killProcess(id, Signal.SIGTERM));
    Throwable logs = catchThrowable(() -> sandbox.getProcessLogs(id));

    List<String> sent = new ArrayList<>();
    for (RecordedRequest r; (r = server.takeRequest(100, TimeUnit.MILLISECONDS)) != null; ) {
      sent.add(r.getMethod() + " " + r.getPath());
    }
    assertThat(sent).as("requests sent for process id '%s'", id).isEmpty();
    assertThat(get).isInstanceOf(IllegalArgumentException.class);
    assertThat(kill).isInstanceOf(IllegalArgumentException.class);
    assertThat(logs).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void getProcessLogsSendsPerStreamOffsetsAndMaxBytes() throws Exception {
    server.enqueue(json(Fixtures.read("process-logs-response.json")));
    server.enqueue(json(Fixtures.read("process-logs-response.json")));

    sandbox.getProcessLogs("fixture-1", LogRange.from(14, 5).withMaxBytes(7));
    sandbox.getProcessLogs("fixture-1");

    RecordedRequest paged = server.takeRequest();
    assertThat(paged.getMethod()).isEqualTo("GET");
    assertThat(paged.getRequestUrl().encodedPath()).isEqualTo("/api/process/fixture-1/logs");
    assertThat(paged.getRequestUrl().queryParameter("stdoutSince")).isEqualTo("14");
    assertThat(paged.getRequestUrl().queryParameter("stderrSince")).isEqualTo("5");
    assertThat(paged.getRequestUrl().queryParameter("maxBytes")).isEqualTo("7");
    RecordedRequest all = server.takeRequest();
    assertThat(all.getRequestUrl().queryParameter("stdoutSince")).isEqualTo("0");
    assertThat(all.getRequestUrl().queryParameter("stderrSince")).isEqualTo("0");
    assertThat(all.getRequestUrl().queryParameterNames()).doesNotContain("maxBytes");
  }

  @Test
  void listProcessesAsksForEveryProcessWithoutAStatusFilter() throws Exception {
    server.enqueue(json(LIST_BODY));

    sandbox.listProcesses();

    RecordedRequest all = server.takeRequest();
    assertThat(all.getMethod()).isEqualTo("GET");
    assertThat(all.getPath()).isEqualTo("/api/process/list");
  }

  @Test
  void cleanupCompletedProcessesPostsAndReturnsTheCount() throws Exception {
    server.enqueue(json("{\"cleanedCount\":3,\"success\":true,\"timestamp\":\"2026-11-22T01:10:17.822477799Z\"}"));

    assertThat(sandbox.cleanupCompletedProcesses()).isEqualTo(3);

    RecordedRequest request = server.takeRequest();
    assertThat(request.getMethod()).isEqualTo("POST");
    assertThat(request.getPath()).isEqualTo("/api/process/cleanup");
    assertThat(request.getHeader("Authorization")).isEqualTo("Bearer t");
  }

  @Test
  void killAllProcessesSendsDeleteAndReturnsTheCount() throws Exception {
    server.enqueue(json("{\"cleanedCount\":2,\"success\":true,\"timestamp\":\"2026-11-22T01:10:17.779099104Z\"}"));

    assertThat(sandbox.killAllProcesses()).isEqualTo(2);

    RecordedRequest request = server.takeRequest();
    assertThat(request.getMethod()).isEqualTo("DELETE");
    assertThat(request.getPath()).isEqualTo("/api/process/kill-all");
    assertThat(request.getHeader("Authorization")).isEqualTo("Bearer t");
  }

  @Test
  void destroyKillsEverythingCleansUpAndCloses() throws Exception {
    server.enqueue(json("{\"cleanedCount\":1,\"success\":true}"));
    server.enqueue(json("{\"cleanedCount\":4,\"success\":true}"));

    sandbox.destroy();

    assertThat(server.takeRequest().getPath()).isEqualTo("/api/process/kill-all");
    assertThat(server.takeRequest().getPath()).isEqualTo("/api/process/cleanup");
    assertThatThrownBy(() -> sandbox.listProcesses()).isInstanceOf(IllegalStateException.class);
  }

  @Test
  void requestsKeepTheBaseUrlsPathPrefix() throws Exception {
    server.enqueue(json(LIST_BODY));
    server.enqueue(json(LIST_BODY));
    try (Sandbox slash = Fixtures.client(URI.create(server.url("/agent/").toString()));
        Sandbox noSlash = Fixtures.client(URI.create(server.url("/agent").toString()))) {
      slash.listProcesses();
      noSlash.listProcesses();
    }

    assertThat(server.takeRequest().getPath()).isEqualTo("/agent/api/process/list");
    assertThat(server.takeRequest().getPath()).isEqualTo("/agent/api/process/list");
  }

  // ---- response mapping

  @Test
  void execMapsEveryFieldOfTheResult() {
    server.enqueue(json(Fixtures.read("execute-timeout-response.json")));

    ExecResult result = sandbox.exec(Command.shell("echo start; sleep 10"), ExecOptions.builder().timeout(Duration.ofMillis(500)).build());

    assertThat(result).isEqualTo(new ExecResult(124, "start\n", "", "echo start; sleep 10", Duration.ofMillis(506),
        true, false, Signal.SIGTERM, 10566, 6, 0));
    assertThat(result.isSuccess()).isFalse();
  }

  @Test
  void execReportsTruncatedOutput() {
    server.enqueue(json("{\"success\":true,\"exitCode\":0,\"stdout\":\"1\\n2\\n3\\n4\\n5\\n6\\n7\\n8\\n9\\n10\","
        + "\"stderr\":\"\",\"command\":\"seq 1 100000\",\"duration\":10,\"timedOut\":false,\"truncated\":true,"
        + "\"pid\":10363,\"timestamp\":\"2026-11-22T01:09:42.369441300Z\"}"));

    ExecResult result = sandbox.exec(Command.shell("seq 1 100000"), ExecOptions.builder().maxOutputBytes(20).build());

    assertThat(result.truncated()).isTrue();
    assertThat(result.stdout()).isEqualTo("1\n2\n3\n4\n5\n6\n7\n8\n9\n10");
    assertThat(result.signal()).isNull();
    assertThat(result.isSuccess()).isTrue();
  }

  @Test
  void aNonZeroExitIsAResultAndRequireSuccessThrowsCommandFailedException() {
    server.enqueue(json(Fixtures.read("execute-response.json")));

    ExecResult result = sandbox.exec("echo hello; echo oops >&2; exit 3");

    assertThat(result.exitCode()).isEqualTo(3);
    assertThat(result.stdout()).isEqualTo("hello\n");
    assertThat(result.stderr()).isEqualTo("oops\n");
    assertThat(result.isSuccess()).isFalse();
    CommandFailedException e = (CommandFailedException) catchThrowable(result::requireSuccess);
    assertThat(e).isInstanceOf(CommandFailedException.class).hasMessageContaining("exited with 3")
        .hasMessageContaining("oops");
    assertThat(e.result()).isSameAs(result);
    assertThat(e.code()).isEqualTo("COMMAND_FAILED");
  }

  @Test
  void requireSuccessReturnsTheResultOfASuccessfulCommand() {
    ExecResult ok = new ExecResult(0, "hi\n", "", "echo hi", Duration.ofMillis(2), false, false, null, 1);

    assertThat(ok.requireSuccess()).isSameAs(ok);
  }

  @Test
  void getProcessMapsAFinishedProcess() throws Exception {
    server.enqueue(json(Fixtures.read("process-info.json")));

    ProcessInfo info = sandbox.getProcess("fixture-1").orElseThrow();

    assertThat(server.takeRequest().getPath()).isEqualTo("/api/process/fixture-1");
    assertThat(info).isEqualTo(new ProcessInfo("fixture-1", 10774,
        "sh -c 'echo line 1; sleep 0.5; echo line 2; echo warn >&2; exit 1'",
        List.of("sh", "-c", "echo line 1; sleep 0.5; echo line 2; echo warn >&2; exit 1"), ProcessStatus.FAILED,
        Instant.parse("2026-11-22T01:13:05.829588466Z"), Instant.parse("2026-11-22T01:13:06.335219854Z"), 1, null,
        false, 14, 5));
    assertThat(info.isRunning()).isFalse();
  }

  @Test
  void listProcessesLeavesEndTimeAndExitCodeNullWhileRunning() {
    server.enqueue(json(LIST_BODY));

    List<ProcessInfo> processes = sandbox.listProcesses();

    assertThat(processes).hasSize(2);
    ProcessInfo ticker = processes.get(0);
    assertThat(ticker.id()).isEqualTo("ticker");
    assertThat(ticker.status()).isEqualTo(ProcessStatus.RUNNING);
    assertThat(ticker.isRunning()).isTrue();
    assertThat(ticker.endTime()).isNull();
    assertThat(ticker.exitCode()).isNull();
    assertThat(ticker.signal()).isNull();
    assertThat(ticker.argv()).isEmpty();
    assertThat(ticker.stdoutBytes()).isEqualTo(66);
    ProcessInfo build = processes.get(1);
    assertThat(build.status()).isEqualTo(ProcessStatus.COMPLETED);
    assertThat(build.exitCode()).isZero();
    assertThat(build.endTime()).isEqualTo(Instant.parse("2026-11-22T01:10:17.139528671Z"));
  }

  @Test
  void killedProcessReportsTheSignal() {
    server.enqueue(json("{\"process\":{\"id\":\"s1\",\"pid\":10749,\"command\":\"sleep 30\",\"status\":\"killed\","
        + "\"startTime\":\"2026-11-22T01:10:07.148736325Z\",\"endTime\":\"2026-11-22T01:10:07.307310835Z\","
        + "\"exitCode\":143,\"signal\":\"SIGTERM\",\"timedOut\":false,\"stdoutBytes\":0,\"stderrBytes\":0},"
        + "\"success\":true}"));

    ProcessInfo info = sandbox.getProcess("s1").orElseThrow();

    assertThat(info.status()).isEqualTo(ProcessStatus.KILLED);
    assertThat(info.exitCode()).isEqualTo(143);
    assertThat(info.signal()).isEqualTo(Signal.SIGTERM);
  }

  @Test
  void getProcessLogsMapsThePageAndItsContinuation() {
    server.enqueue(json(Fixtures.read("process-logs-response.json")));

    ProcessLogs logs = sandbox.getProcessLogs("fixture-1");

    assertThat(logs).isEqualTo(new ProcessLogs("fixture-1", "line 1\nline 2\n", "warn\n", 0, 14, 0, 5, false, true,
        ProcessStatus.FAILED));
    assertThat(logs.next()).isEqualTo(LogRange.from(14, 5));
  }

  @Test
  void getProcessReturnsEmptyWhenTheAgentSaysProcessNotFound() {
    server.enqueue(json(404, Fixtures.read("error-response.json")));

    assertThat(sandbox.getProcess("no-such-id")).isEqualTo(Optional.empty());
  }

  @Test
  void getProcessStillThrowsForOtherErrors() {
    server.enqueue(errorResponse(401, "UNAUTHORIZED", "invalid bearer token", "{}"));

    assertThatThrownBy(() -> sandbox.getProcess("p1")).isInstanceOf(SandboxAuthException.class);
  }

  @Test
  void attachProcessReturnsAHandleWhoseKillAddressesIt() throws Exception {
    server.enqueue(json(Fixtures.read("process-info.json")));
    server.enqueue(json("{\"processId\":\"fixture-1\",\"signal\":\"SIGINT\",\"status\":\"running\",\"success\":true}"));

    SandboxProcess process = sandbox.attachProcess("fixture-1");
    process.kill(Signal.SIGINT);

    assertThat(process.id()).isEqualTo("fixture-1");
    assertThat(process.pid()).isEqualTo(10774);
    assertThat(server.takeRequest().getPath()).isEqualTo("/api/process/fixture-1");
    RecordedRequest kill = server.takeRequest();
    assertThat(kill.getMethod()).isEqualTo("DELETE");
    assertThat(kill.getPath()).isEqualTo("/api/process/fixture-1?signal=SIGINT");
  }

  @Test
  void attachProcessThrowsProcessNotFoundException() {
    server.enqueue(json(404, Fixtures.read("error-response.json")));

    assertThatThrownBy(() -> sandbox.attachProcess("no-such-id")).isInstanceOf(ProcessNotFoundException.class);
  }

  @Test
  void anErrorFromAnAgentWithAnotherBootIdSaysTheAgentWasRestarted() {
    server.enqueue(json(LIST_BODY).setHeader("Sandbox-Boot-Id", "boot-1"));
    server.enqueue(json(404, Fixtures.read("error-response.json")).setHeader("Sandbox-Boot-Id", "boot-1"));
    server.enqueue(json(404, Fixtures.read("error-response.json")).setHeader("Sandbox-Boot-Id", "boot-2"));
    server.enqueue(json(401, "{\"code\":\"UNAUTHORIZED\",\"message\":\"invalid bearer token\"}")
        .setHeader("Sandbox-Boot-Id", "boot-2"));

    sandbox.listProcesses();
    Throwable sameRun = catchThrowable(() -> sandbox.attachProcess("gone"));
    Throwable afterRestart = catchThrowable(() -> sandbox.attachProcess("gone"));
    Throwable newToken = catchThrowable(() -> sandbox.listProcesses());

    assertThat(sameRun).isInstanceOf(ProcessNotFoundException.class);
    assertThat(sameRun.getMessage()).doesNotContain("restarted");
    assertThat(afterRestart).isInstanceOf(ProcessNotFoundException.class)
        .hasMessageContaining("was restarted since this client first reached it (boot id boot-1, now boot-2)");
    assertThat(newToken).isInstanceOf(SandboxAuthException.class).hasMessageContaining("was restarted");
  }

  @Test
  void anAgentWithoutBootIdsGetsNoRestartNote() {
    server.enqueue(json(LIST_BODY));
    server.enqueue(json(404, Fixtures.read("error-response.json")));

    sandbox.listProcesses();
    Throwable t = catchThrowable(() -> sandbox.attachProcess("gone"));

    assertThat(t).isInstanceOf(ProcessNotFoundException.class);
    assertThat(t.getMessage()).doesNotContain("restarted");
  }

  // ---- errors

  static Stream<Arguments> agentErrors() {
    return Stream.of(
        arguments(401, "UNAUTHORIZED", "{}", Map.of(), SandboxAuthException.class),
        arguments(404, "PROCESS_NOT_FOUND", "{\"processId\":\"nope\"}", Map.of("processId", "nope"),
            ProcessNotFoundException.class),
        arguments(404, "COMMAND_NOT_FOUND", "{\"command\":\"no-such-program\"}", Map.of("command", "no-such-program"),
            SandboxNotFoundException.class),
        arguments(400, "VALIDATION_FAILED", "{\"cwd\":\"/ws/nope\",\"field\":\"cwd\"}",
            Map.of("cwd", "/ws/nope", "field", "cwd"), SandboxInvalidRequestException.class),
        arguments(400, "INVALID_COMMAND", "{}", Map.of(), SandboxInvalidRequestException.class),
        arguments(409, "PROCESS_ALREADY_EXISTS", "{\"processId\":\"s1\"}", Map.of("processId", "s1"),
            SandboxConflictException.class),
        arguments(413, "PAYLOAD_TOO_LARGE", "{\"limit\":1024}", Map.of("limit", 1024L),
            SandboxInvalidRequestException.class),
        arguments(429, "TOO_MANY_PROCESSES", "{\"limit\":2}", Map.of("limit", 2L), SandboxServerException.class),
        arguments(500, "INTERNAL_ERROR", "{}", Map.of(), SandboxServerException.class),
        arguments(503, "SHUTTING_DOWN", "{}", Map.of(), SandboxServerException.class));
  }

  @ParameterizedTest(name = "{0} {1} -> {4}")
  @MethodSource("agentErrors")
  void agentErrorsMapToTheirExceptionWithCodeStatusAndContext(int status, String code, String context,
      Map<String, Object> expectedContext, Class<? extends SandboxException> type) {
    server.enqueue(errorResponse(status, code, "the agent explains", context));

    Throwable thrown = catchThrowable(() -> sandbox.exec("x"));

    assertThat(thrown).isExactlyInstanceOf(type).hasMessageContaining("the agent explains");
    SandboxException e = (SandboxException) thrown;
    assertThat(e.code()).isEqualTo(code);
    assertThat(e.httpStatus()).isEqualTo(status);
    assertThat(e.context()).isEqualTo(expectedContext);
  }

  @Test
  void anHtmlBadGatewayPageIsAServerErrorWithTheStatus() {
    server.enqueue(new MockResponse().setResponseCode(502).setHeader("Content-Type", "text/html")
        .setBody("<html><body><h1>502 Bad Gateway</h1></body></html>"));

    Throwable thrown = catchThrowable(() -> sandbox.listProcesses());

    assertThat(thrown).isExactlyInstanceOf(SandboxServerException.class).hasMessageContaining("502");
    SandboxException e = (SandboxException) thrown;
    assertThat(e.code()).isNull();
    assertThat(e.httpStatus()).isEqualTo(502);
    assertThat(e.context()).isEmpty();
  }

  @ParameterizedTest
  @ValueSource(strings = {
      "not json",
      "",
      "[1,2]",
      "{}",
      "{\"exitCode\":\"3\",\"stdout\":\"\",\"stderr\":\"\",\"command\":\"x\"}",
      "{\"exitCode\":0,\"stdout\":null,\"stderr\":\"\",\"command\":\"x\"}",
      "{\"exitCode\":0,\"stdout\":\"\",\"stderr\":\"\",\"command\":\"x\"",
  })
  void aMalformedSuccessBodyIsASandboxExceptionNotANullPointerException(String body) {
    server.enqueue(json(body));

    assertThatThrownBy(() -> sandbox.exec("x")).isExactlyInstanceOf(SandboxException.class)
        .hasMessageContaining("malformed");
  }

  @Test
  void aMalformedProcessInfoIsASandboxException() {
    server.enqueue(json("{\"success\":true}"));
    server.enqueue(json("{\"processes\":[{\"id\":\"x\",\"pid\":1,\"command\":\"c\",\"status\":\"zombie\","
        + "\"startTime\":\"2026-11-22T01:10:11.945372090Z\"}]}"));
    server.enqueue(json("{\"processes\":[{\"id\":\"x\",\"pid\":1,\"command\":\"c\",\"status\":\"running\","
        + "\"startTime\":\"yesterday\"}]}"));

    assertThatThrownBy(() -> sandbox.getProcess("x")).isExactlyInstanceOf(SandboxException.class);
    assertThatThrownBy(() -> sandbox.listProcesses()).isExactlyInstanceOf(SandboxException.class);
    assertThatThrownBy(() -> sandbox.listProcesses()).isExactlyInstanceOf(SandboxException.class);
  }

  @Test
  void aRefusedConnectionIsASandboxConnectionException() throws Exception {
    int port;
    try (ServerSocket closed = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = closed.getLocalPort();
    }
    try (Sandbox unreachable = Fixtures.client(URI.create("http://127.0.0.1:" + port + "/"))) {
      assertThatThrownBy(() -> unreachable.exec("true")).isInstanceOf(SandboxConnectionException.class)
          .hasCauseInstanceOf(ConnectException.class);
      assertThatThrownBy(() -> unreachable.listProcesses()).isInstanceOf(SandboxConnectionException.class);
    }
  }

  @Test
  void anAgentThatStopsAnsweringIsASandboxTimeoutException() {
    server.enqueue(new MockResponse().setSocketPolicy(SocketPolicy.NO_RESPONSE));
    try (Sandbox impatient = Sandbox.builder().baseUrl(URI.create(server.url("/").toString())).token("t")
        .streamIdleTimeout(Duration.ofSeconds(2)).readTimeout(Duration.ofMillis(300)).build()) {
      long start = System.nanoTime();

      assertThatThrownBy(() -> impatient.exec("sleep 1")).isInstanceOf(SandboxTimeoutException.class);

      assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
    }
  }

  @Test
  void anExecWhoseAnswerBeginsLaterThanTheWindowButWithinTheReadTimeoutSucceeds() {
    // The agent sends its first byte once the command has started, which a loaded agent may queue.
    server.enqueue(json(Fixtures.read("execute-response.json")).setHeadersDelay(1_500, TimeUnit.MILLISECONDS));
    try (Sandbox patient = Sandbox.builder().baseUrl(URI.create(server.url("/").toString())).token("t")
        .streamIdleTimeout(Duration.ofMillis(300)).readTimeout(Duration.ofSeconds(20)).build()) {
      assertThat(patient.exec("sleep 5; echo done").exitCode()).isEqualTo(3);
    }
  }

  @Test
  void execToleratesLeadingWhitespaceHeartbeats() {
    server.enqueue(json("\n\n  " + Fixtures.read("execute-response.json")));

    ExecResult result = sandbox.exec("sleep 5; echo done");

    assertThat(result.exitCode()).isEqualTo(3);
    assertThat(result.stdout()).isEqualTo("hello\n");
  }

  // ---- async

  @Test
  void execAsyncCompletesWithTheResult() throws Exception {
    server.enqueue(json(Fixtures.read("execute-response.json")));

    CompletableFuture<ExecResult> future = sandbox.execAsync(Command.of("sh", "-c", "exit 3"), ExecOptions.defaults());

    assertThat(future.get(5, SECONDS).exitCode()).isEqualTo(3);
    RecordedRequest request = server.takeRequest();
    assertThat(request.getPath()).isEqualTo("/api/execute");
    assertThat(body(request)).isEqualTo(parse("{\"argv\":[\"sh\",\"-c\",\"exit 3\"]}"));
  }

  @Test
  void execAsyncCompletesExceptionallyWithTheMappedException() {
    server.enqueue(errorResponse(404, "COMMAND_NOT_FOUND", "command not found: 'nope'", "{\"command\":\"nope\"}"));

    CompletableFuture<ExecResult> future = sandbox.execAsync(Command.of("nope"), ExecOptions.defaults());

    assertThatThrownBy(() -> future.get(5, SECONDS)).isInstanceOf(ExecutionException.class)
        .cause().isExactlyInstanceOf(SandboxNotFoundException.class);
  }

  /** Answers a DELETE with the agent's kill response; anything else with {@code exec}. */
  private static RawHttpServer.Handler killOr(RawHttpServer.Handler exec) {
    return (request, exchange) -> {
      if (request.method().equals("DELETE")) {
        exchange.respond(200, "application/json", Fixtures.read("execute-kill-response.json"));
        return false;
      }
      return exec.handle(request, exchange);
    };
  }

  @Test
  void interruptingABlockedExecSendsTheKillAndReturnsWithoutWaitingForAHeartbeat() throws Exception {
    try (RawHttpServer raw = new RawHttpServer(killOr((request, exchange) -> {
          exchange.startChunkedJson();
          exchange.writeUntilHangUp("1\r\n \r\n", 10_000); // a heartbeat only every 10 s
          return false;
        }));
        Sandbox client = Fixtures.client(raw.url())) {
      AtomicReference<Throwable> thrown = new AtomicReference<>();
      AtomicBoolean flag = new AtomicBoolean();
      Thread caller = new Thread(() -> {
        try {
          client.exec("sleep 600");
        } catch (Throwable t) {
          thrown.set(t);
          flag.set(Thread.currentThread().isInterrupted());
        }
      });
      caller.start();
      RawHttpServer.Request exec = raw.requests.poll(5, SECONDS);
      assertThat(exec.target()).isEqualTo("/api/execute");
      Thread.sleep(200); // the heartbeat has arrived; the next is 10 s away

      caller.interrupt();

      caller.join(5_000);
      assertThat(caller.isAlive()).as("exec returned without waiting for the next heartbeat").isFalse();
      assertThat(thrown.get()).isInstanceOf(SandboxException.class).hasMessageContaining("interrupted");
      assertThat(flag).as("the interrupt flag is restored").isTrue();
      RawHttpServer.Request kill = raw.requests.poll(5, SECONDS);
      assertThat(kill).as("the interrupt sent a kill").isNotNull();
      assertThat(kill.method()).isEqualTo("DELETE");
      assertThat(kill.target()).isEqualTo("/api/execute/" + exec.header("X-Sandbox-Exec-Id"));
    }
  }

  @Test
  void cancellingAnExecStreamSendsTheKillButNotOnceTheStreamHasCompleted() throws Exception {
    String start = "data: {\"type\":\"start\",\"command\":\"make\",\"pid\":42,\"processId\":\"x\"}\n\n";
    String complete = "data: {\"type\":\"complete\",\"exitCode\":0,\"timedOut\":false,\"duration\":1}\n\n";
    try (RawHttpServer raw = new RawHttpServer(killOr((request, exchange) -> {
          exchange.startEventStream();
          exchange.write(start);
          if (request.body().contains("done")) {
            exchange.write(complete);
          } else {
            exchange.awaitHangUp();
          }
          return false;
        }));
        Sandbox client = Fixtures.client(raw.url())) {
      RecordingSubscriber<ExecEvent> running = new RecordingSubscriber<>();
      client.execStream("sleep 600").subscribe(running);
      running.request(Long.MAX_VALUE);
      assertThat(running.takeNext()).isInstanceOf(ExecEvent.Start.class);
      RawHttpServer.Request exec = raw.requests.poll(5, SECONDS);

      running.cancel();

      RawHttpServer.Request kill = raw.requests.poll(5, SECONDS);
      assertThat(kill).as("the cancel sent a kill").isNotNull();
      assertThat(kill.method()).isEqualTo("DELETE");
      assertThat(kill.target()).isEqualTo("/api/execute/" + exec.header("X-Sandbox-Exec-Id"));

      RecordingSubscriber<ExecEvent> finished = new RecordingSubscriber<>();
      client.execStream("echo done").subscribe(finished);
      finished.request(Long.MAX_VALUE);
      assertThat(finished.takeNext()).isInstanceOf(ExecEvent.Start.class);
      assertThat(finished.takeNext()).isInstanceOf(ExecEvent.Complete.class);
      finished.cancel(); // after the final event: nothing is left to kill

      assertThat(raw.requests.poll(5, SECONDS).header("X-Sandbox-Exec-Id"))
          .as("every exec gets its own id").isNotEqualTo(exec.header("X-Sandbox-Exec-Id"));
      assertThat(raw.requests.poll(500, TimeUnit.MILLISECONDS)).as("no kill after complete").isNull();
    }
  }

  @Test
  void execAsyncCancelAbortsTheHttpCallAndDoesNotRetry() throws Exception {
    try (RawHttpServer raw = new RawHttpServer((request, exchange) -> {
          if (request.method().equals("DELETE")) {
            exchange.respond(200, "application/json", "{\"processId\":\"x\",\"signal\":\"SIGTERM\",\"success\":true}");
            return false;
          }
          exchange.startChunkedJson();
          exchange.writeUntilHangUp("1\r\n \r\n", 100); // the agent's heartbeat while the command runs
          return false;
        });
        Sandbox client = Fixtures.client(raw.url())) {
      CompletableFuture<ExecResult> future = client.execAsync("sleep 600");
      RawHttpServer.Request exec = raw.requests.poll(5, SECONDS);
      assertThat(exec.target()).isEqualTo("/api/execute");
      String execId = exec.header("X-Sandbox-Exec-Id");
      assertThat(execId).as("the exec is named, so it can be killed").isNotBlank();
      Thread.sleep(200); // the response has started

      assertThat(future.cancel(true)).isTrue();

      assertThat(raw.hungUp.await(5, SECONDS)).as("the agent saw the client hang up").isTrue();
      assertThat(future).isCancelled();
      RawHttpServer.Request kill = raw.requests.poll(5, SECONDS);
      assertThat(kill).as("the cancel asked for a kill at once").isNotNull();
      assertThat(kill.method()).isEqualTo("DELETE");
      assertThat(kill.target()).isEqualTo("/api/execute/" + execId);
      assertThat(kill.header("Authorization")).startsWith("Bearer ");
      Thread.sleep(300);
      assertThat(raw.connections).as("the call was not retried: one for the exec, one for the kill").hasValue(2);
      assertThat(raw.requests).isEmpty();
    }
  }

  @Test
  void interruptingExecAbortsTheCallAndKeepsTheInterruptFlag() throws Exception {
    try (RawHttpServer raw = new RawHttpServer((request, exchange) -> {
          exchange.startChunkedJson();
          exchange.writeUntilHangUp("1\r\n \r\n", 100);
          return false;
        });
        Sandbox client = Fixtures.client(raw.url())) {
      AtomicReference<Throwable> thrown = new AtomicReference<>();
      AtomicBoolean interruptFlag = new AtomicBoolean();
      Thread caller = new Thread(() -> {
        try {
          client.exec("sleep 600");
        } catch (Throwable t) {
          thrown.set(t);
          interruptFlag.set(Thread.currentThread().isInterrupted());
        }
      });
      caller.start();
      assertThat(raw.requests.poll(5, SECONDS)).isNotNull();
      Thread.sleep(200);

      caller.interrupt();
      caller.join(5_000);

      assertThat(caller.isAlive()).isFalse();
      assertThat(thrown.get()).isInstanceOf(SandboxException.class).hasMessageContaining("interrupted");
      assertThat(interruptFlag).as("the interrupt flag is restored").isTrue();
      assertThat(raw.hungUp.await(5, SECONDS)).as("the agent saw the client hang up").isTrue();
    }
  }

  @Test
  void closeAbortsAnExecInFlight() throws Exception {
    try (RawHttpServer raw = new RawHttpServer((request, exchange) -> {
      exchange.startChunkedJson();
      exchange.writeUntilHangUp("1\r\n \r\n", 100);
      return false;
    })) {
      Sandbox client = Fixtures.client(raw.url());
      CompletableFuture<ExecResult> async = client.execAsync("sleep 600");
      AtomicReference<Throwable> thrown = new AtomicReference<>();
      Thread caller = new Thread(() -> {
        try {
          client.exec("sleep 600");
        } catch (Throwable t) {
          thrown.set(t);
        }
      });
      caller.start();
      assertThat(raw.requests.poll(5, SECONDS)).isNotNull();
      assertThat(raw.requests.poll(5, SECONDS)).isNotNull();
      Thread.sleep(200);

      client.close();

      caller.join(5_000);
      assertThat(caller.isAlive()).isFalse();
      assertThat(thrown.get()).isInstanceOf(SandboxConnectionException.class).hasMessageContaining("closed");
      assertThatThrownBy(() -> async.get(5, SECONDS)).isInstanceOf(ExecutionException.class)
          .cause().isInstanceOf(SandboxConnectionException.class);
      assertThat(raw.hungUp.await(5, SECONDS)).isTrue();
    }
  }

  @Test
  void heartbeatsKeepALongExecAliveBeyondTheReadTimeout() throws Exception {
    // exec reads with the longer of readTimeout and streamIdleTimeout: both are 300 ms here, so
    // only the heartbeats (one every 100 ms) carry the 800 ms call.
    String result = Fixtures.read("execute-response.json");
    try (RawHttpServer raw = new RawHttpServer((request, exchange) -> {
          exchange.startChunkedJson();
          for (int i = 0; i < 8; i++) {
            exchange.write("1\r\n \r\n");
            Thread.sleep(100);
          }
          exchange.write(lastChunk(result));
          return true;
        });
        Sandbox client = Sandbox.builder().baseUrl(raw.url()).token("t").streamIdleTimeout(Duration.ofMillis(300))
            .readTimeout(Duration.ofMillis(300)).build()) {
      assertThat(client.exec("sleep 1; exit 3").exitCode()).isEqualTo(3);
    }
  }

  @Test
  void anExecSilentForLongerThanItsTimeoutsIsASandboxTimeoutException() throws Exception {
    // The twin of the test above without heartbeats: the same 800 ms answer must not arrive.
    String result = Fixtures.read("execute-response.json");
    try (RawHttpServer raw = new RawHttpServer((request, exchange) -> {
          exchange.startChunkedJson();
          Thread.sleep(800);
          try {
            exchange.write(lastChunk(result));
          } catch (java.io.IOException hungUp) {
            // the client gave up, as it should
          }
          return false;
        });
        Sandbox client = Sandbox.builder().baseUrl(raw.url()).token("t").streamIdleTimeout(Duration.ofMillis(300))
            .readTimeout(Duration.ofMillis(300)).build()) {
      long start = System.nanoTime();

      assertThatThrownBy(() -> client.exec("sleep 1; exit 3")).isInstanceOf(SandboxTimeoutException.class);

      assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
    }
  }

  /** {@code json} as the last chunk of a chunked body, and the end of the body. */
  private static String lastChunk(String json) {
    int length = json.getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
    return Integer.toHexString(length) + "\r\n" + json + "\r\n0\r\n\r\n";
  }

  @Test
  void killAllProcessesWaitsLongerThanTheReadTimeout() {
    // The agent answers kill-all only once everything is gone (up to grace + 7 s).
    server.enqueue(json("{\"cleanedCount\":1,\"success\":true}").setHeadersDelay(800, TimeUnit.MILLISECONDS));
    try (Sandbox impatient = Sandbox.builder().baseUrl(URI.create(server.url("/").toString())).token("t")
        .streamIdleTimeout(Duration.ofSeconds(2)).readTimeout(Duration.ofMillis(300)).build()) {
      assertThat(impatient.killAllProcesses()).isEqualTo(1);
    }
  }

  @Test
  void execAsyncWithOnOutputCancelHangsUp() throws Exception {
    try (RawHttpServer raw = new RawHttpServer((request, exchange) -> {
          exchange.startEventStream();
          exchange.write(Fixtures.sse("{\"type\":\"start\",\"command\":\"yes\",\"pid\":7,\"processId\":\"exec_1\"}"));
          exchange.awaitHangUp();
          return false;
        });
        Sandbox client = Fixtures.client(raw.url())) {
      CompletableFuture<ExecResult> future = client.execAsync(Command.shell("yes"),
          ExecOptions.builder().onOutput((stream, text) -> { }).build());
      assertThat(raw.requests.poll(5, SECONDS).target()).isEqualTo("/api/execute/stream");
      Thread.sleep(200);

      assertThat(future.cancel(true)).isTrue();

      assertThat(raw.hungUp.await(5, SECONDS)).as("the agent saw the client hang up").isTrue();
    }
  }

  // ---- lifecycle

  @Test
  void closeIsIdempotentAndLaterCallsThrowIllegalStateException() {
    sandbox.close();
    sandbox.close();

    assertThatThrownBy(() -> sandbox.exec("true")).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> sandbox.execAsync("true")).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> sandbox.startProcess("true")).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> sandbox.listProcesses()).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> sandbox.getProcess("p1")).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> sandbox.attachProcess("p1")).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> sandbox.killProcess("p1", Signal.SIGTERM)).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> sandbox.killAllProcesses()).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> sandbox.getProcessLogs("p1")).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> sandbox.cleanupCompletedProcesses()).isInstanceOf(IllegalStateException.class);
    sandbox.destroy(); // also idempotent after close
    assertThat(server.getRequestCount()).isZero();
  }

  @Test
  void closingASandboxLeavesACallerSuppliedOkHttpClientUsable() throws Exception {
    OkHttpClient shared = new OkHttpClient();
    try {
      Sandbox borrowed = Sandbox.builder().baseUrl(URI.create(server.url("/").toString())).token("t")
          .streamIdleTimeout(Duration.ofSeconds(2)).okHttpClient(shared).build();
      server.enqueue(json(LIST_BODY));
      borrowed.listProcesses();
      borrowed.close();

      server.enqueue(new MockResponse().setBody("still usable"));
      try (Response response = shared.newCall(new Request.Builder().url(server.url("/other")).build()).execute()) {
        assertThat(response.body().string()).isEqualTo("still usable");
      }
      assertThat(shared.dispatcher().executorService().isShutdown()).isFalse();
    } finally {
      shared.dispatcher().executorService().shutdown();
      shared.connectionPool().evictAll();
    }
  }

  @Test
  void toStringNeverContainsTheToken() {
    Sandbox.Builder builder = Sandbox.builder().baseUrl(URI.create(server.url("/").toString()))
        .token("s3cr3t-t0ken");

    assertThat(builder.toString()).doesNotContain("s3cr3t-t0ken");
    try (Sandbox secret = builder.build()) {
      assertThat(secret.toString()).doesNotContain("s3cr3t-t0ken").contains(String.valueOf(server.getPort()));
    }
  }

  @Test
  void optionsToStringNeverContainsEnvironmentValuesOrStdin() {
    ExecOptions exec = ExecOptions.builder().env("API_KEY", "hunter2-value").stdin("my-password-123")
        .cwd("app").build();
    ProcessOptions process = ProcessOptions.builder().env("API_KEY", "hunter2-value").processId("web").build();

    assertThat(exec.toString()).contains("API_KEY").doesNotContain("hunter2-value").doesNotContain("my-password-123");
    assertThat(process.toString()).contains("API_KEY").doesNotContain("hunter2-value");
  }

  // ---- validation

  @Test
  void commandsAreValidatedWithClearMessages() {
    assertThatThrownBy(() -> Command.shell("  ")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("blank");
    assertThatThrownBy(() -> Command.shell(null)).isInstanceOf(NullPointerException.class)
        .hasMessage("command == null");
    assertThatThrownBy(() -> Command.of(List.of())).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("argv is empty");
    assertThatThrownBy(() -> Command.of("")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("argv[0] is empty");
    assertThatThrownBy(() -> Command.of("echo", (String) null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> sandbox.exec(null, ExecOptions.defaults())).isInstanceOf(NullPointerException.class)
        .hasMessage("command == null");
    assertThatThrownBy(() -> sandbox.exec(Command.shell("x"), null)).isInstanceOf(NullPointerException.class)
        .hasMessage("options == null");
    assertThat(server.getRequestCount()).isZero();
  }

  @ParameterizedTest
  @ValueSource(strings = {"my process", "-leading-dash", "list", "start", "kill-all", "cleanup", "a/b", ""})
  void processOptionsRejectBadProcessIds(String id) {
    assertThatThrownBy(() -> ProcessOptions.builder().processId(id).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("processId");
  }

  @Test
  void processOptionsAcceptTheLongestValidProcessId() {
    String longest = "a".repeat(128);

    assertThat(ProcessOptions.builder().processId(longest).build().processId()).isEqualTo(longest);
    assertThatThrownBy(() -> ProcessOptions.builder().processId(longest + "a").build())
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void optionsRejectNonPositiveTimeoutsAndBadValues() {
    assertThatThrownBy(() -> ExecOptions.builder().timeout(Duration.ofSeconds(-1)).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("timeout must be positive");
    assertThatThrownBy(() -> ExecOptions.builder().timeout(Duration.ZERO).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("timeout must be positive");
    assertThatThrownBy(() -> ProcessOptions.builder().timeout(Duration.ofMillis(-5)).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("timeout must be positive");
    assertThatThrownBy(() -> ExecOptions.builder().maxOutputBytes(-1).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxOutputBytes");
    assertThatThrownBy(() -> ExecOptions.builder().cwd("").build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("cwd");
    assertThatThrownBy(() -> ExecOptions.builder().env("A=B", "c"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("A=B");
    assertThatThrownBy(() -> ExecOptions.builder().env("A", null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> LogRange.from(-1, 0)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> sandbox.getProcess("")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> sandbox.killProcess("p1", null)).isInstanceOf(NullPointerException.class)
        .hasMessage("signal == null");
    assertThatThrownBy(() -> sandbox.streamProcessLogs("p1", LogRange.from(-1, 0)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(server.getRequestCount()).isZero();
  }

  @Test
  void theBuilderRequiresAnHttpUrlAndAPrintableToken() {
    URI url = URI.create(server.url("/").toString());

    assertThatThrownBy(() -> Sandbox.builder().token("t").build()).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("baseUrl");
    assertThatThrownBy(() -> Sandbox.builder().baseUrl(url).build()).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("token");
    assertThatThrownBy(() -> Sandbox.builder().baseUrl(url).token("a\nb").build())
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Sandbox.builder().baseUrl(url).token("  ").build())
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Sandbox.builder().baseUrl(URI.create("ftp://example.com/")).token("t").build())
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Sandbox.builder().readTimeout(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Sandbox.builder().streamIdleTimeout(Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Sandbox.builder().baseUrl(null)).isInstanceOf(NullPointerException.class)
        .hasMessage("baseUrl == null");
  }

  // ---- exec with an output listener

  @Test
  void execWithOnOutputStreamsChunksToTheListenerInOrderAndBuildsTheResult() throws Exception {
    server.enqueue(eventStream(Fixtures.sseFromJsonl("exec-stream-events.jsonl")));
    String command = parse(Fixtures.read("exec-stream-events.jsonl").lines().findFirst().orElseThrow())
        .get("command").asText();
    List<String> chunks = new CopyOnWriteArrayList<>();

    ExecResult result = sandbox.exec(Command.shell(command), ExecOptions.builder()
        .onOutput((stream, text) -> chunks.add(stream + ":" + text))
        .maxOutputBytes(1000)
        .build());

    assertThat(chunks).containsExactly("STDERR:err\n", "STDOUT:one\n", "STDOUT:café\n");
    assertThat(result).isEqualTo(new ExecResult(2, "one\ncafé\n", "err\n", command, Duration.ofMillis(307), false,
        false, null, 11015, 10, 4));
    RecordedRequest request = server.takeRequest();
    assertThat(request.getMethod()).isEqualTo("POST");
    assertThat(request.getPath()).isEqualTo("/api/execute/stream");
    assertThat(request.getHeader("Authorization")).isEqualTo("Bearer t");
    // execute/stream refuses maxOutputBytes with a 400: the limit is applied by the client.
    assertThat(body(request)).isEqualTo(parse("{\"command\":" + Fixtures.MAPPER.writeValueAsString(command) + "}"));
  }

  @Test
  void execWithOnOutputKeepsAtMostMaxOutputBytesPerStream() {
    server.enqueue(eventStream(Fixtures.sseFromJsonl("exec-stream-events.jsonl")));
    List<String> chunks = new CopyOnWriteArrayList<>();

    ExecResult result = sandbox.exec(Command.shell("x"), ExecOptions.builder()
        .onOutput((stream, text) -> chunks.add(text))
        .maxOutputBytes(5)
        .build());

    assertThat(result.stdout()).isEqualTo("one\nc");
    assertThat(result.stderr()).isEqualTo("err\n");
    assertThat(result.truncated()).isTrue();
    assertThat(result.exitCode()).isEqualTo(2);
    assertThat(chunks).hasSize(3);
  }

  @Test
  void execWithOnOutputFailsWhenTheStreamEndsWithoutComplete() {
    server.enqueue(eventStream(Fixtures.sse(
        "{\"type\":\"start\",\"command\":\"x\",\"pid\":1,\"processId\":\"exec_1\"}",
        "{\"type\":\"stdout\",\"data\":\"partial\",\"offset\":0,\"bytes\":7}")));

    assertThatThrownBy(() -> sandbox.exec(Command.shell("x"), ExecOptions.builder().onOutput((s, t) -> { }).build()))
        .isInstanceOf(SandboxConnectionException.class);
  }

  @Test
  void execWithOnOutputMapsAnErrorAnswer() {
    server.enqueue(errorResponse(400, "VALIDATION_FAILED", "cwd 'nope' is not an existing directory",
        "{\"field\":\"cwd\"}"));

    assertThatThrownBy(() -> sandbox.exec(Command.shell("x"), ExecOptions.builder().cwd("nope").onOutput((s, t) -> { }).build()))
        .isInstanceOf(SandboxInvalidRequestException.class);
  }

  @Test
  void aListenerThatThrowsMakesExecThrowAndHangsUp() throws Exception {
    try (RawHttpServer raw = new RawHttpServer((request, exchange) -> {
          exchange.startEventStream();
          exchange.write(Fixtures.sse("{\"type\":\"start\",\"command\":\"yes\",\"pid\":7,\"processId\":\"exec_1\"}",
              "{\"type\":\"stdout\",\"data\":\"y\\n\",\"offset\":0,\"bytes\":2}"));
          exchange.awaitHangUp();
          return false;
        });
        Sandbox client = Fixtures.client(raw.url())) {
      IllegalStateException boom = new IllegalStateException("listener failed");

      Throwable thrown = catchThrowable(() -> client.exec(Command.shell("yes"), ExecOptions.builder()
          .onOutput((stream, text) -> {
            throw boom;
          })
          .build()));

      assertThat(thrown).isInstanceOf(SandboxException.class).hasCause(boom);
      assertThat(raw.hungUp.await(5, TimeUnit.SECONDS)).as("the connection was closed, so the agent kills the command")
          .isTrue();
    }
  }
}
