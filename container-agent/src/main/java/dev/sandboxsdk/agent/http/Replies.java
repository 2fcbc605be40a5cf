package dev.sandboxsdk.agent.http;

import com.sun.net.httpserver.HttpExchange;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/** The handler's error answers and the checks of a request's method and path that raise them. */
public final class Replies {
  private Replies() {
  }

  /** The JVM's answer when the OS refuses a thread (a pids or nproc limit), which is not the heap running out. */
  static boolean noRoomForThread(OutOfMemoryError e) {
    return e.getMessage() != null && e.getMessage().contains("unable to create native thread");
  }

  /** Sends the error unless a response already started; returns the failure to send it, if any. */
  static IOException respondError(HttpExchange exchange, AgentException e) {
    if (exchange.getResponseCode() != -1) {
      return null; // headers already went out (a stream); the stream itself reports errors
    }
    if (e.code() == ErrorCode.UNAUTHORIZED || e.code() == ErrorCode.TOO_MANY_PROXIED_REQUESTS) {
      // No body is read for a client without a token, and its connection is not kept: neither a
      // slow body nor idle connections let it hold a share of the connection cap.
      if (e.code() == ErrorCode.UNAUTHORIZED) {
        exchange.getResponseHeaders().set("WWW-Authenticate", "Bearer realm=\"sandbox-agent\"");
      }
      exchange.getResponseHeaders().set("Connection", "close");
    } else if (!drainRequestBody(exchange)) {
      // An unread body would be taken for the next request; tell the client not to reuse this connection.
      exchange.getResponseHeaders().set("Connection", "close");
    }
    if (e.code() == ErrorCode.METHOD_NOT_ALLOWED) {
      exchange.getResponseHeaders().set("Allow", String.valueOf(e.context().get("allow")));
    }
    try {
      Responses.error(exchange, e);
      return null;
    } catch (IOException io) {
      return io;
    }
  }

  /** The most of a refused request's body that is read (and dropped) before its connection is closed. */
  static final long DRAIN_LIMIT = 16L * 1024 * 1024;

  /**
   * Reads what is left of a refused request's body without keeping it; true if it reached the end.
   * A client still sending when the answer comes and the connection closes gets a reset, which can
   * overtake the answer (a 413 lost to "connection reset"), so a body of up to {@link #DRAIN_LIMIT}
   * bytes is read to its end: it costs no memory, and the request deadline bounds the time. A larger
   * declared body is not read at all (its connection is closed).
   */
  static boolean drainRequestBody(HttpExchange exchange) {
    String declared = exchange.getRequestHeaders().getFirst("Content-Length");
    try {
      if (declared != null && Long.parseLong(declared.trim()) > DRAIN_LIMIT) {
        return false;
      }
    } catch (NumberFormatException e) {
      return false;
    }
    try {
      InputStream in = exchange.getRequestBody();
      long left = DRAIN_LIMIT;
      byte[] skip = new byte[8192];
      while (left > 0) {
        int n = in.read(skip, 0, (int) Math.min(skip.length, left));
        if (n < 0) {
          return true;
        }
        left -= n;
      }
      return in.read() < 0;
    } catch (IOException e) {
      return false;
    }
  }

  /**
   * A process id taken from a path segment: percent-decoded ({@code +} stays a plus).
   *
   * @throws AgentException VALIDATION_FAILED (field {@code processId}) for malformed percent-encoding
   */
  public static String decode(String segment) {
    return decode(segment, "processId");
  }

  /**
   * An id taken from a path segment, percent-decoded ({@code +} stays a plus).
   *
   * @throws AgentException VALIDATION_FAILED naming {@code field} for malformed percent-encoding
   */
  public static String decode(String segment, String field) {
    try {
      return java.net.URLDecoder.decode(segment.replace("+", "%2B"), StandardCharsets.UTF_8);
    } catch (IllegalArgumentException e) {
      throw AgentException.invalid(field, "malformed " + (field.equals("processId") ? "process" : "checkpoint")
          + " id in path");
    }
  }

  static AgentException notFound(String path) {
    String shown = path.length() > 200 ? path.substring(0, 200) + "..." : path;
    return new AgentException(ErrorCode.NOT_FOUND, "no such endpoint: " + shown, Map.of("path", shown));
  }

  /** Throws 405 unless {@code method} is the first allowed one (further ones are only listed). */
  static void allow(String method, String expected, String... alsoAllowed) {
    if (method.equals(expected)) {
      return;
    }
    StringBuilder allowed = new StringBuilder(expected);
    for (String m : alsoAllowed) {
      allowed.append(", ").append(m);
    }
    throw new AgentException(ErrorCode.METHOD_NOT_ALLOWED,
        "method " + method + " is not allowed here; use " + allowed, Map.of("allow", allowed.toString()));
  }
}
