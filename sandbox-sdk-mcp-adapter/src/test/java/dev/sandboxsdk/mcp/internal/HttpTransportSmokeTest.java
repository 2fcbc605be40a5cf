package dev.sandboxsdk.mcp.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The HTTP transport's routing, checks, sessions and answers over a loopback socket, without
 * starting any sandbox (HttpTransportIT covers the tools and streams). Raw HTTP/1.1, so that any
 * Host header can be sent.
 */
class HttpTransportSmokeTest {
  private static final String TOKEN = "smoke-test-token-0123456789";
  private static final String JSON_SSE = "Accept: application/json, text/event-stream\r\n";

  @TempDir
  static Path tmp;

  private static McpServer server;
  private static HttpTransport transport;
  private static int port;

  @BeforeAll
  static void start() throws IOException {
    Path tokenFile = Files.writeString(tmp.resolve("token"), TOKEN + "\n");
    server = new McpServer(AdapterConfig.parse(
        new String[] {"--http", "--port", "0", "--token-file", tokenFile.toString()}, Map.of()));
    transport = new HttpTransport(server);
    URI endpoint = transport.start();
    port = endpoint.getPort();
  }

  @AfterAll
  static void stop() {
    if (transport != null) {
      transport.close();
    }
    if (server != null) {
      server.close();
    }
  }

  @Test
  void aSessionIsOpenedUsedAndEnded() throws IOException {
    String init = post(null, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
        + "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}");
    assertThat(init).startsWith("HTTP/1.1 200").containsIgnoringCase("Content-Type: application/json")
        .contains("\"protocolVersion\":\"2025-06-18\"");
    String session = header(init, "Mcp-Session-Id");
    assertThat(session).matches("[0-9a-f]{32}");

    assertThat(post(session, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"))
        .startsWith("HTTP/1.1 202");
    assertThat(post(session, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}"))
        .startsWith("HTTP/1.1 200").contains("\"id\":2").contains("\"result\":{}");
    assertThat(post(session, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}"))
        .startsWith("HTTP/1.1 200").contains("\"name\":\"exec\"");
    assertThat(post(session, "[1]")).startsWith("HTTP/1.1 400")
        .contains("JSON-RPC batches are not supported; send one message per request");
    assertThat(request("GET", session, "Accept: text/event-stream\r\nLast-Event-ID: nope\r\n", null))
        .startsWith("HTTP/1.1 400")
        .contains("Last-Event-ID 'nope' was not issued in this session; open the GET stream without Last-Event-ID");

    assertThat(request("DELETE", session, "", null)).startsWith("HTTP/1.1 204");
    assertThat(post(session, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}")).startsWith("HTTP/1.1 404")
        .contains("unknown or ended session: send initialize to open a new one");
  }

  @Test
  void requestsThatFailTheChecksAreRefusedWithTheirReasons() throws IOException {
    String ping = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}";
    assertThat(post(null, ping)).startsWith("HTTP/1.1 400")
        .contains("Mcp-Session-Id header required: send initialize first to open a session");
    assertThat(raw("GET /other HTTP/1.1\r\nHost: localhost\r\n" + auth() + "Connection: close\r\n\r\n")).startsWith("HTTP/1.1 404")
        .contains("not found: the MCP endpoint is /mcp");
    assertThat(raw("POST /mcp HTTP/1.1\r\nHost: evil.example\r\n" + auth() + JSON_SSE + body(ping)))
        .startsWith("HTTP/1.1 403").contains("Host header 'evil.example' is not allowed (DNS rebinding protection)");
    assertThat(raw("POST /mcp HTTP/1.1\r\nHost: localhost\r\nOrigin: http://evil.example\r\n" + auth() + JSON_SSE
        + body(ping))).startsWith("HTTP/1.1 403")
        .contains("Origin 'http://evil.example' is not allowed; start the server with --allow-origin to accept it");
    String noToken = raw("POST /mcp HTTP/1.1\r\nHost: localhost\r\n" + JSON_SSE + body(ping));
    assertThat(noToken).startsWith("HTTP/1.1 401").contains("authentication required");
    assertThat(header(noToken, "WWW-Authenticate")).isEqualTo("Bearer realm=\"sandbox-mcp\"");
    assertThat(raw("POST /mcp HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer wrong\r\n" + JSON_SSE + body(ping)))
        .startsWith("HTTP/1.1 401").contains("invalid bearer token");
    String put = request("PUT", null, "", null);
    assertThat(put).startsWith("HTTP/1.1 405").contains("method not allowed: use POST, GET or DELETE");
    assertThat(header(put, "Allow")).isEqualTo("GET, POST, DELETE");
    assertThat(request("POST", null, "Accept: application/json\r\n", ping)).startsWith("HTTP/1.1 406")
        .contains("Accept must list both application/json and text/event-stream");
    assertThat(raw("POST /mcp HTTP/1.1\r\nHost: localhost\r\n" + auth() + JSON_SSE + "Content-Type: text/plain\r\n"
        + "Content-Length: 2\r\nConnection: close\r\n\r\n{}")).startsWith("HTTP/1.1 415")
        .contains("Content-Type must be application/json");
    assertThat(post(null, "{not json")).startsWith("HTTP/1.1 400").contains("not valid JSON");
    assertThat(request("POST", null, JSON_SSE + "MCP-Protocol-Version: 1999-01-01\r\n",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}")).startsWith("HTTP/1.1 400")
        .contains("unsupported MCP-Protocol-Version '1999-01-01'");
  }

  private static String auth() {
    return "Authorization: Bearer " + TOKEN + "\r\n";
  }

  private static String body(String json) {
    byte[] b = json.getBytes(StandardCharsets.UTF_8);
    return "Content-Type: application/json\r\nContent-Length: " + b.length + "\r\nConnection: close\r\n\r\n" + json;
  }

  private static String post(String session, String json) throws IOException {
    return request("POST", session, JSON_SSE, json);
  }

  private static String request(String method, String session, String headers, String json) throws IOException {
    String head = method + " /mcp HTTP/1.1\r\nHost: localhost\r\n" + auth() + headers
        + (session != null ? "Mcp-Session-Id: " + session + "\r\n" : "");
    return raw(head + (json != null ? body(json) : "Connection: close\r\n\r\n"));
  }

  /** Sends {@code request} as is and reads the whole response (the server closes the connection after it). */
  private static String raw(String request) throws IOException {
    try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
      s.setSoTimeout(10_000);
      OutputStream out = s.getOutputStream();
      out.write(request.getBytes(StandardCharsets.UTF_8));
      out.flush();
      InputStream in = s.getInputStream();
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  private static String header(String response, String name) {
    Matcher m = Pattern.compile("(?im)^" + Pattern.quote(name) + ":\\s*(.*?)\\r?$").matcher(response);
    return m.find() ? m.group(1) : null;
  }
}
