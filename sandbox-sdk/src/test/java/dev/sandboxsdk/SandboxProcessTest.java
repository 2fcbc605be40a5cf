package dev.sandboxsdk;

import static dev.sandboxsdk.Fixtures.body;
import static dev.sandboxsdk.Fixtures.errorResponse;
import static dev.sandboxsdk.Fixtures.eventStream;
import static dev.sandboxsdk.Fixtures.json;
import static dev.sandboxsdk.Fixtures.parse;
import static dev.sandboxsdk.Fixtures.sse;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Pattern;
import okhttp3.mockwebserver.RecordedRequest;
import org.junit.jupiter.api.Test;

/** The waits and stdin of {@link SandboxProcess}, which run over the process's event stream. */
class SandboxProcessTest extends MockAgentTest {
  private static final String STARTED = "{\"processId\":\"web\",\"pid\":12275,\"command\":\"python3 -m http.server\","
      + "\"status\":\"running\",\"success\":true}";
  private static final String INFO = "{\"type\":\"process_info\",\"processId\":\"web\",\"pid\":12275,"
      + "\"command\":\"python3 -m http.server\",\"status\":\"running\"}";
  private static final Pattern SERVING = Pattern.compile("Serving HTTP on (\\S+) port (\\d+)");


  private static String output(String stream, String text, long offset) {
    return "{\"type\":\"" + stream + "\",\"processId\":\"web\",\"data\":\"" + text + "\",\"offset\":" + offset
        + ",\"bytes\":" + text.replace("\\n", "\n").replace("\\r", "\r").length() + "}";
  }

  private static String exit(int code, String status) {
    return "{\"type\":\"exit\",\"processId\":\"web\",\"exitCode\":" + code + ",\"status\":\"" + status + "\","
        + "\"timedOut\":false,\"data\":\"" + status + "\"}";
  }

  private SandboxProcess startWeb() throws InterruptedException {
    server.enqueue(json(STARTED));
    SandboxProcess process = sandbox.startProcess("python3 -m http.server");
    server.takeRequest();
    return process;
  }

  @Test
  void waitForLogMatchesALineSplitAcrossChunks() throws Exception {
    SandboxProcess web = startWeb();
    server.enqueue(eventStream(sse(INFO,
        output("stdout", "Serving H", 0),
        output("stdout", "TTP on 0.0.0.0 port 8000 ...\\nnext", 9))));

    LogMatch match = web.waitForLog(SERVING, Duration.ofSeconds(5));

    assertThat(match).isEqualTo(new LogMatch(StdStream.STDOUT, "Serving HTTP on 0.0.0.0 port 8000 ...",
        List.of("Serving HTTP on 0.0.0.0 port 8000", "0.0.0.0", "8000")));
    assertThat(match.match()).isEqualTo("Serving HTTP on 0.0.0.0 port 8000");
    RecordedRequest stream = server.takeRequest();
    assertThat(stream.getRequestUrl().encodedPath()).isEqualTo("/api/process/web/stream");
    assertThat(stream.getRequestUrl().queryParameter("since")).isEqualTo("0");
  }

  @Test
  void waitForLogKeepsTheStreamsApartAndDropsCarriageReturns() throws Exception {
    SandboxProcess web = startWeb();
    // stdout's partial line must not be completed by stderr's text
    server.enqueue(eventStream(sse(INFO,
        output("stdout", "Serving HTTP on ", 0),
        output("stderr", "127.0.0.1 port 1\\r\\n", 0),
        output("stdout", "::1 port 8000\\r\\n", 16))));

    LogMatch match = web.waitForLog(SERVING, Duration.ofSeconds(5));

    assertThat(match.stream()).isEqualTo(StdStream.STDOUT);
    assertThat(match.line()).isEqualTo("Serving HTTP on ::1 port 8000");
    assertThat(match.groups()).containsExactly("Serving HTTP on ::1 port 8000", "::1", "8000");
  }

