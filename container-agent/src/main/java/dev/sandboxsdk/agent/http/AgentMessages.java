package dev.sandboxsdk.agent.http;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonInclude.Include;
import dev.sandboxsdk.agent.AgentException;
import java.time.Instant;
import java.util.Map;

/**
 * Wire records of the agent as a whole: the error object every route answers with, the ping and
 * GET /api/version. Components are written in declaration order; a component marked
 * {@code NON_NULL} is left out when null, every other one is always written.
 */
final class AgentMessages {
  private AgentMessages() {
  }

  /** The error object: {@code {success:false, code, message, context, httpStatus, timestamp}}. */
  record ErrorBody(boolean success, String code, String message, Map<String, Object> context, int httpStatus,
      String timestamp) {
    static ErrorBody of(AgentException e) {
      return new ErrorBody(false, e.code().name(), e.getMessage(), e.context(), e.code().httpStatus(),
          Instant.now().toString());
    }
  }

  /** GET /api/ping. */
  record Ping(String status) {
  }

  /** GET /api/version: the agent, its protocol and the limits a client calibrates against. */
  record Version(String version, int protocol, String bootId, String lastActivityAt, Limits limits, Output output,
      @JsonInclude(Include.NON_NULL) CommandUser commandUser, Isolation isolation, String spawn) {
  }

  /**
   * Limits a client calibrates against, e.g. how long a stream may stay silent before it is dead
   * (two keep-alive intervals), or how far back a reader can resume.
   */
  record Limits(long keepAliveMs, long graceMs, long maxProcesses, long maxBodyBytes, long logWindowBytes,
      long defaultMaxOutputBytes, long maxOutputBytes, long outputBudgetBytes, long idleTimeoutMs) {
  }

  /** The live figures of the output budget: bytes buffered now and evicted so far. */
  record Output(long bufferedBytes, long evictedBytes) {
  }

  /** The user commands run as ({@code --command-user}). */
  record CommandUser(@JsonInclude(Include.NON_NULL) String name, long uid, long gid, String home) {
  }

  /** How commands are isolated. */
  record Isolation(String mode, boolean network) {
  }

  /** The event that ends a stream the agent itself failed to relay: {@code {type:"error", code, message}}. */
  record ErrorEvent(String type, String code, String message) {
    ErrorEvent(String code, String message) {
      this("error", code, message);
    }
  }
}
