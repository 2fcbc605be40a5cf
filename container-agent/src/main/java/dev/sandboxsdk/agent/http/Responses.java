package dev.sandboxsdk.agent.http;

import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.process.ManagedProcess;
import java.io.IOException;
import java.io.OutputStream;
import java.time.Instant;

/** Writes JSON responses and the protocol's views of agent state. */
final class Responses {
  static final String JSON_CONTENT_TYPE = "application/json; charset=utf-8";

  private Responses() {}

  /** Sends a success body; adds {@code success: true} unless set and a {@code timestamp}. */
  static void ok(HttpExchange exchange, ObjectNode body) throws IOException {
    send(exchange, 200, stamp(body));
  }

  /** Completes a success body: {@code success: true} unless already set, and a {@code timestamp}. */
  static ObjectNode stamp(ObjectNode body) {
    if (!body.has("success")) {
      body.put("success", true);
    }
    body.put("timestamp", Instant.now().toString());
    return body;
  }

  static void error(HttpExchange exchange, AgentException e) throws IOException {
    send(exchange, e.code().httpStatus(), errorBody(e));
  }

  static ObjectNode errorBody(AgentException e) {
    ObjectNode body = Json.object();
    body.put("success", false);
    body.put("code", e.code().name());
    body.put("message", e.getMessage());
    body.set("context", Json.MAPPER.valueToTree(e.context()));
    body.put("httpStatus", e.code().httpStatus());
    body.put("timestamp", Instant.now().toString());
    return body;
  }

  static void send(HttpExchange exchange, int status, ObjectNode body) throws IOException {
    byte[] bytes = Json.MAPPER.writeValueAsBytes(body);
    exchange.getResponseHeaders().set("Content-Type", JSON_CONTENT_TYPE);
    if (exchange.getRequestMethod().equals("HEAD")) {
      exchange.sendResponseHeaders(status, -1); // a HEAD response has no body
      return;
    }
    exchange.sendResponseHeaders(status, bytes.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(bytes);
    }
  }

  /** The protocol's ProcessInfo object. */
  static ObjectNode processInfo(ManagedProcess.Snapshot s) {
    ObjectNode info = Json.object();
    info.put("id", s.id());
    info.put("pid", s.pid());
    info.put("command", s.command());
    if (s.argv() != null) {
      info.set("argv", Json.MAPPER.valueToTree(s.argv()));
    }
    info.put("status", s.status().wireName());
    info.put("startTime", s.startTime().toString());
    if (s.endTime() != null) {
      info.put("endTime", s.endTime().toString());
    }
    if (s.exitCode() != null) {
      info.put("exitCode", s.exitCode());
    }
    if (s.signal() != null) {
      info.put("signal", s.signal().name());
    }
    if (s.status().isTerminal()) {
      info.put("timedOut", s.timedOut());
    }
    info.put("stdoutBytes", s.stdoutBytes());
    info.put("stderrBytes", s.stderrBytes());
    if (s.ptyCols() != null) {
      info.set("pty", Json.object().put("cols", s.ptyCols()).put("rows", s.ptyRows()));
    }
    return info;
  }
}
