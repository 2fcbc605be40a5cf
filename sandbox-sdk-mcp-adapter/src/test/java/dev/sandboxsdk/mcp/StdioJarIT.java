package dev.sandboxsdk.mcp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The runnable jar over stdio, as an MCP client starts it: a child {@code java -jar sandbox-mcp.jar
 * --stdio}. Only protocol messages reach stdout, sandbox output that looks like
 * JSON-RPC stays inside results, and the process exits by itself when stdin closes. Also the exit
 * status and messages of command-line mistakes.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class StdioJarIT {
  private static final ObjectMapper MAPPER = new ObjectMapper()
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
  private static final Duration EXIT_WAIT = Duration.ofSeconds(15);
  private static final String FAKE_RESPONSE = "{\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{}}";

  @TempDir
  Path tmp;

  @Test
  void stdoutCarriesOnlyProtocolMessagesAndTheProcessExitsWhenStdinCloses() throws Exception {
    Path stderrLog = tmp.resolve("stderr.log");
    Process process = start(List.of("--stdio"), stderrLog);
    try {
      StdoutReader stdout = new StdoutReader(process.getInputStream());
      OutputStream stdin = process.getOutputStream();
      ObjectNode initParams = MAPPER.createObjectNode().put("protocolVersion", "2025-11-25");
      initParams.putObject("capabilities");
      initParams.putObject("clientInfo").put("name", "StdioJarIT").put("version", "1");
      write(stdin, request(1, "initialize", initParams));
      write(stdin, MAPPER.createObjectNode().put("jsonrpc", "2.0").put("method", "notifications/initialized"));
      write(stdin, request(2, "tools/list", null));
      write(stdin, execCall(3, "echo out1; echo err1 >&2; sleep 0.2; echo out2", "p3"));
      // Sandbox output that looks like a JSON-RPC response, a raw control character, escape
      // sequences, a NUL and bytes that are not UTF-8, on stdout and on stderr.
      write(stdin, execCall(4, "echo '" + FAKE_RESPONSE + "'; printf 'ctl\\001\\033[31m red\\n';"
          + " printf '\\000\\377\\376\\n'; echo '" + FAKE_RESPONSE + "' >&2", null));
      stdin.write("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\n".getBytes(StandardCharsets.UTF_8));
      stdin.flush();

      Map<String, JsonNode> responses = new LinkedHashMap<>();
      List<JsonNode> notifications = new ArrayList<>();
      Set<String> expected = Set.of("1", "2", "3", "4", "null");
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (!responses.keySet().containsAll(expected)) {
        byte[] line = stdout.lines.poll(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        if (line == null || line == StdoutReader.EOF) {
          fail("responses %s did not all arrive; got %s", expected, responses.keySet());
        }
        JsonNode m = parseOrNull(line);
        if (m == null) {
          continue; // the checks below report it
        }
        if (m.has("id")) {
          responses.put(m.get("id").isNull() ? "null" : m.get("id").asText(), m);
        } else {
          notifications.add(m);
        }
      }
      List<ProcessHandle> descendants = process.descendants().collect(Collectors.toList());
      assertThat(descendants).as("the exec calls started a local sandbox agent as a child").isNotEmpty();
      long closedAt = System.nanoTime();

      stdin.close();

      assertThat(process.waitFor(EXIT_WAIT.toSeconds(), TimeUnit.SECONDS))
          .as("the server exits by itself within %s after stdin closes", EXIT_WAIT).isTrue();
      System.err.printf("[it] the stdio server exited %d ms after stdin closed%n",
          TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - closedAt));
      assertThat(process.exitValue()).isZero();
      stdout.awaitEof(Duration.ofSeconds(5));

      // Every line on stdout is exactly one JSON-RPC 2.0 object in valid UTF-8, and nothing else got there.
      assertThat(stdout.unterminated).as("stdout ends with a complete line").isFalse();
      assertThat(stdout.all).isNotEmpty();
      for (byte[] line : stdout.all) {
        String text = strictUtf8(line);
        JsonNode m = MAPPER.readTree(text);
        assertThat(m.isObject()).as("a JSON object: %s", text).isTrue();
        assertThat(m.path("jsonrpc").asText()).as("jsonrpc 2.0: %s", text).isEqualTo("2.0");
      }

      assertThat(responses.get("1").path("result").path("protocolVersion").asText()).isEqualTo("2025-11-25");
      assertThat(responses.get("2").path("result").path("tools").size()).isEqualTo(41);

      JsonNode exec3 = responses.get("3").path("result");
      assertThat(exec3.path("isError").asBoolean(false)).isFalse();
      assertThat(exec3.path("structuredContent").path("stdout").asText()).isEqualTo("out1\nout2\n");
      assertThat(exec3.path("structuredContent").path("stderr").asText()).isEqualTo("err1\n");
      List<JsonNode> progress = notifications.stream()
          .filter(n -> n.path("method").asText().equals("notifications/progress"))
          .filter(n -> n.path("params").path("progressToken").asText().equals("p3"))
          .collect(Collectors.toList());
      assertThat(progress).as("progress for the exec with a token").isNotEmpty();
      String streamed = progress.stream().map(n -> n.path("params").path("message").asText(""))
          .collect(Collectors.joining());
      assertThat(streamed).contains("out1", "err1");

      JsonNode exec4 = responses.get("4").path("result").path("structuredContent");
      assertThat(exec4.path("stdout").asText()).contains(FAKE_RESPONSE, "ctl\u0001\u001b[31m red");
      assertThat(exec4.path("stderr").asText()).contains(FAKE_RESPONSE);
      assertThat(responses).as("the sandbox's fake response is not a response").doesNotContainKey("99");

      JsonNode parseError = responses.get("null");
      assertThat(parseError.path("error").path("code").asInt()).isEqualTo(-32700);
      assertThat(parseError.get("id").isNull()).isTrue();

      String stderr = Files.readString(stderrLog, StandardCharsets.UTF_8);
      assertThat(stderr).as("logs go to stderr").contains("INFO");
      assertThat(awaitGone(descendants, Duration.ofSeconds(10)))
          .as("no sandbox agent outlives the server").isEmpty();
    } finally {
      process.destroyForcibly();
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"--bogus", "--port 5", "--stdio --http", "--image sandbox-agent",
      "--provider container --memory 12x", "--provider docker"})
  void badOptionExitsWithStatus2AndUsageOnStderrOnly(String args) throws Exception {
    Finished f = runToExit(Arrays.asList(args.split(" ")));

    assertThat(f.status()).as("exit status for %s; stderr: %s", args, f.stderr()).isEqualTo(2);
    assertThat(f.stdout()).isEmpty();
    assertThat(f.stderr()).contains("usage: java -jar sandbox-mcp.jar");
  }

  @Test
  void httpWithoutTokenOrNoAuthExitsWithStatus2NamingTokenFile() throws Exception {
    Finished f = runToExit(List.of("--http", "--port", "0"));

    assertThat(f.status()).as("stderr: %s", f.stderr()).isEqualTo(2);
    assertThat(f.stdout()).isEmpty();
    assertThat(f.stderr()).contains("--token-file");
  }

  // ---- helpers

  private Process start(List<String> args, Path stderr) throws IOException {
    String jar = System.getProperty("mcp.jar");
    assertThat(jar).as("system property mcp.jar (set by failsafe)").isNotNull();
    assertThat(Path.of(jar)).isRegularFile();
    String java = ProcessHandle.current().info().command()
        .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    List<String> command = new ArrayList<>(List.of(java, "-jar", jar));
    command.addAll(args);
    ProcessBuilder pb = new ProcessBuilder(command).directory(tmp.toFile()).redirectError(stderr.toFile());
    // a token in the developer's environment would change what the option checks see
    pb.environment().remove("SANDBOX_MCP_TOKEN");
    pb.environment().remove("SANDBOX_AGENT_TOKEN");
    return pb.start();
  }

  /** A finished run of the jar: exit status, stdout, stderr. */
  private record Finished(int status, String stdout, String stderr) {
  }

  private Finished runToExit(List<String> args) throws Exception {
    Path stderr = tmp.resolve("stderr-" + System.nanoTime() + ".log");
    Process process = start(args, stderr);
    try {
      process.getOutputStream().close(); // a server that wrongly starts on stdio then ends at once
      StdoutReader stdout = new StdoutReader(process.getInputStream());
      if (!process.waitFor(EXIT_WAIT.toSeconds(), TimeUnit.SECONDS)) {
        fail("%s did not exit within %s", args, EXIT_WAIT);
      }
      stdout.awaitEof(Duration.ofSeconds(5));
      String out = stdout.all.stream().map(b -> new String(b, StandardCharsets.UTF_8))
          .collect(Collectors.joining("\n"));
      return new Finished(process.exitValue(), out, Files.readString(stderr, StandardCharsets.UTF_8));
    } finally {
      process.destroyForcibly();
    }
  }

  private static ObjectNode request(int id, String method, ObjectNode params) {
    ObjectNode m = MAPPER.createObjectNode().put("jsonrpc", "2.0").put("id", id).put("method", method);
    if (params != null) {
      m.set("params", params);
    }
    return m;
  }

  private static ObjectNode execCall(int id, String command, String progressToken) {
    ObjectNode params = MAPPER.createObjectNode().put("name", "exec");
    params.putObject("arguments").put("command", command);
    if (progressToken != null) {
      params.putObject("_meta").put("progressToken", progressToken);
    }
    return request(id, "tools/call", params);
  }

  private static void write(OutputStream stdin, ObjectNode message) throws IOException {
    stdin.write((MAPPER.writeValueAsString(message) + "\n").getBytes(StandardCharsets.UTF_8));
    stdin.flush();
  }

  private static JsonNode parseOrNull(byte[] line) {
    try {
      JsonNode m = MAPPER.readTree(strictUtf8(line));
      return m.isObject() ? m : null;
    } catch (IOException notJson) {
      return null;
    }
  }

  private static String strictUtf8(byte[] bytes) throws CharacterCodingException {
    return StandardCharsets.UTF_8.newDecoder()
        .onMalformedInput(CodingErrorAction.REPORT)
        .onUnmappableCharacter(CodingErrorAction.REPORT)
        .decode(ByteBuffer.wrap(bytes))
        .toString();
  }

  /** The processes among {@code handles} still alive after waiting up to {@code timeout}. */
  private static List<ProcessHandle> awaitGone(List<ProcessHandle> handles, Duration timeout)
      throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    List<ProcessHandle> alive = handles.stream().filter(ProcessHandle::isAlive).collect(Collectors.toList());
    while (!alive.isEmpty() && System.nanoTime() < deadline) {
      Thread.sleep(50);
      alive = alive.stream().filter(ProcessHandle::isAlive).collect(Collectors.toList());
    }
    return alive;
  }

  /**
   * Reads the child's stdout as raw bytes on a background thread and splits it at {@code \n}, so
   * the test sees exactly what was written (no decoding that could hide invalid UTF-8).
   */
  private static final class StdoutReader {
    static final byte[] EOF = new byte[0];
    final BlockingQueue<byte[]> lines = new LinkedBlockingQueue<>();
    final List<byte[]> all = new CopyOnWriteArrayList<>();
    private final Thread thread;
    volatile boolean unterminated;

    StdoutReader(InputStream in) {
      thread = new Thread(() -> read(in), "stdout-reader");
      thread.setDaemon(true);
      thread.start();
    }

    private void read(InputStream raw) {
      try (InputStream in = new BufferedInputStream(raw)) {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        for (int b; (b = in.read()) >= 0; ) {
          if (b == '\n') {
            add(line.toByteArray());
            line.reset();
          } else {
            line.write(b);
          }
        }
        if (line.size() > 0) {
          unterminated = true;
          add(line.toByteArray());
        }
      } catch (IOException closed) {
        // the process is gone; what it wrote is recorded
      } finally {
        lines.add(EOF);
      }
    }

    private void add(byte[] line) {
      all.add(line);
      lines.add(line);
    }

    void awaitEof(Duration timeout) throws InterruptedException {
      thread.join(timeout.toMillis());
      assertThat(thread.isAlive()).as("stdout reaches end of file").isFalse();
    }
  }
}
