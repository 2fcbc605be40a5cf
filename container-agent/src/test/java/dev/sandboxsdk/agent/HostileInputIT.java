package dev.sandboxsdk.agent;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sandboxsdk.agent.HostileClientsIT.Route;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
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
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Malformed and oversized input on every route of the packaged agent, as a systematic matrix:
 * broken and truncated JSON, JSON of the wrong type, every known field with every wrong type,
 * 1 MiB strings, numbers past long, bodies just over the limit, invalid UTF-8, NUL bytes, ids of
 * 10,000 characters, percent-encoded garbage, repeated query parameters, other content types,
 * bodies where none belong. Each rejected request must get a 4xx with the agent's JSON error and
 * run nothing; no request may get a 5xx or go unanswered; the agent's descriptors and threads
 * come back afterwards. Also: 50 clients that read event streams slowly or not at all.
 */
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class HostileInputIT {
  /** The agent's default --max-body-bytes. */
  static final int BODY_LIMIT = 8 * 1024 * 1024;
  static final String MIB = "x".repeat(1024 * 1024);
  /** Replaced in a body by a file name: the command {@code touch}es it if the agent ever runs it. */
  static final String MARK = "@MARK@";
  static final Pattern MARKER = Pattern.compile("spawned-(\\d+)");

  final List<ChildAgent> agents = new ArrayList<>();
  final List<Socket> sockets = new ArrayList<>();
  final ExecutorService writer = Executors.newCachedThreadPool();

  @AfterEach
  void cleanUp() throws Exception {
    writer.shutdownNow();
    for (Socket s : sockets) {
      s.close();
    }
    for (ChildAgent a : agents) {
      a.close();
    }
  }

  /**
   * What the agent may answer. REJECTED: a 4xx with its JSON error and nothing run. TOLERATED: the
   * protocol allows the input (e.g. a body on GET is ignored, the Content-Type is not checked), so
   * a 2xx is fine too. Either way never a 5xx and never silence.
   */
  enum Expect { REJECTED, TOLERATED }

  /**
   * One hostile request. {@code %s} in the target is the live background process; {@code mayRun}
   * says whether a command in it may run (only for a tolerated request to an exec route);
   * {@code jdk} marks input the JDK server rejects before the agent sees it (a URI it cannot
   * parse, a broken Content-Length or chunk framing): its HTML 400, or a close without answer
   * where the framing is lost, are allowed there (docs/protocol/README.md, section 6).
   */
  record Case(int index, String label, Expect expect, byte[] request, boolean mayRun, boolean jdk) {
  }

  /** The parts of an answer the assertions need. */
  record Answer(int status, String head, String body, String failure) {
  }

  final List<Case> cases = new ArrayList<>();

  static boolean takesBody(Route r) {
    return r.method().equals("POST") && !r.path().equals("/api/process/cleanup");
  }

  static boolean runsCommands(Route r) {
    return r.path().equals("/api/execute") || r.path().equals("/api/execute/stream") || r.path().equals("/api/process/start");
  }

  /** A known-good body for the route; commands {@code touch} their marker. */
  static String goodBody(Route r) {
    if (r.path().endsWith("/stdin")) {
      return "{\"data\":\"hello\\n\"}";
    }
    return "{\"command\":\"touch " + MARK + "\"}"; // on routes without a body it is the body that must be ignored
  }

  void add(Expect expect, String label, Route route, String target, String headers, byte[] body, boolean jdk) {
    int index = cases.size();
    byte[] b = body == null ? null
        : new String(body, StandardCharsets.ISO_8859_1).replace(MARK, "spawned-" + index).getBytes(StandardCharsets.ISO_8859_1);
    StringBuilder r = new StringBuilder(route.method()).append(' ').append(target).append(" HTTP/1.1\r\n")
        .append("Host: agent\r\nAuthorization: Bearer ").append(ChildAgent.TOKEN).append("\r\nConnection: close\r\n")
        .append(headers);
    if (b != null && headers.contains("Transfer-Encoding: chunked")) {
      b = chunked(b); // after the marker went in, so the chunk sizes are right
    } else if (b != null && !headers.contains("Transfer-Encoding")) {
      r.append("Content-Length: ").append(b.length).append("\r\n");
    }
    r.append("\r\n");
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.writeBytes(r.toString().getBytes(StandardCharsets.ISO_8859_1));
    if (b != null) {
      out.writeBytes(b);
    }
    boolean mayRun = expect == Expect.TOLERATED && runsCommands(route);
    cases.add(new Case(index, route.method() + " " + route.path() + ": " + label, expect, out.toByteArray(), mayRun, jdk));
  }

  void addBody(Expect expect, String label, Route route, String contentType, String body) {
    add(expect, label, route, route.path(), "Content-Type: " + contentType + "\r\n", utf8(body), false);
  }

  void addBody(Expect expect, String label, Route route, String body) {
    addBody(expect, label, route, "application/json", body);
  }

  static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  static byte[] concat(String a, byte[] middle, String b) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.writeBytes(utf8(a));
    out.writeBytes(middle);
    out.writeBytes(utf8(b));
    return out.toByteArray();
  }

  static final List<String> WRONG_STRING = List.of("1", "true", "[]", "{}", "[\"x\"]", "1.5", "-1");
  static final List<String> WRONG_LIST = List.of("\"touch\"", "1", "{}", "[1]", "[null]", "[[]]", "[]", "[\"\"]", "true");
  static final List<String> WRONG_MAP = List.of("\"A=1\"", "[]", "1", "{\"A\":1}", "{\"A\":[]}", "{\"A\":{}}",
      "{\"\":\"x\"}", "{\"A=B\":\"x\"}", "{\"A\\u0000B\":\"x\"}", "{\"A\":\"x\\u0000y\"}", "true");
  static final List<String> WRONG_INTEGER = List.of("\"1000\"", "true", "[]", "{}", "1.5", "1e309", "-1e309", "1E400",
      "-1", "0", "9223372036854775808", "9223372036854775807", "-9223372036854775809", "1e3", "-0",
      "99999999999999999999999999999999999999", "9".repeat(2_000));
  static final List<String> WRONG_BOOLEAN = List.of("\"true\"", "1", "[]", "{}", "0", "null0");

  /** Fields of the three routes that run commands, with their kind (docs/protocol/exec.md). */
  static Map<String, String> fields(Route r) {
    Map<String, String> f = new TreeMap<>(Map.of("command", "string", "argv", "list", "env", "map", "cwd", "string",
        "timeoutMs", "integer", "stdin", "string", "encoding", "string", "sessionId", "string", "origin", "string"));
    if (r.path().equals("/api/execute")) {
      f.put("maxOutputBytes", "integer");
    }
    if (r.path().equals("/api/process/start")) {
      f.put("processId", "string");
      f.put("autoCleanup", "boolean");
    }
    return f;
  }

  /** A body whose only problem is {@code field} set to the JSON text {@code value}. */
  static String withField(String field, String value) {
    if (field.equals("command")) {
      return "{\"command\":" + value + "}";
    }
    if (field.equals("argv")) {
      return "{\"argv\":" + value + "}";
    }
    return "{\"command\":\"touch " + MARK + "\",\"" + field + "\":" + value + "}";
  }

  void buildMatrix(List<Route> routes) {
    for (Route route : routes) {
      boolean body = takesBody(route);
      // A body where the route expects one must be rejected; elsewhere it is ignored (and must run nothing).
      Expect bad = body ? Expect.REJECTED : Expect.TOLERATED;
      String good = goodBody(route);
      List<String> broken = List.of("{", "}", "{\"command\":", "{command:\"touch " + MARK + "\"}", "{'command':'x'}",
          "{\"command\":\"touch " + MARK + "\",}", "{\"command\":\"touch " + MARK + "\"}}", "{\"command\":\"touch " + MARK + "\"} x",
          "nope", "NaN", "{\"data\":NaN}", "{\"command\":\"touch " + MARK + "\" /* c */}", "\u0000", "{\"a\":1}{\"b\":2}",
          good.substring(0, good.length() / 2), good.substring(0, good.length() - 1), "[]", "[" + good + "]", "\"touch\"",
          "42", "-1", "1e309", "null", "true", "{}", "{\"\":1}", "{\"x\":\"" + MIB + "\"}", "{\"" + MIB + "\":1}",
          "{\"a\":" + "[".repeat(100) + "]".repeat(100) + "}", "{\"command\":\"touch " + MARK + "\",\"command\":\"true\"}",
          "{\"command\":\"touch \\ud800 " + MARK + "\" \"x\":1}");
      for (String b : broken) {
        addBody(bad, "body " + abbreviate(b), route, b);
      }
      addBody(bad, "empty body", route, "");
      add(bad, "invalid UTF-8 in a string", route, route.path(), "Content-Type: application/json\r\n",
          concat("{\"command\":\"touch " + MARK + " ", new byte[] {(byte) 0xff, (byte) 0xfe, (byte) 0xc0, (byte) 0xaf}, "\"}"), false);
      add(bad, "a raw NUL byte in a string", route, route.path(), "Content-Type: application/json\r\n",
          concat("{\"command\":\"touch " + MARK + "", new byte[] {0}, "x\"}"), false);
      add(bad, "UTF-16 with a BOM", route, route.path(), "Content-Type: application/json\r\n",
          concat("", new byte[] {(byte) 0xfe, (byte) 0xff, 0, '{', 0, '"'}, ""), false);
      add(bad, "Latin-1 declared", route, route.path(), "Content-Type: application/json; charset=iso-8859-1\r\n",
          concat("{\"command\":\"touch caf", new byte[] {(byte) 0xe9}, " " + MARK + "\"}"), false);
      addBody(bad, "a form instead of JSON", route, "application/x-www-form-urlencoded", "command=touch+" + MARK);
      addBody(bad, "multipart", route, "multipart/form-data; boundary=b",
          "--b\r\nContent-Disposition: form-data; name=\"command\"\r\n\r\ntouch " + MARK + "\r\n--b--\r\n");
      // The protocol does not check the Content-Type: a good body under another type is served.
      addBody(Expect.TOLERATED, "good body as text/plain", route, "text/plain", good);
      addBody(Expect.TOLERATED, "good body without a Content-Type", route, "", good);
      add(bad, "body one byte over the limit", route, route.path(), "Content-Type: application/json\r\n",
          overLimit(), false);
      add(bad, "chunked body one byte over the limit", route, route.path(),
          "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n", overLimit(), false);
      add(bad, "Content-Length 10^19", route, route.path(), "Content-Type: application/json\r\nContent-Length: 10000000000000000000\r\n",
          null, true);
      add(bad, "Content-Length -1", route, route.path(), "Content-Type: application/json\r\nContent-Length: -1\r\n", null, true);
      add(bad, "Content-Length and chunked", route, route.path(),
          "Content-Type: application/json\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n", utf8(good), true);
      add(bad, "chunk sizes that lie", route, route.path(), "Content-Type: application/json\r\nTransfer-Encoding: Chunked\r\n",
          utf8("zz\r\n" + good + "\r\n0\r\n\r\n"), true);
      // Query parameters where the route defines none, or repeated, or garbage.
      String plain = route.path();
      // A route whose own request has a query (the raw file routes' path) gets more after '&'.
      String sep = plain.contains("?") ? "&" : "?";
      boolean queryRoute = plain.endsWith("/logs") || plain.endsWith("/stream") && plain.contains("%s")
          || route.method().equals("DELETE") && plain.equals("/api/process/%s") || plain.equals("/api/process/list");
      if (!queryRoute && !plain.equals("/api/no-such-route")) {
        for (String q : List.of("x=1", "x=1&x=1", "%00=1", "since=1", "a=" + "b".repeat(10_000), "%E2%82=1", "=1")) {
          addQuery(Expect.REJECTED, route, plain + sep + q, false);
        }
      }
      for (String q : List.of("%zz", "a%", "%G1=1")) {
        addQuery(Expect.REJECTED, route, plain + sep + q, true);
      }
      // Ids in the path: 10,000 characters, NUL, invalid UTF-8, traversal, CR LF.
      if (plain.contains("%s")) {
        for (String id : List.of("a".repeat(10_000), "%00", "a%00b", "%FF%FE", "%E2%82", "%2E%2E", "a%2Fb", "%20",
            "a%0D%0AX:1", "%C0%AF", "+", "%2B", "x".repeat(129), "%25")) {
          addQuery(Expect.REJECTED, route, plain.replace("%s", id), false);
        }
        for (String id : List.of("%", "%G1", "a%2", "%u0041")) {
          addQuery(Expect.REJECTED, route, plain.replace("%s", id), true);
        }
      }
    }
  }

  void addQuery(Expect expect, Route route, String target, boolean jdk) {
    String headers = takesBody(route) ? "Content-Type: application/json\r\n" : "";
    byte[] body = takesBody(route) ? utf8(goodBody(route)) : null;
    add(expect, "target " + abbreviate(target), route, target, headers, body, jdk);
  }

  void buildFieldMatrix(Route route) {
    for (Map.Entry<String, String> f : fields(route).entrySet()) {
      String name = f.getKey();
      List<String> wrong;
      switch (f.getValue()) {
        case "list":
          wrong = WRONG_LIST;
          break;
        case "map":
          wrong = WRONG_MAP;
          break;
        case "integer":
          wrong = WRONG_INTEGER;
          break;
        case "boolean":
          wrong = WRONG_BOOLEAN;
          break;
        default:
          wrong = WRONG_STRING;
      }
      for (String v : wrong) {
        addBody(Expect.REJECTED, name + "=" + abbreviate(v), route, withField(name, v));
      }
      if (f.getValue().equals("string")) {
        // 1 MiB and NUL in every string field; stdin data and the ignored sessionId may be that big.
        boolean bigIsData = name.equals("sessionId") || name.equals("stdin") && !route.path().endsWith("/start");
        addBody(bigIsData ? Expect.TOLERATED : Expect.REJECTED, name + " of 1 MiB", route,
            withField(name, "\"" + (name.equals("command") ? "touch " + MARK + " " : "") + MIB + "\""));
        boolean nulIsData = name.equals("stdin") && !route.path().endsWith("/start") || name.equals("sessionId");
        addBody(nulIsData ? Expect.TOLERATED : Expect.REJECTED, name + " with NUL", route,
            withField(name, "\"" + (name.equals("command") ? "touch " + MARK : "a") + "\\u0000b\""));
      }
    }
    addBody(Expect.REJECTED, "argv with NUL", route, "{\"argv\":[\"touch\",\"" + MARK + "\\u0000x\"]}");
    addBody(Expect.REJECTED, "argv with 1 MiB", route, "{\"argv\":[\"touch\",\"" + MARK + "\",\"" + MIB + "\"]}");
    addBody(Expect.REJECTED, "env name of 1 MiB", route, withField("env", "{\"" + MIB + "\":\"x\"}"));
    addBody(Expect.REJECTED, "env value of 1 MiB", route, withField("env", "{\"A\":\"" + MIB + "\"}"));
    addBody(Expect.REJECTED, "command and argv", route, "{\"command\":\"touch " + MARK + "\",\"argv\":[\"touch\",\"x\"]}");
    addBody(Expect.REJECTED, "unknown field", route, "{\"command\":\"touch " + MARK + "\",\"comand\":\"x\"}");
  }

  void buildStdinMatrix(Route route) {
    for (String v : WRONG_STRING) {
      addBody(Expect.REJECTED, "data=" + v, route, "{\"data\":" + v + "}");
      addBody(Expect.REJECTED, "encoding=" + v, route, "{\"data\":\"x\",\"encoding\":" + v + "}");
    }
    for (String v : WRONG_BOOLEAN) {
      addBody(Expect.REJECTED, "eof=" + v, route, "{\"data\":\"x\",\"eof\":" + v + "}");
    }
    addBody(Expect.REJECTED, "encoding of 1 MiB", route, "{\"data\":\"x\",\"encoding\":\"" + MIB + "\"}");
    addBody(Expect.REJECTED, "data not base64", route, "{\"data\":\"%%%\",\"encoding\":\"base64\"}");
    addBody(Expect.REJECTED, "no data, no eof", route, "{\"eof\":false}");
    addBody(Expect.REJECTED, "unknown field", route, "{\"data\":\"x\",\"dta\":1}");
    // 1 MiB for a process that never reads its stdin: more than a pipe holds.
    addBody(Expect.TOLERATED, "data of 1 MiB", route, "{\"data\":\"" + MIB + "\"}");
  }

  void buildQueryMatrix(Route route, List<String> params) {
    List<String> numbers = List.of("-1", "1e309", "9223372036854775808", "9223372036854775807", "-9223372036854775809", "abc",
        "", "1.5", "0x10", "%2B1", "%20", "%00", "1%00", "9".repeat(10_000), "NaN", "%E2%82");
    for (String p : params) {
      boolean numeric = !p.equals("signal") && !p.equals("status") && !p.equals("encoding");
      List<String> values = numeric ? numbers : List.of("garbage", "", "%00", "-1", "9223372036854775808", "1e309",
          "SIGKILL%00", "x".repeat(10_000), "%E2%82");
      for (String v : values) {
        // A shared offset past the end is clamped (documented), and +1 is a number.
        boolean fine = p.equals("since") && (v.equals("9223372036854775807") || v.equals("%2B1"))
            || p.equals("maxBytes") && v.equals("%2B1") || p.equals("graceMs") && v.equals("%2B1")
            || p.equals("stdoutSince") && v.equals("%2B1") || p.equals("stderrSince") && v.equals("%2B1");
        addQuery(fine ? Expect.TOLERATED : Expect.REJECTED, route, route.path() + "?" + p + "=" + v, false);
      }
      addQuery(Expect.REJECTED, route, route.path() + "?" + p + "=0&" + p + "=0", false);
      addQuery(Expect.REJECTED, route, route.path() + "?" + p + "=1&" + p.toUpperCase(Locale.ROOT) + "=1", false);
    }
  }

  static byte[] overLimit() {
    byte[] b = new byte[BODY_LIMIT + 1];
    java.util.Arrays.fill(b, (byte) 'x');
    byte[] head = utf8("{\"command\":\"touch " + MARK + " ");
    System.arraycopy(head, 0, b, 0, head.length);
    b[b.length - 2] = '"';
    b[b.length - 1] = '}';
    return b;
  }

  static byte[] chunked(byte[] body) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (int off = 0; off < body.length; off += 64 * 1024) {
      int n = Math.min(64 * 1024, body.length - off);
      out.writeBytes(utf8(Integer.toHexString(n) + "\r\n"));
      out.write(body, off, n);
      out.writeBytes(utf8("\r\n"));
    }
    out.writeBytes(utf8("0\r\n\r\n"));
    return out.toByteArray();
  }

  static String abbreviate(String s) {
    String shown = s.length() > 40 ? s.substring(0, 30) + "...(" + s.length() + ")" : s;
    return shown.replace("\u0000", "\\0");
  }

  /** Sends the request (from another thread, so an early answer is read even while it is still sending). */
  Answer send(ChildAgent agent, byte[] request) {
    try (Socket s = agent.connect()) {
      s.setSoTimeout(15_000);
      Future<?> sent = writer.submit(() -> {
        try {
          s.getOutputStream().write(request);
          s.getOutputStream().flush();
        } catch (IOException e) {
          // the agent answered and closed before taking all of it
        }
      });
      InputStream in = s.getInputStream();
      String head = readHead(in);
      Matcher m = Pattern.compile("^HTTP/1.1 (\\d{3})").matcher(head);
      if (!m.find()) {
        return new Answer(-1, head, "", "no status line: '" + abbreviate(head) + "'");
      }
      int status = Integer.parseInt(m.group(1));
      String body = "";
      Matcher length = Pattern.compile("(?i)content-length: (\\d+)").matcher(head);
      if (length.find()) {
        body = new String(in.readNBytes(Integer.parseInt(length.group(1))), StandardCharsets.UTF_8);
      } else if (!head.toLowerCase(Locale.ROOT).contains("text/event-stream")) {
        body = ChildAgent.readAll(in); // a chunked exec result: the agent closes after it
      }
      s.close();
      try {
        sent.get(10, TimeUnit.SECONDS);
      } catch (Exception e) {
        return new Answer(status, head, body, "the request could not be sent within 10 s: " + e);
      }
      return new Answer(status, head, body, null);
    } catch (SocketTimeoutException e) {
      return new Answer(-1, "", "", "no answer within 15 s (hang)");
    } catch (IOException e) {
      return new Answer(-1, "", "", "connection failed before an answer: " + e);
    }
  }

  static String readHead(InputStream in) throws IOException {
    ByteArrayOutputStream head = new ByteArrayOutputStream();
    int matched = 0;
    while (matched < 4) {
      int b = in.read();
      if (b < 0) {
        break;
      }
      head.write(b);
      matched = (b == '\r' && (matched == 0 || matched == 2)) || (b == '\n' && (matched == 1 || matched == 3)) ? matched + 1
          : b == '\r' ? 1 : 0;
    }
    return head.toString(StandardCharsets.ISO_8859_1);
  }

  /** Why {@code a} breaks the rules for {@code c}, or null. */
  static String judge(Case c, Answer a) {
    if (a.failure() != null) {
      return c.jdk() && a.status() == -1 && a.failure().startsWith("no status line: ''") ? null : a.failure();
    }
    if (a.status() >= 500) {
      return "server error " + a.status() + ": " + abbreviate(a.body());
    }
    boolean jdkError = a.head().toLowerCase(Locale.ROOT).contains("content-type: text/html");
    if (a.status() >= 400 && a.status() < 500) {
      if (jdkError) {
        return c.jdk() && a.status() == 400 ? null : "a JDK error page instead of the agent's JSON: " + abbreviate(a.body());
      }
      try {
        JsonNode error = TestAgent.JSON.readTree(a.body());
        if (!error.path("success").isBoolean() || error.path("success").booleanValue() || !error.path("code").isTextual()) {
          return "not the agent's error body: " + abbreviate(a.body());
        }
      } catch (IOException e) {
        return "error body is not JSON: " + abbreviate(a.body());
      }
      return null;
    }
    if (c.expect() == Expect.REJECTED) {
      return "accepted with " + a.status();
    }
    return a.status() >= 200 && a.status() < 300 ? null : "unexpected status " + a.status();
  }

  /** Prints, and reads its stdin (a write to a process that never reads waits by design: docs, process/{id}/stdin). */
  static final String TICKER = "{\"command\":\"(while true; do echo tick; sleep 0.05; done) & cat > /dev/null\","
      + "\"processId\":\"%s\",\"stdin\":\"pipe\"}";

  /** A running background process for the {@code %s} routes (a tolerated DELETE or kill-all may have ended the last one). */
  String live(ChildAgent agent, String current, int[] generation) throws IOException {
    String r = agent.call(ChildAgent.request("GET", "/api/process/" + current, null), 10_000);
    if (r.contains("\"status\":\"running\"")) {
      return current;
    }
    String id = "bg" + (++generation[0]);
    agent.call("POST", "/api/process/start", String.format(TICKER, id));
    return id;
  }

  static List<Route> routes() {
    return HostileClientsIT.ROUTES;
  }

  @Test
  void malformedAndOversizedInputOnEveryRouteGetsAClientErrorRunsNothingAndCostsNothing() throws Exception {
    ChildAgent agent = ChildAgent.start(List.of(), "--request-timeout-seconds", "5");
    agents.add(agent);
    Path workspace = agent.dir.resolve("ws");
    for (Route route : routes()) {
      if (runsCommands(route)) {
        buildFieldMatrix(route);
      }
    }
    buildMatrix(routes());
    for (Route route : routes()) {
      if (route.path().endsWith("/stdin")) {
        buildStdinMatrix(route);
      } else if (route.path().endsWith("/logs")) {
        buildQueryMatrix(route, List.of("since", "stdoutSince", "stderrSince", "maxBytes", "encoding"));
      } else if (route.path().endsWith("/stream") && route.path().contains("%s")) {
        buildQueryMatrix(route, List.of("since", "stdoutSince", "stderrSince", "encoding"));
      } else if (route.method().equals("DELETE") && route.path().equals("/api/process/%s")) {
        buildQueryMatrix(route, List.of("signal", "graceMs"));
      } else if (route.path().equals("/api/process/list")) {
        buildQueryMatrix(route, List.of("status"));
      }
    }
    // A body on GET that is itself a request must be read as a body, never as the next request.
    Route ping = routes().get(0);
    add(Expect.TOLERATED, "a request smuggled in a GET body", ping, "/api/ping", "",
        utf8(ChildAgent.request("POST", "/api/execute", "{\"command\":\"touch " + MARK + "\"}")), false);

    // Warm up: every route once and one case of each kind, so lazily made threads and buffers are in the baseline.
    int[] generation = {0};
    String bg = live(agent, "none", generation);
    for (Route r : routes()) {
      send(agent, utf8(ChildAgent.request(r.method(), r.path(bg), r.body()))); // a stream: only its head
      bg = live(agent, bg, generation);
    }
    for (int i = 0; i < cases.size(); i += 7) {
      send(agent, new String(cases.get(i).request(), StandardCharsets.ISO_8859_1).replace("%s", bg)
          .getBytes(StandardCharsets.ISO_8859_1));
      bg = live(agent, bg, generation);
    }
    agent.call("DELETE", "/api/process/kill-all", null);
    agent.call("POST", "/api/process/cleanup", "");
    deleteMarkers(workspace);
    Thread.sleep(1_000);
    int baseFds = agent.fds();
    int baseThreads = agent.connectionThreads();
    long baseRss = agent.rssKib();

    bg = live(agent, bg, generation);
    Map<Integer, Integer> statuses = new TreeMap<>();
    List<String> failures = new ArrayList<>();
    int peakFds = 0;
    int peakThreads = 0;
    long peakRss = 0;
    long start = System.nanoTime();
    for (Case c : cases) {
      byte[] request = new String(c.request(), StandardCharsets.ISO_8859_1).replace("%s", bg).getBytes(StandardCharsets.ISO_8859_1);
      long t0 = System.nanoTime();
      Answer a = send(agent, request);
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      statuses.merge(a.status(), 1, Integer::sum);
      String why = judge(c, a);
      if (why != null) {
        failures.add("#" + c.index() + " " + c.label() + " -> " + why);
      } else if (ms > 10_000) {
        failures.add("#" + c.index() + " " + c.label() + " -> answered only after " + ms + " ms");
      }
      if (c.index() % 25 == 0) {
        peakFds = Math.max(peakFds, agent.fds());
        peakThreads = Math.max(peakThreads, agent.connectionThreads());
        peakRss = Math.max(peakRss, agent.rssKib());
      }
      if (c.label().startsWith("DELETE") || c.label().contains("stdin")) {
        bg = live(agent, bg, generation);
      }
    }
    long matrixMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    // 1 MiB for a process that never reads: the write waits (documented), and ends with 409 when the process does.
    agent.call("POST", "/api/process/start", "{\"command\":\"sleep 60\",\"processId\":\"deaf\",\"stdin\":\"pipe\"}");
    Future<Answer> waiting = writer.submit(() -> send(agent, utf8(ChildAgent.request("POST", "/api/process/deaf/stdin",
        "{\"data\":\"" + MIB + "\"}"))));
    Thread.sleep(1_000);
    assertThat(waiting.isDone()).as("the write waits for the reader").isFalse();
    agent.call("DELETE", "/api/process/deaf?signal=SIGKILL", null);
    Answer deaf = waiting.get(10, TimeUnit.SECONDS);
    assertThat(deaf.status()).as("stdin write to a process that died: %s", deaf.body()).isEqualTo(409);
    // Processes started by tolerated requests are over by now (touch); give their files a moment.
    Thread.sleep(500);
    List<String> ran = new ArrayList<>();
    try (Stream<Path> files = Files.list(workspace)) {
      files.forEach(f -> {
        Matcher m = MARKER.matcher(f.getFileName().toString());
        if (m.matches() && !cases.get(Integer.parseInt(m.group(1))).mayRun()) {
          ran.add("#" + m.group(1) + " " + cases.get(Integer.parseInt(m.group(1))).label());
        }
      });
    }
    agent.call("DELETE", "/api/process/kill-all", null);
    agent.call("POST", "/api/process/cleanup", "");
    boolean settled = ChildAgent.await(30_000,
        () -> agent.fds() <= baseFds + HostileClientsIT.SLACK && agent.connectionThreads() <= baseThreads + HostileClientsIT.SLACK);
    long rss = agent.rssKib();
    System.out.printf("hostile input: %d cases on %d routes in %d ms, statuses %s, %d failures, %d ran a command they"
            + " should not; agent fds %d -> peak %d -> %d, threads %d -> peak %d -> %d, RSS %d -> peak %d -> %d KiB%n",
        cases.size(), routes().size(), matrixMs, statuses, failures.size(), ran.size(), baseFds, peakFds, agent.fds(),
        baseThreads, peakThreads, agent.connectionThreads(), baseRss, peakRss, rss);
    assertThat(failures).as("cases answered wrongly").isEmpty();
    assertThat(ran).as("rejected or ignored requests whose command ran anyway").isEmpty();
    assertThat(cases.size()).isGreaterThanOrEqualTo(1_000);
    assertThat(settled).as("fds %d (baseline %d), threads %d (baseline %d): %s; %s", agent.fds(), baseFds,
        agent.connectionThreads(), baseThreads, agent.threadNames(), HostileClientsIT.openFds(agent)).isTrue();
    // The child runs with -Xmx256m; bodies of 8 MiB and strings of 1 MiB grow the heap within it.
    assertThat(rss).as("RSS in KiB (baseline %d)", baseRss).isLessThan(384 * 1024);
    assertThat(agent.call("GET", "/api/ping", null)).contains("\"status\":\"healthy\"");
    assertThat(agent.call("POST", "/api/execute", "{\"command\":\"echo still here\"}")).contains("still here\\n");
  }

  static void deleteMarkers(Path workspace) throws IOException {
    try (Stream<Path> files = Files.list(workspace)) {
      for (Path f : (Iterable<Path>) files::iterator) {
        if (MARKER.matcher(f.getFileName().toString()).matches()) {
          Files.delete(f);
        }
      }
    }
  }
}