  @Test
  void waitForLogMatchesALastLineWithoutNewlineAtExit() throws Exception {
    SandboxProcess web = startWeb();
    server.enqueue(eventStream(sse(INFO, output("stderr", "Serving HTTP on x port 1", 0), exit(0, "completed"))));

    LogMatch match = web.waitForLog(SERVING);

    assertThat(match.stream()).isEqualTo(StdStream.STDERR);
    assertThat(match.groups()).containsExactly("Serving HTTP on x port 1", "x", "1");
  }

  @Test
  void waitForLogThrowsProcessExitedExceptionWhenTheProcessEndsWithoutAMatch() throws Exception {
    SandboxProcess web = startWeb();
    server.enqueue(eventStream(sse(INFO, output("stderr", "OSError: [Errno 98] Address already in use\\n", 0),
        exit(1, "failed"))));
    server.enqueue(json("{\"process\":{\"id\":\"web\",\"pid\":12275,\"command\":\"python3 -m http.server\","
        + "\"status\":\"failed\",\"startTime\":\"2026-11-22T01:10:17.116632274Z\","
        + "\"endTime\":\"2026-11-22T01:10:17.216632274Z\",\"exitCode\":1,\"timedOut\":false,"
        + "\"stdoutBytes\":0,\"stderrBytes\":44},\"success\":true}"));

    Throwable thrown = catchThrowable(() -> web.waitForLog(SERVING, Duration.ofSeconds(5)));

    assertThat(thrown).isInstanceOf(ProcessExitedException.class).hasMessageContaining("exit code 1")
        .hasMessageContaining(SERVING.pattern());
    ProcessInfo info = ((ProcessExitedException) thrown).info();
    assertThat(info.status()).isEqualTo(ProcessStatus.FAILED);
    assertThat(info.exitCode()).isEqualTo(1);
  }

  @Test
  void waitForLogGivesUpAfterItsTimeoutWhileTheProcessKeepsRunning() throws Exception {
    try (RawHttpServer raw = new RawHttpServer((request, exchange) -> {
          if (request.target().equals("/api/process/start")) {
            exchange.respond(200, "application/json", STARTED);
            return true;
          }
          exchange.startEventStream();
          exchange.write(sse(INFO, output("stdout", "still starting\\n", 0)));
          exchange.writeUntilHangUp(": keep-alive\n\n", 100);
          return false;
        });
        Sandbox client = Fixtures.client(raw.url())) {
      SandboxProcess web = client.startProcess("python3 -m http.server");
      long start = System.nanoTime();

      Throwable thrown = catchThrowable(() -> web.waitForLog(SERVING, Duration.ofMillis(300)));

      assertThat(thrown).isInstanceOf(SandboxTimeoutException.class);
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isBetween(Duration.ofMillis(250), Duration.ofSeconds(3));
      assertThat(raw.hungUp.await(5, SECONDS)).as("the wait closed its stream").isTrue();
      List<String> targets = Arrays.asList(raw.requests.poll().target(), raw.requests.poll().target());
      assertThat(targets).containsExactly("/api/process/start", "/api/process/web/stream?since=0");
      assertThat(raw.requests).as("no kill: the process keeps running").isEmpty();
    }
  }

  @Test
  void waitForExitFollowsTheLiveStreamAndReturnsTheFinalInfo() throws Exception {
    SandboxProcess web = startWeb();
    server.enqueue(eventStream(sse(INFO, exit(0, "completed"))));
    server.enqueue(json(Fixtures.read("process-info.json").replace("fixture-1", "web")));

    ProcessInfo info = web.waitForExit(Duration.ofSeconds(5));

    assertThat(info.id()).isEqualTo("web");
    assertThat(info.status()).isEqualTo(ProcessStatus.FAILED);
    RecordedRequest stream = server.takeRequest();
    assertThat(stream.getRequestUrl().encodedPath()).isEqualTo("/api/process/web/stream");
    assertThat(stream.getRequestUrl().queryParameter("since")).as("live output only, no replay")
        .isEqualTo(Long.toString(Long.MAX_VALUE));
    assertThat(server.takeRequest().getPath()).isEqualTo("/api/process/web");
  }

