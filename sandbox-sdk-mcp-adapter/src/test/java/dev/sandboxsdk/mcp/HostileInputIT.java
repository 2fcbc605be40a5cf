package dev.sandboxsdk.mcp;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sandboxsdk.testkit.Await;
import dev.sandboxsdk.testkit.ProcStats;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Malformed JSON-RPC on the runnable jar's POST /mcp, as a matrix: broken JSON, batches, every
 * envelope member missing or of the wrong type, ids of every type and size, and for each tool
 * that tools/list reports, every argument with each wrong type, 1 MiB strings and numbers past
 * long. Each gets a JSON-RPC error, a tool result or an HTTP 4xx; never a 5xx, never silence;
 * and the server's descriptors, threads and memory come back afterwards.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class HostileInputIT {
  private static final String TOKEN = "hostile-input-token-93c1e07b5d2a";
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final Pattern READY = Pattern.compile("SANDBOX_MCP_READY http://[^:]+:(\\d+)/mcp");
  private static final String MIB = "x".repeat(1024 * 1024);
  /** The time-limit argument of tools that otherwise wait seconds when their arguments are valid. */
  private static final Map<String, String> LIMITS = Map.of("watchFiles", "seconds", "waitForPort", "timeoutSeconds",
      "streamProcessLogs", "timeoutSeconds");

  @TempDir
  static Path tmp;

  private static Process child;
  private static int port;
  private static String session;
  private final ExecutorService writer = Executors.newSingleThreadExecutor();

  @BeforeAll
  static void startServer() throws Exception {
    String jar = System.getProperty("mcp.jar");
    assertThat(jar).as("system property mcp.jar (set by failsafe)").isNotNull();
    String java = ProcessHandle.current().info().command()
        .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    Path log = tmp.resolve("server.log");
    ProcessBuilder pb = new ProcessBuilder(java, "-Xmx256m", "-Dsun.net.httpserver.maxReqTime=4", "-jar", jar, "--http", "--port", "0",
        "--state-dir", tmp.resolve("state").toString()) // getSandbox persistent: true keeps sandboxes there
        .directory(tmp.toFile()).redirectErrorStream(true).redirectOutput(log.toFile());
    pb.environment().put("SANDBOX_MCP_TOKEN", TOKEN);
    pb.environment().remove("SANDBOX_AGENT_TOKEN");
    child = pb.start();
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (port == 0 && System.nanoTime() < until && child.isAlive()) {
      Matcher m = READY.matcher(Files.readString(log));
      if (m.find()) {
        port = Integer.parseInt(m.group(1));
      }
      Thread.sleep(50);
    }
    assertThat(port).as("server ready; log: %s", Files.readString(log)).isPositive();
    Answer init = exchange(request("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
        + "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"hostile-input\",\"version\":\"1\"}}}", null, null));
    Matcher m = Pattern.compile("(?i)mcp-session-id: (\\S+)").matcher(init.head());
    assertThat(m.find()).as("session id in %s", init.head()).isTrue();
    session = m.group(1);
    exchange(request("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", session, null));
  }

  @AfterAll
  static void stopServer() throws InterruptedException {
    if (child != null) {
      child.destroy();
      if (!child.waitFor(10, TimeUnit.SECONDS)) {
        child.destroyForcibly();
      }
    }
  }

  /** What a case must get besides "no 5xx, no hang": an error (JSON-RPC, tool or HTTP 4xx), or any clean answer. */
  enum Expect { ERROR, ANY }

  record Case(String label, String body, Expect expect, String contentType) {
  }

  record Answer(int status, String head, String body, String failure) {
  }

  @Test
  void malformedJsonRpcAndToolArgumentsGetErrorsNeverServerErrorsAndCostNothing() throws Exception {
    // The sandbox exists and every tool ran once, so lazily made threads and files are in the baseline.
    JsonNode tools = rpc("tools/list", "{}").path("result").path("tools");
    assertThat(tools.size()).as("tools/list").isGreaterThan(5);
    rpc("tools/call", "{\"name\":\"exec\",\"arguments\":{\"command\":\"true\"}}");

    List<Case> cases = new ArrayList<>();
    String ping = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}";
    for (String b : List.of("{", "nope", "{\"jsonrpc\":\"2.0\",", ping + " x", ping + ping, "\u0000", "", "\"ping\"", "42", "null",
        "true", "[]", "[1,2]", "[" + ping + "]", "[" + ping + "," + ping + "]", "[" + String.join(",", java.util.Collections.nCopies(2_000, ping)) + "]",
        "{}", "{\"id\":1,\"method\":\"ping\"}", "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}",
        "{\"jsonrpc\":2,\"id\":1,\"method\":\"ping\"}", "{\"jsonrpc\":\"2.0\",\"id\":1}", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":1}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":null}", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"no/such\"}", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"" + MIB + "\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":1}", "{\"x\":\"" + MIB + "\"}",
        "{\"a\":" + "[".repeat(5_000) + "]".repeat(5_000) + "}")) {
      cases.add(new Case("body " + abbreviate(b), b, Expect.ERROR, "application/json"));
    }
    for (String id : List.of("true", "{}", "[]", "1.5", "null", "1e309", "-1e309", "9223372036854775808", "-1",
        "9223372036854775807", "\"" + MIB + "\"", "\"\"", "\"\\u0000\"", "9".repeat(5_000))) {
      // An id of a wrong type may be refused, or echoed; either way an answer.
      cases.add(new Case("id " + abbreviate(id), "{\"jsonrpc\":\"2.0\",\"id\":" + id + ",\"method\":\"ping\"}", Expect.ANY,
          "application/json"));
    }
    for (String params : List.of("1", "\"x\"", "[]", "null", "{}", "{\"name\":1}", "{\"name\":\"no-such-tool\"}",
        "{\"name\":\"" + MIB + "\"}", "{\"name\":\"exec\",\"arguments\":\"x\"}", "{\"name\":\"exec\",\"arguments\":[]}",
        "{\"name\":\"exec\",\"arguments\":1}")) {
      cases.add(new Case("tools/call params " + abbreviate(params), call(params), Expect.ERROR, "application/json"));
    }
    cases.add(new Case("duplicate id member", "{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"ping\"}",
        Expect.ERROR, "application/json"));
    // Leniencies the server may keep: a _meta it cannot use.
    for (String b : List.of(
        call("{\"name\":\"exec\",\"arguments\":{\"command\":\"true\"},\"_meta\":1}"),
        call("{\"name\":\"exec\",\"arguments\":{\"command\":\"true\"},\"_meta\":{\"progressToken\":[]}}"))) {
      cases.add(new Case("lenient " + abbreviate(b), b, Expect.ANY, "application/json"));
    }
    cases.add(new Case("body over 4 MiB", "{\"x\":\"" + MIB.repeat(5) + "\"}", Expect.ERROR, "application/json"));
    cases.add(new Case("text/plain", ping, Expect.ANY, "text/plain"));
    cases.add(new Case("form", "jsonrpc=2.0&id=1&method=ping", Expect.ERROR, "application/x-www-form-urlencoded"));

    int toolCases = 0;
    for (JsonNode tool : tools) {
      String name = tool.path("name").asText();
      JsonNode properties = tool.path("inputSchema").path("properties");
      for (Iterator<Map.Entry<String, JsonNode>> it = properties.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> p = it.next();
        String type = p.getValue().path("type").asText("");
        Map<String, Expect> values = new TreeMap<>();
        for (String v : List.of("\"" + MIB + "\"", "\"a\\u0000b\"", "-1", "1e309", "-1e309", "9223372036854775808",
            "9223372036854775807", "-9223372036854775809", "1.5", "[]", "{}", "null", "true", "[\"" + MIB + "\"]",
            "{\"A\":\"" + MIB + "\"}", "{\"A\\u0000\":\"x\"}")) {
          values.put(v, wrongFor(type, v) ? Expect.ERROR : Expect.ANY);
        }
        for (Map.Entry<String, Expect> v : values.entrySet()) {
          // Only the mutated argument (plus what the tool requires) so a valid call cannot slip through.
          cases.add(new Case(name + "." + p.getKey() + "=" + abbreviate(v.getKey()),
              call("{\"name\":\"" + name + "\",\"arguments\":{" + required(tool, p.getKey()) + "\"" + p.getKey() + "\":"
                  + v.getKey() + "}}"), v.getValue(), "application/json"));
          toolCases++;
        }
      }
    }

    awaitQuiet();
    long baseFds = fds();
    long baseThreads = threads();
    long baseRss = rssKib();
    Map<String, Integer> outcomes = new TreeMap<>();
    List<String> failures = new ArrayList<>();
    long peakFds = 0;
    long peakThreads = 0;
    long peakRss = 0;
    long start = System.nanoTime();
    for (int i = 0; i < cases.size(); i++) {
      Case c = cases.get(i);
      Answer a = send(request(c.body(), session, c.contentType()));
      String outcome = outcome(a);
      outcomes.merge(outcome, 1, Integer::sum);
      if (a.failure() != null) {
        failures.add(c.label() + " -> " + a.failure());
      } else if (a.status() >= 500) {
        failures.add(c.label() + " -> HTTP " + a.status() + ": " + abbreviate(a.body()));
      } else if (outcome.equals("unparsable")) {
        failures.add(c.label() + " -> HTTP " + a.status() + " with a body that is neither JSON-RPC nor an error: "
            + abbreviate(a.body()));
      } else if (c.expect() == Expect.ERROR && outcome.equals("result")) {
        failures.add(c.label() + " -> accepted: " + abbreviate(a.body()));
      }
      if (i % 25 == 0) {
        peakFds = Math.max(peakFds, fds());
        peakThreads = Math.max(peakThreads, threads());
        peakRss = Math.max(peakRss, rssKib());
      }
    }
    long matrixMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    await(() -> fds() <= baseFds && threads() <= baseThreads + 4, 30);
    long rss = rssKib();
    System.out.printf("hostile MCP input: %d cases (%d tool arguments of %d tools) in %d ms, outcomes %s, %d failures;"
            + " server fds %d -> peak %d -> %d, threads %d -> peak %d -> %d, RSS %d -> peak %d -> %d KiB%n", cases.size(),
        toolCases, tools.size(), matrixMs, outcomes, failures.size(), baseFds, peakFds, fds(), baseThreads, peakThreads,
        threads(), baseRss, peakRss, rss);
    assertThat(failures).as("cases answered wrongly").isEmpty();
    assertThat(fds()).as("descriptors (baseline %d)", baseFds).isLessThanOrEqualTo(baseFds);
    assertThat(threads()).as("threads (baseline %d)", baseThreads).isLessThanOrEqualTo(baseThreads + 4);
    // The heap (-Xmx256m) grows under 1 MiB arguments echoed in error messages; it must stay within its cap.
    assertThat(rss).as("RSS in KiB (baseline %d)", baseRss).isLessThan(448 * 1024);
    assertThat(rpc("ping", "{}").path("result").isObject()).as("ping after the matrix").isTrue();
    JsonNode echo = rpc("tools/call", "{\"name\":\"exec\",\"arguments\":{\"command\":\"echo still here\"}}");
    assertThat(echo.path("result").path("structuredContent").path("stdout").asText()).isEqualTo("still here\n");
  }

  /** Whether {@code value} (JSON text) breaks a property of JSON-schema {@code type}; untyped ones ($ref) are not judged. */
  static boolean wrongFor(String type, String value) {
    if (value.equals("null")) {
      return false; // an optional argument given as null counts as absent
    }
    boolean string = value.startsWith("\"");
    boolean number = value.matches("-?[0-9.eE]+");
    switch (type) {
      case "string":
        return !string;
      case "boolean":
        return !value.equals("true");
      case "integer":
        // every number in the list is outside the tools' ranges, negative or fractional
        return true;
      case "number":
        return !number || !value.equals("1.5");
      default:
        return false;
    }
  }

  /** Required arguments other than {@code except}, with harmless values, as JSON members followed by a comma. */
  static String required(JsonNode tool, String except) {
    StringBuilder out = new StringBuilder();
    // A call that passes validation must not wait out a default time limit (watchFiles: 10 s).
    String limit = LIMITS.get(tool.path("name").asText());
    if (limit != null && !limit.equals(except)) {
      out.append('"').append(limit).append("\":0.1,");
    }
    for (JsonNode r : tool.path("inputSchema").path("required")) {
      String name = r.asText();
      if (!name.equals(except)) {
        out.append('"').append(name).append("\":\"").append(name.equals("language") ? "python" : "no-such-" + name).append("\",");
      }
    }
    return out.toString();
  }

  static String outcome(Answer a) {
    if (a.failure() != null) {
      return "failure";
    }
    if (a.status() >= 400) {
      return "http " + a.status();
    }
    if (a.status() == 202 && a.body().isBlank()) {
      return "202 accepted";
    }
    String json = a.body().strip();
    for (String line : a.body().split("\n")) {
      if (line.startsWith("data: ") && (line.contains("\"result\"") || line.contains("\"error\""))) {
        json = line.substring(6);
      }
    }
    try {
      JsonNode n = MAPPER.readTree(json);
      if (n != null && n.isArray() && n.size() > 0) {
        n = n.get(0);
      }
      if (n != null && n.has("error")) {
        return "rpc error";
      }
      if (n != null && n.path("result").path("isError").asBoolean(false)) {
        return "tool error";
      }
      return n != null && n.has("result") ? "result" : "unparsable";
    } catch (IOException e) {
      return "unparsable";
    }
  }

  static String call(String params) {
    return "{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"tools/call\",\"params\":" + params + "}";
  }

  static String abbreviate(String s) {
    String shown = s.length() > 50 ? s.substring(0, 40) + "...(" + s.length() + ")" : s;
    return shown.replace("\u0000", "\\0");
  }

  static String request(String body, String sessionId, String contentType) {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    return "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + TOKEN + "\r\nConnection: close\r\n"
        + "Accept: application/json, text/event-stream\r\n"
        + (contentType == null ? "Content-Type: application/json\r\n" : contentType.isEmpty() ? "" : "Content-Type: " + contentType + "\r\n")
        + (sessionId == null ? "" : "Mcp-Session-Id: " + sessionId + "\r\n")
        + "Content-Length: " + bytes.length + "\r\n\r\n" + body;
  }

  /** Sends from another thread (a server may answer before it has read all), reads until the answer. */
  Answer send(String text) {
    Future<?> sent = null;
    try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
      s.setSoTimeout(20_000);
      sent = writer.submit(() -> {
        try {
          s.getOutputStream().write(text.getBytes(StandardCharsets.UTF_8));
          s.getOutputStream().flush();
        } catch (IOException e) {
          // answered and closed early
        }
      });
      return read(s.getInputStream());
    } catch (SocketTimeoutException e) {
      return new Answer(-1, "", "", "no answer within 20 s (hang)");
    } catch (IOException e) {
      return new Answer(-1, "", "", "connection failed before an answer: " + e);
    } finally {
      if (sent != null) {
        sent.cancel(true);
      }
    }
  }

  static Answer exchange(String text) throws IOException {
    try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
      s.setSoTimeout(30_000);
      s.getOutputStream().write(text.getBytes(StandardCharsets.UTF_8));
      return read(s.getInputStream());
    }
  }

  static Answer read(InputStream in) throws IOException {
    ByteArrayOutputStream h = new ByteArrayOutputStream();
    while (!h.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
      int b = in.read();
      if (b < 0) {
        break;
      }
      h.write(b);
    }
    String head = h.toString(StandardCharsets.ISO_8859_1);
    Matcher status = Pattern.compile("^HTTP/1.1 (\\d{3})").matcher(head);
    if (!status.find()) {
      return new Answer(-1, head, "", "no status line: '" + abbreviate(head) + "'");
    }
    Matcher length = Pattern.compile("(?i)content-length: (\\d+)").matcher(head);
    String body;
    if (length.find()) {
      body = new String(in.readNBytes(Integer.parseInt(length.group(1))), StandardCharsets.UTF_8);
    } else if (head.toLowerCase(Locale.ROOT).contains("transfer-encoding: chunked")) {
      // An SSE stream: de-chunk until the event with the answer is complete; the stream may stay open.
      ByteArrayOutputStream events = new ByteArrayOutputStream();
      Pattern answer = Pattern.compile("(?m)^data: .*\"(result|error)\".*\n");
      while (!answer.matcher(events.toString(StandardCharsets.UTF_8)).find()) {
        StringBuilder size = new StringBuilder();
        for (int c = in.read(); c >= 0 && c != '\n'; c = in.read()) {
          size.append((char) c);
        }
        int n = size.toString().isBlank() ? 0 : Integer.parseInt(size.toString().strip(), 16);
        if (n == 0) {
          break;
        }
        events.writeBytes(in.readNBytes(n));
        in.readNBytes(2);
      }
      body = events.toString(StandardCharsets.UTF_8);
    } else {
      body = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    return new Answer(Integer.parseInt(status.group(1)), head, body, null);
  }

  static JsonNode rpc(String method, String params) throws IOException {
    Answer a = exchange(request("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"" + method + "\",\"params\":" + params + "}", session, null));
    for (String line : a.body().split("\n")) {
      if (line.startsWith("data: ")) {
        return MAPPER.readTree(line.substring(6));
      }
    }
    return MAPPER.readTree(a.body());
  }

  private static long fds() {
    return ProcStats.fds(child.pid());
  }

  private static long threads() {
    return ProcStats.threads(child.pid());
  }

  private static long rssKib() {
    return ProcStats.rssKib(child.pid());
  }

  private static void awaitQuiet() throws InterruptedException {
    ProcStats.awaitSteadyFds(child.pid());
  }

  private static void await(java.util.function.BooleanSupplier condition, int seconds) throws InterruptedException {
    Await.until(Duration.ofSeconds(seconds), Duration.ofMillis(100), condition);
  }
}
