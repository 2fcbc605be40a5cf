package dev.sandboxsdk.agent.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.DictionaryEntries;
import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.sandboxsdk.agent.AgentConfig;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.background.ProcessRoutes;
import dev.sandboxsdk.agent.exec.ExecRequests;
import dev.sandboxsdk.agent.process.Signal;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.function.Consumer;

/**
 * Coverage-guided fuzzing of the agent's request decoding: JSON bodies (exec, execute/stream,
 * process/start, stdin) and query strings, through the same pure functions the endpoints call.
 * The property: every input either decodes or is refused with an {@link AgentException} whose
 * status is 400, never another exception (which the agent would answer with a 500).
 *
 * <p>In a normal build Jazzer runs in regression mode: each method runs once per input in
 * {@code src/test/resources/.../RequestDecodingFuzzTestInputs/<method>/}. With {@code JAZZER_FUZZ=1}
 * it fuzzes (docs/performance.md, "Fuzzing").
 */
class RequestDecodingFuzzTest {
  private static final AgentConfig CONFIG = AgentConfig.builder().token("fuzz").build();

  /** Every query parameter set an endpoint accepts (ProcessRoutes). */
  private static final Set<String> LIST = Set.of("status");
  private static final Set<String> KILL = Set.of("signal", "graceMs");
  private static final Set<String> LOGS = Set.of("since", "stdoutSince", "stderrSince", "maxBytes", "encoding");
  private static final Set<String> STREAM = Set.of("since", "stdoutSince", "stderrSince", "encoding");

  @FuzzTest(maxDuration = "2m")
  @DictionaryEntries({"\"command\"", "\"argv\"", "\"env\"", "\"cwd\"", "\"timeoutMs\"", "\"stdin\"",
      "\"maxOutputBytes\"", "\"encoding\"", "\"sessionId\"", "\"origin\"", "\"processId\"", "\"autoCleanup\"", "\"data\"",
      "\"eof\"", "\"pipe\"", "\"base64\"", "\"utf-8\"", "true", "null", "\\u0000", "\\ud800", "1e400"})
  void requestBodies(byte[] body) {
    Json json;
    try {
      json = Json.parse(body);
    } catch (AgentException e) {
      assertIsClientError(e);
      return;
    }
    for (ExecRequests.Kind kind : ExecRequests.Kind.values()) {
      decodes(j -> ExecRequests.parse(j, kind, CONFIG), json);
    }
    decodes(ProcessRoutes::stdinWrite, json);
  }

  @FuzzTest(maxDuration = "2m")
  @DictionaryEntries({"since=", "stdoutSince=", "stderrSince=", "maxBytes=", "encoding=", "signal=", "graceMs=",
      "status=", "&", "%", "%2", "+", "SIGKILL", "9223372036854775808"})
  void queryStrings(byte[] input) {
    URI uri;
    try {
      // What the JDK's HttpServer hands an endpoint: the request target, parsed by java.net.URI.
      uri = new URI("/api/process/p1/logs?" + new String(input, StandardCharsets.ISO_8859_1));
    } catch (URISyntaxException e) {
      return; // the server answers such a request line itself, before any endpoint runs
    }
    decodes(u -> Query.parse(u, LIST).string("status"), uri);
    decodes(u -> {
      Query q = Query.parse(u, KILL);
      if (q.string("signal") != null) {
        Signal.parse(q.string("signal"), "signal");
      }
      q.integer("graceMs", 0, 10 * 60 * 1000, CONFIG.graceMs());
    }, uri);
    decodes(u -> {
      Query q = Query.parse(u, LOGS);
      q.integer("since", 0, Long.MAX_VALUE, 0);
      q.integer("stdoutSince", 0, Long.MAX_VALUE, 0);
      q.integer("maxBytes", 1, Integer.MAX_VALUE - 8, Integer.MAX_VALUE - 8);
      if (q.string("encoding") != null) {
        ExecRequests.encoding(q.string("encoding"), "encoding");
      }
    }, uri);
    decodes(u -> Query.parse(u, STREAM).integer("stderrSince", 0, Long.MAX_VALUE, 0), uri);
  }

  private static <T> void decodes(Consumer<T> decoder, T input) {
    try {
      decoder.accept(input);
    } catch (AgentException e) {
      assertIsClientError(e);
    }
  }

  private static void assertIsClientError(AgentException e) {
    assertThat(e.code().httpStatus()).as("%s: %s", e.code(), e.getMessage()).isEqualTo(400);
    assertThat(e.getMessage()).isNotBlank();
  }
}
