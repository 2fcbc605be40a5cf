package dev.sandboxsdk.internal;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sandboxsdk.EgressNotEnabledException;
import dev.sandboxsdk.ProcessNotFoundException;
import dev.sandboxsdk.SandboxAuthException;
import dev.sandboxsdk.SandboxConflictException;
import dev.sandboxsdk.SandboxConnectionException;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxFileNotFoundException;
import dev.sandboxsdk.SandboxInvalidRequestException;
import dev.sandboxsdk.SandboxNotFoundException;
import dev.sandboxsdk.SandboxPermissionException;
import dev.sandboxsdk.SandboxServerException;
import dev.sandboxsdk.SandboxTimeoutException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/** The one place where agent errors and I/O failures become {@link SandboxException}s. */
public final class ErrorMapper {
  private ErrorMapper() {}

  /** An error answer of the agent: HTTP status plus the JSON body {@code {code, message, context}}. */
  static SandboxException fromResponse(int status, byte[] body) {
    return fromResponse(status, body, null);
  }

  /** As {@link #fromResponse(int, byte[])}, with a note the client adds (e.g. that the agent was restarted). */
  static SandboxException fromResponse(int status, byte[] body, String note) {
    String code = null;
    String message = null;
    Map<String, Object> context = Map.of();
    try {
      JsonNode n = Wire.MAPPER.readTree(body);
      if (n != null && n.isObject()) {
        code = n.path("code").isTextual() ? n.get("code").asText() : null;
        message = n.path("message").isTextual() ? n.get("message").asText() : null;
        if (n.path("context").isObject()) {
          context = toMap(n.get("context"));
        }
      }
    } catch (IOException | RuntimeException notJson) {
      // e.g. an HTML page from a proxy: fall back to the status below
    }
    if (message == null) {
      String text = new String(body, StandardCharsets.UTF_8).strip();
      message = "HTTP " + status + (text.isEmpty() ? "" : ": " + abbreviate(text, 200));
    }
    return create(status, code, message + " (HTTP " + status + (code != null ? " " + code : "") + ")"
        + (note != null ? "; " + note : ""), context);
  }

  /** The agent's in-band {@code error} event: it failed itself while streaming. */
  static SandboxException streamError(JsonNode event) {
    String code = event.path("code").asText("INTERNAL_ERROR");
    String message = event.path("message").asText("the agent failed while streaming");
    return new SandboxServerException(message + " (stream error " + code + ")", null, code, 0, Map.of());
  }

  /**
   * The {@code error} event that ends a watch ({@code {"type":"error","error":…,"code":…}}, Cloudflare's
   * shape plus our code): classed by its code as an error answer would be.
   */
  static SandboxException watchError(JsonNode event, String what) {
    String code = event.path("code").asText("INTERNAL_ERROR");
    String message = event.path("error").asText(event.path("message").asText("the watch failed"));
    int status = code.equals("TOO_MANY_WATCHES") ? 429 : code.equals("INTERNAL_ERROR") ? 500 : 0;
    return create(status, code, what + ": " + message + " (stream error " + code + ")", Map.of());
  }

  static SandboxException create(int status, String code, String message, Map<String, Object> context) {
    String c = code == null ? "" : code;
    if (status == 401 || c.equals("UNAUTHORIZED")) {
      return new SandboxAuthException(message, null, code, status, context);
    }
    if (c.equals("PROCESS_NOT_FOUND")) {
      return new ProcessNotFoundException(message, null, code, status, context);
    }
    if (c.equals("FILE_NOT_FOUND")) {
      return new SandboxFileNotFoundException(message, null, code, status, context);
    }
    if (status == 403 || c.equals("PERMISSION_DENIED") || c.equals("READ_ONLY")) {
      return new SandboxPermissionException(message, null, code, status, context);
    }
    if (status == 404) {
      return new SandboxNotFoundException(message, null, code, status, context);
    }
    if (status == 429 || status >= 500) {
      return new SandboxServerException(message, null, code, status, context);
    }
    if (status == 409) {
      return new SandboxConflictException(message, null, code, status, context);
    }
    if (status >= 400) {
      return new SandboxInvalidRequestException(message, null, code, status, context);
    }
    return new SandboxException(message, null, code, status, context);
  }

  /**
   * A 404 of an egress route: {@code NOT_FOUND} (an agent without {@code --egress-policy}, or one
   * too old to have the routes) means the sandbox has no egress proxy; any other code stays as it is.
   */
  static SandboxException egressNotEnabled(SandboxNotFoundException e) {
    if (!"NOT_FOUND".equals(e.code())) {
      return e;
    }
    return new EgressNotEnabledException("egress is not enabled for this sandbox: it was created without an egress"
        + " policy (SandboxSpec.Builder.egressPolicy, LocalSandbox.Builder.egressPolicy), or its agent has no egress"
        + " proxy; the agent said: " + e.getMessage(), e, e.code(), e.httpStatus(), e.context());
  }

  /** An I/O failure while talking to the agent at {@code what} (e.g. "POST /api/execute"). */
  static SandboxException fromIo(IOException e, String what) {
    if (e instanceof SocketTimeoutException || (e instanceof InterruptedIOException && "timeout".equals(e.getMessage()))) {
      return new SandboxTimeoutException(what + ": the agent did not answer in time (" + e.getMessage() + ")", e);
    }
    if (e instanceof InterruptedIOException && Thread.currentThread().isInterrupted()) {
      return new SandboxException(what + ": interrupted", e);
    }
    return new SandboxConnectionException(what + ": " + describe(e), e);
  }

  private static String describe(IOException e) {
    String m = e.getMessage();
    return e.getClass().getSimpleName() + (m == null ? "" : ": " + m);
  }

  private static Map<String, Object> toMap(JsonNode node) {
    Map<String, Object> map = new LinkedHashMap<>();
    node.fields().forEachRemaining(f -> {
      JsonNode v = f.getValue();
      Object value = v.isTextual() ? v.asText() : v.isIntegralNumber() ? (Object) v.asLong()
          : v.isBoolean() ? (Object) v.asBoolean() : v.toString();
      map.put(f.getKey(), value);
    });
    return map;
  }

  private static String abbreviate(String s, int max) {
    return s.length() <= max ? s : s.substring(0, max) + "...";
  }
}
