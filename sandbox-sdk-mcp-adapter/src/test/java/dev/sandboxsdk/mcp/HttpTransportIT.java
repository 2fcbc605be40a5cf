package dev.sandboxsdk.mcp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.mcp.internal.AdapterConfig;
import dev.sandboxsdk.mcp.internal.HttpTransport;
import dev.sandboxsdk.mcp.internal.McpServer;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Streamable HTTP end to end: an in-process {@link McpServer} behind a real {@link HttpTransport},
 * driven with the JDK's HTTP client (and a raw socket where the Host header must be forged).
 * Covers sessions, authentication, DNS-rebinding checks, content negotiation, limits, SSE
 * progress, cancellation and the GET stream.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class HttpTransportIT {
  private static final String TOKEN = "it-token-3f9c2a7b5e1d4c60";
  private static final String NEWEST = "2025-11-25";
  private static final Duration WAIT = Duration.ofSeconds(20);
  private static final int MAX_BODY = 4 * 1024 * 1024;
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final HttpClient CLIENT = HttpClient.newBuilder()
      .version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(30))
      .build();
  private static final AtomicInteger IDS = new AtomicInteger(1_000);

  static {
    // Read once by the JDK server at its first use: a short request deadline keeps the
    // slow-client test quick (the server's own default is 10 s).
    System.setProperty("sun.net.httpserver.maxReqTime", "2");
  }

  @TempDir
  static Path tmp;

  private static Path tokenFile;
  private static McpServer server;
  private static HttpTransport transport;
  private static URI endpoint;

  @BeforeAll
  static void startServer() throws IOException {
    tokenFile = Files.writeString(tmp.resolve("token"), TOKEN + "\n");
    // keep-alive every second so the GET-stream test sees a periodic comment quickly
    server = new McpServer(config("--keep-alive-seconds", "1"));
    transport = new HttpTransport(server);
    endpoint = transport.start();
  }

  @AfterAll
  static void stopServer() {
    if (transport != null) {
      transport.close();
    }
    if (server != null) {
      server.close(); // destroys the local sandbox the exec tests started
    }
  }

  // ---- initialize and version negotiation

  @Test
  void initializeAnswersWithJsonAndASessionId() throws Exception {
    HttpResponse<String> r = send(post(initialize(1, NEWEST)));

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.headers().firstValue("Content-Type")).hasValueSatisfying(
        ct -> assertThat(ct).startsWith("application/json"));
    assertThat(r.headers().firstValue("Mcp-Session-Id")).hasValueSatisfying(
        id -> assertThat(id).as("visible ASCII only (MCP)").matches("[\\x21-\\x7E]{16,}"));
    JsonNode body = json(r.body());
    assertThat(body.path("jsonrpc").asText()).isEqualTo("2.0");
    assertThat(body.path("id").asInt()).isEqualTo(1);
    assertThat(body.path("result").path("protocolVersion").asText()).isEqualTo(NEWEST);
    assertThat(body.path("result").path("capabilities").has("tools")).isTrue();
    assertThat(body.path("result").path("serverInfo").path("name").asText()).isNotEmpty();

    String session = r.headers().firstValue("Mcp-Session-Id").orElseThrow();
    assertThat(send(post(session, request(2, "ping"))).statusCode()).as("the new session is usable").isEqualTo(200);
  }

  @Test
  void initializeWithAnUnknownVersionOffersTheServersNewest() throws Exception {
    HttpResponse<String> r = send(post(initialize(1, "1999-01-01")));

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(json(r.body()).path("result").path("protocolVersion").asText()).isEqualTo(NEWEST);
    assertThat(r.headers().firstValue("Mcp-Session-Id")).isPresent();
  }

  @ParameterizedTest
  @ValueSource(strings = {"2025-03-26", "2025-06-18"})
  void initializeEchoesAnOlderVersionTheServerSpeaks(String version) throws Exception {
    HttpResponse<String> r = send(post(initialize(1, version)));

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(json(r.body()).path("result").path("protocolVersion").asText()).isEqualTo(version);
  }

  // ---- authentication

  @Test
  void requestWithoutAuthorizationIsRejectedWith401AndAChallengeWithoutError() throws Exception {
    HttpResponse<String> r = send(mcp()
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(initialize(1, NEWEST))));

    assertThat(r.statusCode()).isEqualTo(401);
    assertThat(r.headers().firstValue("WWW-Authenticate")).hasValueSatisfying(h -> assertThat(h)
        .startsWith("Bearer realm=")
        .as("RFC 6750: no error code when the request carried no credentials")
        .doesNotContain("error="));
    assertThat(r.headers().firstValue("Mcp-Session-Id")).isEmpty();
  }

  @Test
  void wrongTokenOfTheSameLengthIsRejectedWith401InvalidToken() throws Exception {
    String wrong = "x".repeat(TOKEN.length());

    HttpResponse<String> r = send(post(initialize(1, NEWEST)).setHeader("Authorization", "Bearer " + wrong));

    assertInvalidToken(r);
  }

  @Test
  void wrongTokenOfAnotherLengthIsRejectedWith401InvalidToken() throws Exception {
    HttpResponse<String> shorter = send(post(initialize(1, NEWEST))
        .setHeader("Authorization", "Bearer " + TOKEN.substring(0, TOKEN.length() - 1)));
    HttpResponse<String> longer = send(post(initialize(1, NEWEST)).setHeader("Authorization", "Bearer " + TOKEN + "0"));

    assertInvalidToken(shorter);
    assertInvalidToken(longer);
  }

  @Test
  void correctTokenIsAccepted() throws Exception {
    HttpResponse<String> r = send(post(initialize(1, NEWEST)).setHeader("Authorization", "Bearer " + TOKEN));

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.headers().firstValue("WWW-Authenticate")).isEmpty();
  }

  /**
   * The token is compared on its exact bytes: anything after it (or an extra space before it) is
   * another token. Trailing bytes up to 0x20 (NUL, tab, space) never reach the handler: the JDK's
   * header parser removes them, as RFC 9110 has a field value exclude trailing whitespace (and a
   * NUL be rejected or read as a space).
   */
  @ParameterizedTest
  @ValueSource(strings = {"\u0000x", " x", "\tx", "x", "\u0000\u0000x"})
  void theTokenFollowedByAnythingIsRefused(String suffix) throws Exception {
    RawResponse r = rawPost(endpoint.getPort(), "127.0.0.1", "Bearer " + TOKEN + suffix, initialize(1, NEWEST));
    RawResponse spaced = rawPost(endpoint.getPort(), "127.0.0.1", "Bearer  " + TOKEN, initialize(1, NEWEST));

    assertThat(spaced.status()).as("two spaces before the token").isEqualTo(401);
    assertThat(r.status()).as("token + %s", suffix.chars().boxed().toList()).isEqualTo(401);
    assertThat(r.body()).contains("invalid bearer token").doesNotContain("protocolVersion");
  }

  @Test
  void theExactTokenOnARawConnectionIsAccepted() throws Exception {
    assertThat(rawPost(endpoint.getPort(), "127.0.0.1", "Bearer " + TOKEN, initialize(1, NEWEST)).status())
        .isEqualTo(200);
  }

  @Test
  void jsonNestedDeeperThan64IsAParseErrorNotAServerError() throws Exception {
    String session = openSession();
    String deep = "[".repeat(65) + "]".repeat(65);
    String body = "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\",\"params\":{\"x\":" + deep + "}}";

    HttpResponse<String> r = send(post(session, body));

    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(json(r.body()).path("error").path("code").asInt()).isEqualTo(-32700);
    assertThat(json(r.body()).path("error").path("message").asText()).contains("nesting depth");
    String shallow = "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\",\"params\":{\"x\":"
        + "[".repeat(60) + "]".repeat(60) + "}}";
    assertThat(send(post(session, shallow)).statusCode()).as("60 levels are fine").isEqualTo(200);
  }

  // ---- sessions per client

  @Test
  void aClientWithAThousandIdleSessionsCannotLockOthersOutAndBusySessionsAreKept() throws Exception {
    String streaming = openSession(); // has a GET stream open: never evicted
    HttpResponse<InputStream> stream = CLIENT.sendAsync(get(streaming).build(),
        HttpResponse.BodyHandlers.ofInputStream()).get(WAIT.toSeconds(), TimeUnit.SECONDS);
    try (InputStream body = stream.body()) {
      assertThat(new SseReader(body).next(WAIT).comment()).isEqualTo("keep-alive");
      String oldestIdle = openSession();
      List<String> flood = new ArrayList<>();
      for (int i = 0; i < 1_000; i++) { // the server's whole session budget, never deleted
        HttpResponse<String> r = send(post(initialize(1, NEWEST)));
        assertThat(r.statusCode()).as("initialize %d", i).isEqualTo(200);
        flood.add(r.headers().firstValue("Mcp-Session-Id").orElseThrow());
      }

      HttpResponse<String> another = send(post(initialize(1, NEWEST)));

      assertThat(another.statusCode()).as("another client's initialize").isEqualTo(200);
      assertThat(send(post(oldestIdle, request(2, "ping"))).statusCode()).as("the least recently used idle session"
          + " was evicted").isEqualTo(404);
      assertThat(send(post(streaming, request(3, "ping"))).statusCode()).as("a session with an open stream stays")
          .isEqualTo(200);
      assertThat(send(post(flood.get(flood.size() - 1), request(4, "ping"))).statusCode())
          .as("recent sessions stay").isEqualTo(200);
      for (String id : flood) {
        send(authed().header("Mcp-Session-Id", id).DELETE());
      }
    }
  }

  @Test
  void aClientHoldingAGetStreamOnEachOfItsSessionsCannotLockOthersOut() throws Exception {
    List<String> held = new ArrayList<>();
    List<InputStream> bodies = new ArrayList<>();
    try {
      for (int i = 0; i < 100; i++) { // MAX_SESSIONS_PER_CLIENT, every one with its stream open
        String id = openSession();
        HttpResponse<InputStream> stream = CLIENT.sendAsync(get(id).build(), HttpResponse.BodyHandlers.ofInputStream())
            .get(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertThat(stream.statusCode()).isEqualTo(200);
        bodies.add(stream.body());
        held.add(id);
      }
      SseReader oldest = new SseReader(bodies.get(0));
      assertThat(oldest.next(WAIT).comment()).isEqualTo("keep-alive");
      send(post(held.get(held.size() - 1), request(2, "ping"))); // the newest is the most recently used

      HttpResponse<String> another = send(post(initialize(1, NEWEST)));

      assertThat(another.statusCode()).as("another client's initialize").isEqualTo(200);
      assertThat(send(post(held.get(0), request(3, "ping"))).statusCode())
          .as("the least recently used session was evicted, stream and all").isEqualTo(404);
      assertThat(oldest.messagesUntilEnd(Duration.ofSeconds(5))).as("its GET stream ended").isEmpty();
      assertThat(send(post(held.get(held.size() - 1), request(4, "ping"))).statusCode())
          .as("recent sessions stay").isEqualTo(200);
      held.add(another.headers().firstValue("Mcp-Session-Id").orElseThrow());
    } finally {
      for (InputStream body : bodies) {
        body.close();
      }
      for (String id : held) {
        send(authed().header("Mcp-Session-Id", id).DELETE());
      }
    }
  }

  private static void assertInvalidToken(HttpResponse<String> r) {
    assertThat(r.statusCode()).isEqualTo(401);
    assertThat(r.headers().firstValue("WWW-Authenticate")).hasValueSatisfying(h -> assertThat(h)
        .startsWith("Bearer realm=")
        .contains("error=\"invalid_token\""));
    assertThat(r.headers().firstValue("Mcp-Session-Id")).isEmpty();
  }

  // ---- Host and Origin (DNS rebinding)

  @Test
  void foreignHostHeaderIsRejectedWith403() throws Exception {
    RawResponse r = rawPost(endpoint.getPort(), "evil.example.com", initialize(1, NEWEST));

    assertThat(r.status()).isEqualTo(403);
    assertThat(r.body()).doesNotContain("protocolVersion");
  }

  @Test
  void aBracketedNameIsNoIpv6LiteralAndIsRejected() throws Exception {
    assertThat(rawPost(endpoint.getPort(), "[evil]:" + endpoint.getPort(), initialize(1, NEWEST)).status())
        .isEqualTo(403);
    assertThat(rawPost(endpoint.getPort(), "[::1]:" + endpoint.getPort(), initialize(1, NEWEST)).status())
        .isEqualTo(200);
  }

  @Test
  void localhostHostHeaderWithPortIsAccepted() throws Exception {
    int port = endpoint.getPort();

    RawResponse r = rawPost(port, "localhost:" + port, initialize(1, NEWEST));

    assertThat(r.status()).isEqualTo(200);
    assertThat(json(r.body()).path("result").path("protocolVersion").asText()).isEqualTo(NEWEST);
  }

  @Test
  void loopbackAddressHostHeaderWithPortIsAccepted() throws Exception {
    int port = endpoint.getPort();

    RawResponse r = rawPost(port, "127.0.0.1:" + port, initialize(1, NEWEST));

    assertThat(r.status()).isEqualTo(200);
  }

  @Test
  void foreignOriginIsRejectedWith403() throws Exception {
    HttpResponse<String> r = send(post(initialize(1, NEWEST)).header("Origin", "http://evil.example.com"));

    assertThat(r.statusCode()).isEqualTo(403);
    assertThat(r.headers().firstValue("Mcp-Session-Id")).isEmpty();
  }

  @Test
  void anOriginOnSomeOtherIpAddressIsRejected() throws Exception {
    assertThat(send(post(initialize(1, NEWEST)).header("Origin", "http://1.2.3.4")).statusCode()).isEqualTo(403);
    assertThat(send(post(initialize(1, NEWEST)).header("Origin", "http://[fe80::1]:8080")).statusCode())
        .isEqualTo(403);
    assertThat(send(post(initialize(1, NEWEST)).header("Origin", "http://127.0.0.1:" + endpoint.getPort()))
        .statusCode()).isEqualTo(200);
  }

  @Test
  void anAcceptThatRefusesEventStreamsWithQZeroIsRejectedWith406() throws Exception {
    HttpResponse<String> r = send(post(initialize(1, NEWEST))
        .setHeader("Accept", "application/json, text/event-stream;q=0"));

    assertThat(r.statusCode()).isEqualTo(406);
  }

  @Test
  void aContentTypeThatOnlyStartsLikeJsonIsRejectedWith415() throws Exception {
    assertThat(send(post(initialize(1, NEWEST)).setHeader("Content-Type", "application/jsonx")).statusCode())
        .isEqualTo(415);
    assertThat(send(post(initialize(1, NEWEST)).setHeader("Content-Type", "application/json; charset=utf-8"))
        .statusCode()).isEqualTo(200);
  }

  @Test
  void clientsThatSendHalfARequestAreCutOffAndDoNotHoldUpOthers() throws Exception {
    List<Socket> idle = new ArrayList<>();
    try {
      for (int i = 0; i < 40; i++) {
        Socket s = new Socket(InetAddress.getByName(endpoint.getHost()), endpoint.getPort());
        s.setSoTimeout(15_000);
        s.getOutputStream().write("POST /mcp HTTP/1.1\r\nHost: localhost\r\n".getBytes(StandardCharsets.US_ASCII));
        s.getOutputStream().flush();
        idle.add(s);
      }
      long t0 = System.nanoTime();
      assertThat(send(post(initialize(1, NEWEST))).statusCode()).isEqualTo(200);
      assertThat(Duration.ofNanos(System.nanoTime() - t0)).as("answered beside 40 half-sent requests")
          .isLessThan(Duration.ofSeconds(5)); // queued behind them it would take the 2 s request deadline
      for (Socket s : idle) { // the server closes them once the request deadline (2 s here) passes
        try {
          assertThat(s.getInputStream().read()).isEqualTo(-1);
        } catch (java.net.SocketException reset) {
          // closed by the server as well
        }
      }
      System.err.printf("[it] 40 half-sent requests were cut off after %d ms%n", (System.nanoTime() - t0) / 1_000_000);
    } finally {
      for (Socket s : idle) {
        s.close();
      }
    }
  }

  @Test
  void aClientThatStopsReadingCannotHoldUpCancellation() throws Exception {
    String session = openSession();
    String call = toolCall(77, "exec", (ObjectNode) MAPPER.readTree(
        "{\"command\":\"(while :; do date +%s%N > stalled.tmp; mv stalled.tmp stalled.beat; sleep 0.05; done) & head -c 3000000 /dev/zero; wait\"}"),
        "stall");
    byte[] body = call.getBytes(StandardCharsets.UTF_8);
    try (Socket stalled = new Socket()) {
      stalled.setReceiveBufferSize(4096);
      stalled.connect(new java.net.InetSocketAddress(InetAddress.getByName(endpoint.getHost()), endpoint.getPort()));
      stalled.getOutputStream().write(("POST /mcp HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + TOKEN
          + "\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
          + "Mcp-Session-Id: " + session + "\r\nContent-Length: " + body.length + "\r\n\r\n")
          .getBytes(StandardCharsets.US_ASCII));
      stalled.getOutputStream().write(body);
      stalled.getOutputStream().flush();
      String beat = "";
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while (beat.isEmpty()) {
        assertThat(System.nanoTime()).as("the command started").isLessThan(deadline);
        Thread.sleep(100);
        beat = read(session, "stalled.beat");
      }
      Thread.sleep(1_000); // let the output fill the socket buffers, so the server's writer blocks
      ObjectNode params = MAPPER.createObjectNode().put("requestId", 77);
      long t0 = System.nanoTime();
      HttpResponse<String> cancel = send(post(session, notification("notifications/cancelled", params)));
      assertThat(cancel.statusCode()).isEqualTo(202);
      assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(5));
      assertThat(heartbeatStops(session, "stalled.beat", Duration.ofSeconds(15)))
          .as("the stalled call's command was killed").isTrue();
      assertThat(send(mcp().header("Authorization", "Bearer " + TOKEN).header("Mcp-Session-Id", session).DELETE())
          .statusCode()).as("ending the session does not wait for the stalled client").isEqualTo(204);
    }
  }

  /** A file in the sandbox's workspace, stripped; "" if it does not exist. */
  private static String read(String session, String file) throws Exception {
    JsonNode cat = callTool(session, "exec", MAPPER.createObjectNode().put("command", "cat " + file));
    return cat.path("result").path("structuredContent").path("stdout").asText().strip();
  }

  /**
   * Whether a heartbeat file, which a command rewrites every 50 ms, stops changing (stays the same
   * for 0.5 s) within {@code within}. A later command cannot look for an isolated command's pid:
   * it sees only its own PID namespace.
   */
  private static boolean heartbeatStops(String session, String file, Duration within) throws Exception {
    long deadline = System.nanoTime() + within.toNanos();
    String last = null;
    long sameSince = System.nanoTime();
    while (System.nanoTime() < deadline) {
      String now = read(session, file);
      if (!now.equals(last)) {
        last = now;
        sameSince = System.nanoTime();
      } else if (System.nanoTime() - sameSince > TimeUnit.MILLISECONDS.toNanos(500)) {
        return true;
      }
      Thread.sleep(100);
    }
    return false;
  }

  @Test
  void localhostOriginIsAccepted() throws Exception {
    HttpResponse<String> r = send(post(initialize(1, NEWEST))
        .header("Origin", "http://localhost:" + endpoint.getPort()));

    assertThat(r.statusCode()).isEqualTo(200);
  }

  @Test
  void allowHostOptionAddsAnAcceptedHostName() throws Exception {
    try (McpServer other = new McpServer(config("--allow-host", "myhost"));
        HttpTransport otherTransport = new HttpTransport(other)) {
      int port = otherTransport.start().getPort();

      RawResponse allowed = rawPost(port, "myhost:" + port, initialize(1, NEWEST));
      RawResponse foreign = rawPost(port, "evil.example.com:" + port, initialize(1, NEWEST));

      assertThat(allowed.status()).isEqualTo(200);
      assertThat(foreign.status()).as("other names stay refused").isEqualTo(403);
    }
  }

  // ---- sessions

  @Test
  void requestWithoutSessionIdIsRejectedWith400() throws Exception {
    HttpResponse<String> r = send(post(request(1, "ping")));

    assertThat(r.statusCode()).isEqualTo(400);
  }

  @Test
  void requestWithAnUnknownSessionIdIsRejectedWith404() throws Exception {
    HttpResponse<String> r = send(post("0123456789abcdef0123456789abcdef", request(1, "ping")));

    assertThat(r.statusCode()).isEqualTo(404);
  }

  @Test
  void deleteEndsTheSessionWith204AndLaterRequestsGet404() throws Exception {
    String session = openSession();
    assertThat(send(post(session, request(1, "ping"))).statusCode()).isEqualTo(200);

    HttpResponse<String> deleted = send(authed().header("Mcp-Session-Id", session).DELETE());

    assertThat(deleted.statusCode()).isEqualTo(204);
    assertThat(deleted.body()).isEmpty();
    assertThat(send(post(session, request(2, "ping"))).statusCode()).isEqualTo(404);
  }

  // ---- MCP-Protocol-Version header

  @Test
  void unsupportedProtocolVersionHeaderIsRejectedWith400() throws Exception {
    String session = openSession();

    HttpResponse<String> r = send(post(session, request(1, "ping")).header("MCP-Protocol-Version", "1999-01-01"));

    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(json(r.body()).has("error")).isTrue();
  }

  @Test
  void initializeWithAnUnsupportedProtocolVersionHeaderOrASessionIdIsRejectedWith400() throws Exception {
    HttpResponse<String> badVersion = send(post(initialize(1, NEWEST)).header("MCP-Protocol-Version", "1999-01-01"));
    assertThat(badVersion.statusCode()).isEqualTo(400);
    assertThat(badVersion.headers().firstValue("Mcp-Session-Id")).isEmpty();
    HttpResponse<String> withSession = send(post(openSession(), initialize(1, NEWEST)));
    assertThat(withSession.statusCode()).isEqualTo(400);
    assertThat(withSession.headers().firstValue("Mcp-Session-Id")).isEmpty();
  }

  @Test
  void supportedOlderProtocolVersionHeaderIsAccepted() throws Exception {
    String session = openSession();

    HttpResponse<String> r = send(post(session, request(1, "ping")).header("MCP-Protocol-Version", "2025-03-26"));

    assertThat(r.statusCode()).isEqualTo(200);
  }

  @Test
  void missingProtocolVersionHeaderIsAccepted() throws Exception {
    String session = openSession();

    HttpResponse<String> r = send(post(session, request(1, "ping")));

    assertThat(r.statusCode()).isEqualTo(200);
  }

  // ---- content negotiation, limits, malformed messages

  @Test
  void postWhoseAcceptLacksEventStreamIsRejectedWith406() throws Exception {
    String session = openSession();

    HttpResponse<String> r = send(post(session, request(1, "ping")).setHeader("Accept", "application/json"));

    assertThat(r.statusCode()).isEqualTo(406);
  }

  @Test
  void postWithPlainTextContentTypeIsRejectedWith415() throws Exception {
    String session = openSession();

    HttpResponse<String> r = send(post(session, request(1, "ping")).setHeader("Content-Type", "text/plain"));

    assertThat(r.statusCode()).isEqualTo(415);
  }

  @Test
  void bodyOfExactlyFourMebibytesIsAccepted() throws Exception {
    String session = openSession();

    HttpResponse<String> r = send(post(session, padded(request(7, "ping"), MAX_BODY)));

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(json(r.body()).path("id").asInt()).isEqualTo(7);
  }

  @Test
  void bodyLargerThanFourMebibytesIsRejectedWith413() throws Exception {
    String session = openSession();

    HttpResponse<String> r = send(post(session, padded(request(7, "ping"), MAX_BODY + 1)));

    assertThat(r.statusCode()).isEqualTo(413);
  }

  @Test
  void invalidJsonIsRejectedWith400AndAParseError() throws Exception {
    String session = openSession();

    HttpResponse<String> r = send(post(session, "{\"jsonrpc\":\"2.0\",\"id\":1,"));

    assertThat(r.statusCode()).isEqualTo(400);
    JsonNode body = json(r.body());
    assertThat(body.path("error").path("code").asInt()).isEqualTo(-32700);
    assertThat(body.get("id").isNull()).isTrue();
  }

  @Test
  void anEmptyBodyIsAParseError() throws Exception {
    HttpResponse<String> r = send(post(openSession(), ""));

    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(json(r.body()).path("error").path("code").asInt()).isEqualTo(-32700);
  }

  @Test
  void batchIsRejectedWith400() throws Exception {
    String session = openSession();

    HttpResponse<String> r = send(post(session, "[" + request(1, "ping") + "," + request(2, "ping") + "]"));

    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(json(r.body()).path("error").path("code").asInt()).isEqualTo(-32600);
  }

  // ---- notifications and plain requests

  @Test
  void notificationIsAcceptedWith202AndAnEmptyBody() throws Exception {
    String session = openSession();

    HttpResponse<String> r = send(post(session, notification("notifications/initialized", null)));

    assertThat(r.statusCode()).isEqualTo(202);
    assertThat(r.body()).isEmpty();
  }

  @Test
  void pingAnswersWithAnEmptyJsonResult() throws Exception {
    String session = openSession();

    HttpResponse<String> r = send(post(session, request(5, "ping")));

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.headers().firstValue("Content-Type")).hasValueSatisfying(
        ct -> assertThat(ct).startsWith("application/json"));
    JsonNode body = json(r.body());
    assertThat(body.path("id").asInt()).isEqualTo(5);
    assertThat(body.get("result")).isEqualTo(MAPPER.createObjectNode());
  }

  @Test
  void toolsListDescribesEveryTool() throws Exception {
    String session = openSession();

    HttpResponse<String> r = send(post(session, request(3, "tools/list")));

    assertThat(r.statusCode()).isEqualTo(200);
    JsonNode tools = json(r.body()).path("result").path("tools");
    assertThat(tools.isArray()).isTrue();
    List<String> names = new ArrayList<>();
    for (JsonNode t : tools) {
      names.add(t.path("name").asText());
      assertThat(t.path("description").asText()).as("description of %s", t.get("name")).isNotBlank();
      assertThat(t.path("inputSchema").path("type").asText()).as("inputSchema of %s", t.get("name"))
          .isEqualTo("object");
      assertThat(t.path("outputSchema").isObject()).as("outputSchema of %s", t.get("name")).isTrue();
      assertThat(t.path("annotations").isObject()).as("annotations of %s", t.get("name")).isTrue();
    }
    List<String> catalog = new ArrayList<>();
    dev.sandboxsdk.mcp.internal.ToolCatalog.load().names().forEach(catalog::add); // McpServerTest pins the names
    assertThat(names).hasSize(41).containsExactlyInAnyOrderElementsOf(catalog);
  }

  // ---- tools/call over SSE

  @Test
  void execStreamsProgressNotificationsThenTheResultAndEndsTheStream() throws Exception {
    String session = openSession();
    int id = IDS.incrementAndGet();
    ObjectNode args = MAPPER.createObjectNode().put("command", "echo a; sleep 0.3; echo b");

    HttpResponse<InputStream> r = CLIENT.sendAsync(post(session, toolCall(id, "exec", args, "progress-1")).build(),
        HttpResponse.BodyHandlers.ofInputStream()).get(WAIT.toSeconds(), TimeUnit.SECONDS);

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.headers().firstValue("Content-Type")).hasValueSatisfying(
        ct -> assertThat(ct).startsWith("text/event-stream"));
    List<JsonNode> messages = new SseReader(r.body()).messagesUntilEnd(WAIT);
    assertThat(messages).as("progress notifications, then the result").hasSizeGreaterThanOrEqualTo(2);
    List<JsonNode> progress = messages.subList(0, messages.size() - 1);
    long last = Long.MIN_VALUE;
    for (JsonNode p : progress) {
      assertThat(p.path("method").asText()).isEqualTo("notifications/progress");
      assertThat(p.path("params").path("progressToken").asText()).isEqualTo("progress-1");
      long value = p.path("params").path("progress").asLong();
      assertThat(value).as("progress increases strictly").isGreaterThan(last);
      last = value;
    }
    JsonNode result = messages.get(messages.size() - 1);
    assertThat(result.path("id").asInt()).as("the result comes last").isEqualTo(id);
    assertThat(result.path("result").path("isError").asBoolean(false)).isFalse();
    assertThat(result.path("result").path("structuredContent").path("stdout").asText()).isEqualTo("a\nb\n");
    assertThat(result.path("result").path("structuredContent").path("exitCode").asInt()).isZero();
  }

  @Test
  void cancelledNotificationEndsTheStreamWithoutAResultAndKillsTheCommand() throws Exception {
    String session = openSession();
    int id = IDS.incrementAndGet();
    ObjectNode args = MAPPER.createObjectNode()
        .put("command", "echo started; while :; do date +%s%N > http-cancel.tmp; mv http-cancel.tmp http-cancel.beat; sleep 0.05; done");
    HttpResponse<InputStream> r = CLIENT.sendAsync(post(session, toolCall(id, "exec", args, "cancel-1")).build(),
        HttpResponse.BodyHandlers.ofInputStream()).get(WAIT.toSeconds(), TimeUnit.SECONDS);
    try (InputStream body = r.body()) {
      assertThat(r.statusCode()).isEqualTo(200);
      SseReader sse = new SseReader(body);
      JsonNode started;
      do {
        started = sse.nextMessage(WAIT);
        assertThat(started.has("id")).as("no response before the command is cancelled: %s", started).isFalse();
      } while (!started.path("params").path("message").asText().contains("started"));
      long cancelledAtMillis = System.currentTimeMillis();

      HttpResponse<String> cancel = send(post(session, notification("notifications/cancelled",
          MAPPER.createObjectNode().put("requestId", id).put("reason", "test"))));

      assertThat(cancel.statusCode()).isEqualTo(202);
      boolean stopped = heartbeatStops(session, "http-cancel.beat", Duration.ofSeconds(15));
      long lastBeatMillis = Long.parseLong(read(session, "http-cancel.beat")) / 1_000_000;
      System.err.printf("[it] the cancelled command's last heartbeat was %d ms after notifications/cancelled%n",
          lastBeatMillis - cancelledAtMillis);
      assertThat(stopped).as("the cancelled command stops within 15 s").isTrue();
      List<JsonNode> rest = sse.messagesUntilEnd(Duration.ofSeconds(5));
      assertThat(rest).as("MCP: no response to a cancelled request").noneMatch(m -> m.has("id"));
    }
  }

  @Test
  void unknownToolIsAnInvalidParamsErrorInTheEventStream() throws Exception {
    String session = openSession();
    int id = IDS.incrementAndGet();

    HttpResponse<String> r = send(post(session, toolCall(id, "noSuchTool", MAPPER.createObjectNode(), null)));

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.headers().firstValue("Content-Type")).hasValueSatisfying(
        ct -> assertThat(ct).startsWith("text/event-stream"));
    List<JsonNode> messages = new SseReader(new ByteArrayInputStream(r.body().getBytes(StandardCharsets.UTF_8)))
        .messagesUntilEnd(WAIT);
    assertThat(messages).hasSize(1);
    JsonNode error = messages.get(0);
    assertThat(error.path("id").asInt()).isEqualTo(id);
    assertThat(error.has("result")).isFalse();
    assertThat(error.path("error").path("code").asInt()).isEqualTo(-32602);
    assertThat(error.path("error").path("message").asText()).contains("noSuchTool");
  }

  // ---- resumable streams (MCP 2025-11-25, "Resumability and Redelivery")

  @Test
  void aClientCutMidStreamResumesWithLastEventIdAndGetsExactlyTheMissingEvents() throws Exception {
    String session = openSession();
    int id = IDS.incrementAndGet();
    ObjectNode args = MAPPER.createObjectNode()
        .put("command", "for i in $(seq 1 20); do echo line$i; sleep 0.1; done");
    HttpResponse<InputStream> r = CLIENT.sendAsync(post(session, toolCall(id, "exec", args, "resume-1")).build(),
        HttpResponse.BodyHandlers.ofInputStream()).get(WAIT.toSeconds(), TimeUnit.SECONDS);
    List<SseEvent> before = new ArrayList<>();
    String primingId;
    String retry;
    try (InputStream body = r.body()) {
      assertThat(r.statusCode()).isEqualTo(200);
      SseReader sse = new SseReader(body);
      before.add(sse.nextMessageEvent(WAIT));
      before.add(sse.nextMessageEvent(WAIT));
      primingId = sse.primingId;
      retry = sse.retry;
    } // the client is cut off while the command still prints
    assertThat(before).as("cut before the result").allMatch(e -> !e.message().has("id"));
    assertThat(primingId).as("the priming event: an id with empty data").matches("[0-9a-f]{8}-\\d+-0");
    assertThat(retry).as("the retry field, in ms").isEqualTo("1000");
    String prefix = primingId.substring(0, primingId.length() - 1);

    HttpResponse<InputStream> resumed = CLIENT.sendAsync(get(session).header("Last-Event-ID", before.get(1).id()).build(),
        HttpResponse.BodyHandlers.ofInputStream()).get(WAIT.toSeconds(), TimeUnit.SECONDS);

    assertThat(resumed.statusCode()).isEqualTo(200);
    assertThat(resumed.headers().firstValue("Content-Type")).hasValueSatisfying(
        ct -> assertThat(ct).startsWith("text/event-stream"));
    List<SseEvent> after = new SseReader(resumed.body()).eventsUntilEnd(WAIT);
    List<SseEvent> all = new ArrayList<>(before);
    all.addAll(after);
    for (int i = 0; i < all.size(); i++) {
      assertThat(all.get(i).id()).as("event %d: ids of one stream, numbered without gaps or repeats", i)
          .isEqualTo(prefix + (i + 1));
    }
    JsonNode result = all.get(all.size() - 1).message();
    assertThat(result.path("id").asInt()).as("the result comes last, on the resumed stream").isEqualTo(id);
    StringBuilder printed = new StringBuilder();
    all.subList(0, all.size() - 1).forEach(e -> printed.append(e.message().path("params").path("message").asText()));
    StringBuilder expected = new StringBuilder();
    for (int i = 1; i <= 20; i++) {
      expected.append("line").append(i).append('\n');
    }
    assertThat(printed.toString()).as("the progress before the cut and after it: every line once").isEqualTo(
        expected.toString());
    assertThat(result.path("result").path("structuredContent").path("stdout").asText()).isEqualTo(expected.toString());
  }

  @Test
  void anEndedStreamCanBeResumedUntilEightNewerStreamsOfItsSessionHaveEnded() throws Exception {
    String session = openSession();
    SseReader first = callUnknownTool(session);
    List<SseEvent> original = first.eventsUntilEnd(WAIT);
    assertThat(original).hasSize(1);

    HttpResponse<InputStream> fromStart = CLIENT.sendAsync(get(session).header("Last-Event-ID", first.primingId).build(),
        HttpResponse.BodyHandlers.ofInputStream()).get(WAIT.toSeconds(), TimeUnit.SECONDS);
    assertThat(fromStart.statusCode()).isEqualTo(200);
    List<SseEvent> replayed = new SseReader(fromStart.body()).eventsUntilEnd(WAIT);
    assertThat(replayed).as("the events after the priming event, then the end").hasSize(1);
    assertThat(replayed.get(0).id()).isEqualTo(original.get(0).id());
    assertThat(replayed.get(0).message()).isEqualTo(original.get(0).message());

    HttpResponse<InputStream> fromEnd = CLIENT.sendAsync(get(session).header("Last-Event-ID", original.get(0).id()).build(),
        HttpResponse.BodyHandlers.ofInputStream()).get(WAIT.toSeconds(), TimeUnit.SECONDS);
    assertThat(fromEnd.statusCode()).isEqualTo(200);
    assertThat(new SseReader(fromEnd.body()).eventsUntilEnd(WAIT)).as("nothing was missed").isEmpty();

    for (int i = 0; i < 8; i++) {
      assertThat(callUnknownTool(session).eventsUntilEnd(WAIT)).hasSize(1);
    }
    HttpResponse<String> gone = send(get(session).header("Last-Event-ID", first.primingId));

    assertThat(gone.statusCode()).as("the ninth-newest ended stream is no longer kept").isEqualTo(410);
    assertThat(json(gone.body()).path("error").path("message").asText()).contains("no longer kept");
  }

  @Test
  void lastEventIdsThisSessionNeverIssuedAreRejectedWith400() throws Exception {
    String a = openSession();
    String b = openSession();
    SseReader ofA = callUnknownTool(a);
    ofA.eventsUntilEnd(WAIT);
    SseReader ofB = callUnknownTool(b);
    String idOfB = ofB.eventsUntilEnd(WAIT).get(0).id();
    String[] parts = idOfB.split("-");

    for (String foreign : List.of(ofA.primingId, "garbage", parts[0] + "-999-0",
        parts[0] + "-" + parts[1] + "-99", parts[0] + "-" + parts[1] + "--1", parts[0] + "-x-1")) {
      HttpResponse<String> r = send(get(b).header("Last-Event-ID", foreign));

      assertThat(r.statusCode()).as("Last-Event-ID '%s'", foreign).isEqualTo(400);
      assertThat(json(r.body()).path("error").path("message").asText()).contains("was not issued in this session");
    }
    HttpResponse<InputStream> own = CLIENT.sendAsync(get(b).header("Last-Event-ID", ofB.primingId).build(),
        HttpResponse.BodyHandlers.ofInputStream()).get(WAIT.toSeconds(), TimeUnit.SECONDS);
    assertThat(own.statusCode()).as("the session's own id").isEqualTo(200);
    assertThat(new SseReader(own.body()).eventsUntilEnd(WAIT)).extracting(SseEvent::id).containsExactly(idOfB);
  }

  @Test
  void olderProtocolVersionsGetEventIdsButNoPrimingEvent() throws Exception {
    HttpResponse<String> init = send(post(initialize(1, "2025-06-18")));
    String session = init.headers().firstValue("Mcp-Session-Id").orElseThrow();

    SseReader sse = callUnknownTool(session);
    List<SseEvent> events = sse.eventsUntilEnd(WAIT);

    assertThat(sse.primingId).as("an event without data could break a client of an older version").isNull();
    assertThat(events).hasSize(1);
    assertThat(events.get(0).id()).matches("[0-9a-f]{8}-\\d+-1");
  }

  @Test
  void aStreamTheServerClosesEarlyIsFinishedOnTheResumedStream() throws Exception {
    String session = openSession();
    System.setProperty("sandbox.mcp.conformanceFixtures", "true");
    try {
      int id = IDS.incrementAndGet();
      HttpResponse<InputStream> r = CLIENT.sendAsync(
          post(session, toolCall(id, "test_reconnection", MAPPER.createObjectNode(), null)).build(),
          HttpResponse.BodyHandlers.ofInputStream()).get(WAIT.toSeconds(), TimeUnit.SECONDS);
      SseReader sse = new SseReader(r.body());

      assertThat(sse.eventsUntilEnd(WAIT)).as("closed after the priming event, before the result").isEmpty();
      assertThat(sse.primingId).isNotNull();
      assertThat(sse.retry).isEqualTo("1000");
      HttpResponse<InputStream> resumed = CLIENT.sendAsync(get(session).header("Last-Event-ID", sse.primingId).build(),
          HttpResponse.BodyHandlers.ofInputStream()).get(WAIT.toSeconds(), TimeUnit.SECONDS);
      List<SseEvent> rest = new SseReader(resumed.body()).eventsUntilEnd(WAIT);

      assertThat(rest).hasSize(1);
      assertThat(rest.get(0).message().path("id").asInt()).isEqualTo(id);
      assertThat(rest.get(0).message().path("result").path("content").get(0).path("text").asText())
          .isEqualTo("Reconnection test completed");
    } finally {
      System.clearProperty("sandbox.mcp.conformanceFixtures");
    }
  }

  /** POSTs a tools/call of an unknown tool (answered at once, with an error, on an event stream). */
  private static SseReader callUnknownTool(String session) throws Exception {
    HttpResponse<InputStream> r = CLIENT.sendAsync(
        post(session, toolCall(IDS.incrementAndGet(), "noSuchTool", MAPPER.createObjectNode(), null)).build(),
        HttpResponse.BodyHandlers.ofInputStream()).get(WAIT.toSeconds(), TimeUnit.SECONDS);
    assertThat(r.statusCode()).isEqualTo(200);
    return new SseReader(r.body());
  }

  // ---- GET stream

  @Test
  void getOpensAnEventStreamThatSendsKeepAlivesUntilTheSessionIsDeleted() throws Exception {
    String session = openSession();
    HttpResponse<InputStream> r = CLIENT.sendAsync(get(session).build(), HttpResponse.BodyHandlers.ofInputStream())
        .get(WAIT.toSeconds(), TimeUnit.SECONDS);
    try (InputStream body = r.body()) {
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(r.headers().firstValue("Content-Type")).hasValueSatisfying(
          ct -> assertThat(ct).startsWith("text/event-stream"));
      SseReader sse = new SseReader(body);

      assertThat(sse.next(WAIT).comment()).as("the first keep-alive, sent at once").isEqualTo("keep-alive");
      assertThat(sse.next(Duration.ofSeconds(5)).comment()).as("a periodic keep-alive (every 1 s here)")
          .isEqualTo("keep-alive");

      assertThat(send(authed().header("Mcp-Session-Id", session).DELETE()).statusCode()).isEqualTo(204);
      assertThat(sse.messagesUntilEnd(Duration.ofSeconds(5))).as("deleting the session ends its stream").isEmpty();
    }
  }

  @Test
  void secondGetOnTheSameSessionIsRejectedWith409() throws Exception {
    String session = openSession();
    HttpResponse<InputStream> first = CLIENT.sendAsync(get(session).build(), HttpResponse.BodyHandlers.ofInputStream())
        .get(WAIT.toSeconds(), TimeUnit.SECONDS);
    try (InputStream body = first.body()) {
      assertThat(first.statusCode()).isEqualTo(200);
      assertThat(new SseReader(body).next(WAIT).comment()).isEqualTo("keep-alive");

      HttpResponse<String> second = send(get(session));

      assertThat(second.statusCode()).isEqualTo(409);
    }
  }

  @Test
  void getWithoutEventStreamAcceptIsRejectedWith406() throws Exception {
    String session = openSession();

    HttpResponse<String> r = send(get(session).setHeader("Accept", "application/json"));

    assertThat(r.statusCode()).isEqualTo(406);
  }

  // ---- other paths and methods

  @Test
  void unknownPathIsNotFound() throws Exception {
    HttpResponse<String> r = send(HttpRequest.newBuilder(endpoint.resolve("/other")).timeout(WAIT)
        .header("Authorization", "Bearer " + TOKEN)
        .GET());

    assertThat(r.statusCode()).isEqualTo(404);
  }

  @Test
  void putIsNotAllowedAndTheAllowHeaderNamesTheMethods() throws Exception {
    HttpResponse<String> r = send(authed()
        .header("Content-Type", "application/json")
        .PUT(HttpRequest.BodyPublishers.ofString(request(1, "ping"))));

    assertThat(r.statusCode()).isEqualTo(405);
    assertThat(r.headers().firstValue("Allow")).hasValueSatisfying(allow -> assertThat(
        Arrays.stream(allow.split(",")).map(String::strip).collect(Collectors.toList()))
        .containsExactlyInAnyOrder("GET", "POST", "DELETE"));
  }

  // ---- helpers

  private static AdapterConfig config(String... extra) {
    List<String> args = new ArrayList<>(List.of("--http", "--port", "0", "--token-file", tokenFile.toString()));
    args.addAll(List.of(extra));
    return AdapterConfig.parse(args.toArray(new String[0]), Map.of());
  }

  private static HttpRequest.Builder mcp() {
    return HttpRequest.newBuilder(endpoint).timeout(WAIT);
  }

  private static HttpRequest.Builder authed() {
    return mcp().header("Authorization", "Bearer " + TOKEN);
  }

  private static HttpRequest.Builder post(String body) {
    return authed()
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body));
  }

  private static HttpRequest.Builder post(String session, String body) {
    return post(body).header("Mcp-Session-Id", session);
  }

  private static HttpRequest.Builder get(String session) {
    // no request timeout: it would also bound how long the event stream may stay open
    return HttpRequest.newBuilder(endpoint)
        .header("Authorization", "Bearer " + TOKEN)
        .header("Accept", "text/event-stream")
        .header("Mcp-Session-Id", session)
        .GET();
  }

  private static HttpResponse<String> send(HttpRequest.Builder request) throws IOException, InterruptedException {
    return CLIENT.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }

  /** Initializes a session (and sends notifications/initialized, as a client does); returns its id. */
  private static String openSession() throws Exception {
    HttpResponse<String> r = send(post(initialize(1, NEWEST)));
    assertThat(r.statusCode()).as("initialize: %s", r.body()).isEqualTo(200);
    String session = r.headers().firstValue("Mcp-Session-Id").orElseThrow();
    assertThat(send(post(session, notification("notifications/initialized", null))).statusCode()).isEqualTo(202);
    return session;
  }

  /** Calls a tool without a progress token and returns its response, read from the SSE stream. */
  private static JsonNode callTool(String session, String name, ObjectNode args) throws Exception {
    int id = IDS.incrementAndGet();
    HttpResponse<String> r = CLIENT.sendAsync(post(session, toolCall(id, name, args, null)).build(),
        HttpResponse.BodyHandlers.ofString()).get(WAIT.toSeconds(), TimeUnit.SECONDS);
    assertThat(r.statusCode()).isEqualTo(200);
    List<JsonNode> messages = new SseReader(new ByteArrayInputStream(r.body().getBytes(StandardCharsets.UTF_8)))
        .messagesUntilEnd(WAIT);
    assertThat(messages).isNotEmpty();
    JsonNode response = messages.get(messages.size() - 1);
    assertThat(response.path("id").asInt()).as("response to %s: %s", name, response).isEqualTo(id);
    return response;
  }

  private static String initialize(int id, String version) {
    ObjectNode params = MAPPER.createObjectNode().put("protocolVersion", version);
    params.putObject("capabilities");
    params.putObject("clientInfo").put("name", "HttpTransportIT").put("version", "1");
    return message(id, "initialize", params);
  }

  private static String request(int id, String method) {
    return message(id, method, null);
  }

  private static String toolCall(int id, String name, ObjectNode args, String progressToken) {
    ObjectNode params = MAPPER.createObjectNode().put("name", name);
    params.set("arguments", args);
    if (progressToken != null) {
      params.putObject("_meta").put("progressToken", progressToken);
    }
    return message(id, "tools/call", params);
  }

  private static String message(int id, String method, ObjectNode params) {
    ObjectNode m = MAPPER.createObjectNode().put("jsonrpc", "2.0").put("id", id).put("method", method);
    if (params != null) {
      m.set("params", params);
    }
    return m.toString();
  }

  private static String notification(String method, ObjectNode params) {
    ObjectNode m = MAPPER.createObjectNode().put("jsonrpc", "2.0").put("method", method);
    if (params != null) {
      m.set("params", params);
    }
    return m.toString();
  }

  /** {@code json} followed by spaces up to exactly {@code bytes} bytes: still one valid JSON text. */
  private static String padded(String json, int bytes) {
    return json + " ".repeat(bytes - json.getBytes(StandardCharsets.UTF_8).length);
  }

  private static JsonNode json(String text) throws IOException {
    return MAPPER.readTree(text);
  }

  /** A response read off a raw socket. */
  private record RawResponse(int status, String body) {
  }

  /**
   * POSTs with a Host header of our choosing, which the JDK client will not send: a hand-written
   * HTTP/1.1 request on a socket, read until the server closes the connection.
   */
  private static RawResponse rawPost(int port, String host, String body) throws IOException {
    return rawPost(port, host, "Bearer " + TOKEN, body);
  }

  private static RawResponse rawPost(int port, String host, String authorization, String body) throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    String head = "POST /mcp HTTP/1.1\r\n"
        + "Host: " + host + "\r\n"
        + "Authorization: " + authorization + "\r\n"
        + "Accept: application/json, text/event-stream\r\n"
        + "Content-Type: application/json\r\n"
        + "Content-Length: " + bytes.length + "\r\n"
        + "Connection: close\r\n"
        + "\r\n";
    try (Socket socket = new Socket(InetAddress.getByName(endpoint.getHost()), port)) {
      socket.setSoTimeout((int) WAIT.toMillis());
      OutputStream out = socket.getOutputStream();
      out.write(head.getBytes(StandardCharsets.ISO_8859_1));
      out.write(bytes);
      out.flush();
      String response = new String(socket.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertThat(response).startsWith("HTTP/1.1 ");
      int status = Integer.parseInt(response.substring(9, 12));
      int bodyStart = response.indexOf("\r\n\r\n");
      return new RawResponse(status, bodyStart < 0 ? "" : response.substring(bodyStart + 4));
    }
  }

  /**
   * One SSE event: the JSON of its data, or a comment, or data that is not JSON; or the end of the
   * stream. {@code id} is the event's id line, if it had one.
   */
  private record SseEvent(JsonNode message, String comment, String notJson, boolean end, String id) {
    SseEvent(JsonNode message, String comment, String notJson, boolean end) {
      this(message, comment, notJson, end, null);
    }
  }

  /**
   * A tiny SSE parser on a background thread: blocks separated by blank lines, {@code data:}
   * lines joined, comment-only blocks kept (to see keep-alives). An event with empty data (the
   * priming event: an id and the retry field) is not queued, as EventSource does not dispatch it;
   * its id and retry are kept in {@link #primingId} and {@link #retry}. Events are polled with a timeout.
   */
  private static final class SseReader {
    private final BlockingQueue<SseEvent> events = new LinkedBlockingQueue<>();
    private final InputStream in;
    volatile String primingId;
    volatile String retry;

    SseReader(InputStream in) {
      this.in = in;
      Thread t = new Thread(this::read, "sse-reader");
      t.setDaemon(true);
      t.start();
    }

    private void read() {
      try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
        StringBuilder data = null;
        String comment = null;
        String id = null;
        for (String line; (line = r.readLine()) != null; ) {
          if (line.isEmpty()) {
            if (data != null && data.length() == 0) {
              primingId = id;
            } else if (data != null) {
              SseEvent e = parse(data.toString());
              events.add(new SseEvent(e.message(), null, e.notJson(), false, id));
            } else if (comment != null) {
              events.add(new SseEvent(null, comment, null, false));
            }
            data = null;
            comment = null;
            id = null;
          } else if (line.startsWith("id:")) {
            id = line.substring(3).strip();
          } else if (line.startsWith("retry:")) {
            retry = line.substring(6).strip();
          } else if (line.startsWith(":")) {
            comment = line.substring(1).strip();
          } else if (line.startsWith("data:")) {
            String value = line.substring(5);
            value = value.startsWith(" ") ? value.substring(1) : value;
            data = data == null ? new StringBuilder(value) : data.append('\n').append(value);
          }
          // "event:" lines need no handling here
        }
      } catch (IOException closed) {
        // the test closed the stream, or the server broke it: either way the stream has ended
      } finally {
        events.add(new SseEvent(null, null, null, true));
      }
    }

    private static SseEvent parse(String data) {
      try {
        return new SseEvent(MAPPER.readTree(data), null, null, false);
      } catch (IOException notJson) {
        return new SseEvent(null, null, data, false);
      }
    }

    /** The next event or comment; fails if none comes in time. */
    SseEvent next(Duration timeout) throws InterruptedException {
      SseEvent e = events.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
      if (e == null) {
        fail("no SSE event within " + timeout);
      }
      if (e.notJson() != null) {
        fail("SSE data is not JSON: " + e.notJson());
      }
      return e;
    }

    /** The next JSON-RPC message, skipping comments; fails if the stream ends or nothing comes in time. */
    JsonNode nextMessage(Duration timeout) throws InterruptedException {
      long deadline = System.nanoTime() + timeout.toNanos();
      while (true) {
        SseEvent e = next(Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
        if (e.end()) {
          fail("the SSE stream ended while a message was expected");
        }
        if (e.message() != null) {
          return e.message();
        }
      }
    }

    /** The next message event (with its id), skipping comments; fails if the stream ends or nothing comes in time. */
    SseEvent nextMessageEvent(Duration timeout) throws InterruptedException {
      long deadline = System.nanoTime() + timeout.toNanos();
      while (true) {
        SseEvent e = next(Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
        if (e.end()) {
          fail("the SSE stream ended while a message was expected");
        }
        if (e.message() != null) {
          return e;
        }
      }
    }

    /** Every message event (with its id) until the stream ends, skipping comments; fails if it does not end in time. */
    List<SseEvent> eventsUntilEnd(Duration timeout) throws InterruptedException {
      long deadline = System.nanoTime() + timeout.toNanos();
      List<SseEvent> messages = new ArrayList<>();
      while (true) {
        SseEvent e = events.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        if (e == null) {
          fail("the SSE stream did not end within " + timeout + "; messages so far: " + messages);
        }
        if (e.notJson() != null) {
          fail("SSE data is not JSON: " + e.notJson());
        }
        if (e.end()) {
          return messages;
        }
        if (e.message() != null) {
          messages.add(e);
        }
      }
    }

    /** Every message until the stream ends, skipping comments; fails if it does not end in time. */
    List<JsonNode> messagesUntilEnd(Duration timeout) throws InterruptedException {
      return eventsUntilEnd(timeout).stream().map(SseEvent::message).toList();
    }
  }
}
