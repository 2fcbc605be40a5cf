package dev.sandboxsdk.agent.http;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.sun.net.httpserver.HttpExchange;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.http.AgentMessages.ErrorBody;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;

/**
 * Writes JSON responses. Answers are wire records (the {@code *Messages} classes); the envelope
 * fields every answer ends with ({@code success}, {@code timestamp}) are added here, after the
 * record's own fields, so no record has to carry them.
 */
public final class Responses {
  /** The Content-Type of every JSON answer. */
  public static final String JSON_CONTENT_TYPE = "application/json; charset=utf-8";

  private Responses() {}

  /** Sends a success answer: the record's fields, then {@code success: true} and a {@code timestamp}. */
  public static void ok(HttpExchange exchange, Object answer) throws IOException {
    send(exchange, 200, stamped(answer, true));
  }

  /** Sends a success answer whose record carries its own {@code success}: the record's fields, then a {@code timestamp}. */
  public static void okTimestamped(HttpExchange exchange, Object answer) throws IOException {
    send(exchange, 200, stamped(answer, false));
  }

  /**
   * The JSON of {@code record} with {@code "success":true} (if asked) and {@code "timestamp"}
   * appended as its last fields. Splicing the bytes keeps the record free of envelope fields and
   * costs one copy, not a tree.
   */
  public static byte[] stamped(Object record, boolean success) throws JsonProcessingException {
    byte[] json = Json.MAPPER.writeValueAsBytes(record);
    byte[] tail = ((success ? "\"success\":true," : "") + "\"timestamp\":\"" + Instant.now() + "\"}")
        .getBytes(StandardCharsets.US_ASCII);
    int keep = json.length - 1; // without the closing brace
    boolean empty = keep == 1; // "{}"
    byte[] out = new byte[keep + (empty ? 0 : 1) + tail.length];
    System.arraycopy(json, 0, out, 0, keep);
    if (!empty) {
      out[keep] = ',';
    }
    System.arraycopy(tail, 0, out, out.length - tail.length, tail.length);
    return out;
  }

  /**
   * Sends a success answer whose record is the whole body, envelope fields included (a file read
   * whose {@code timestamp} sits inside it): the record's JSON, nothing appended.
   */
  public static void okAsIs(HttpExchange exchange, Object answer) throws IOException {
    send(exchange, 200, Json.MAPPER.writeValueAsBytes(answer));
  }

  static void error(HttpExchange exchange, AgentException e) throws IOException {
    send(exchange, e.code().httpStatus(), errorBody(e));
  }

  /** The protocol's error object; written whole (its {@code success} comes first). */
  public static byte[] errorBody(AgentException e) throws JsonProcessingException {
    return Json.MAPPER.writeValueAsBytes(ErrorBody.of(e));
  }

  /**
   * Sends {@code json} as it is with {@code status} and the JSON Content-Type, and closes the
   * body; a HEAD request gets the headers only.
   */
  public static void send(HttpExchange exchange, int status, byte[] json) throws IOException {
    exchange.getResponseHeaders().set("Content-Type", JSON_CONTENT_TYPE);
    if (exchange.getRequestMethod().equals("HEAD")) {
      exchange.sendResponseHeaders(status, -1); // a HEAD response has no body
      return;
    }
    exchange.sendResponseHeaders(status, json.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(json);
    }
  }
}