  @Test
  void waitForExitBuildsTheInfoFromTheExitEventWhenTheRecordIsAlreadyGone() throws Exception {
    SandboxProcess web = startWeb();
    server.enqueue(eventStream(sse(INFO, "{\"type\":\"exit\",\"processId\":\"web\",\"exitCode\":124,"
        + "\"status\":\"killed\",\"timedOut\":true,\"signal\":\"SIGTERM\",\"data\":\"killed\"}")));
    server.enqueue(errorResponse(404, "PROCESS_NOT_FOUND", "no process with id 'web'", "{\"processId\":\"web\"}"));

    ProcessInfo info = web.waitForExit();

    assertThat(info.id()).isEqualTo("web");
    assertThat(info.pid()).isEqualTo(12275);
    assertThat(info.status()).isEqualTo(ProcessStatus.KILLED);
    assertThat(info.exitCode()).isEqualTo(124);
    assertThat(info.timedOut()).isTrue();
    assertThat(info.signal()).isEqualTo(Signal.SIGTERM);
  }

  @Test
  void onExitCompletesWithTheFinalInfo() throws Exception {
    SandboxProcess web = startWeb();
    server.enqueue(eventStream(sse(INFO, exit(0, "completed"))));
    server.enqueue(json(Fixtures.read("process-info.json").replace("fixture-1", "web")));

    CompletableFuture<ProcessInfo> exit = web.onExit();

    assertThat(exit.get(5, SECONDS).id()).isEqualTo("web");
  }

  @Test
  void cancellingOnExitClosesItsStream() throws Exception {
    try (RawHttpServer raw = new RawHttpServer((request, exchange) -> {
          if (request.target().equals("/api/process/start")) {
            exchange.respond(200, "application/json", STARTED);
            return true;
          }
          exchange.startEventStream();
          exchange.write(sse(INFO));
          exchange.awaitHangUp();
          return false;
        });
        Sandbox client = Fixtures.client(raw.url())) {
      SandboxProcess web = client.startProcess("python3 -m http.server");
      CompletableFuture<ProcessInfo> exit = web.onExit();
      raw.requests.poll(5, SECONDS);
      assertThat(raw.requests.poll(5, SECONDS).target()).startsWith("/api/process/web/stream");
      Thread.sleep(200);

      assertThat(exit.cancel(true)).isTrue();

      assertThat(raw.hungUp.await(5, SECONDS)).isTrue();
    }
  }

  @Test
  void writeStdinAndCloseStdinPostToTheStdinEndpoint() throws Exception {
    SandboxProcess web = startWeb();
    server.enqueue(json("{\"processId\":\"web\",\"bytesWritten\":6,\"eof\":false,\"success\":true}"));
    server.enqueue(json("{\"processId\":\"web\",\"bytesWritten\":0,\"eof\":true,\"success\":true}"));

    web.writeStdin("hello\n");
    web.closeStdin();

    RecordedRequest write = server.takeRequest();
    assertThat(write.getMethod()).isEqualTo("POST");
    assertThat(write.getPath()).isEqualTo("/api/process/web/stdin");
    assertThat(body(write)).isEqualTo(parse("{\"data\":\"hello\\n\"}"));
    RecordedRequest close = server.takeRequest();
    assertThat(body(close).get("eof").asBoolean()).isTrue();
  }

  @Test
  void statusAndIsAliveAskTheAgent() throws Exception {
    SandboxProcess web = startWeb();
    String ended = Fixtures.read("process-info.json").replace("fixture-1", "web");
    String running = ended.replaceFirst("\"status\" *: *\"[a-z]+\"", "\"status\":\"running\"");
    assertThat(running).as("the fixture's status was replaced").isNotEqualTo(ended);
    server.enqueue(json(running));
    server.enqueue(json(ended));
    server.enqueue(json(ended));

    assertThat(web.isAlive()).isTrue();
    assertThat(web.isAlive()).isFalse();
    assertThat(web.status()).isEqualTo(ProcessStatus.FAILED); // the fixture's status
    for (int i = 0; i < 3; i++) {
      assertThat(server.takeRequest().getPath()).isEqualTo("/api/process/web");
    }
  }
}
