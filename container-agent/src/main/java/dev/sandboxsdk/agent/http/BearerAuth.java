package dev.sandboxsdk.agent.http;

import com.sun.net.httpserver.HttpExchange;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/** The agent's bearer token check: SHA-256 digests compared in constant time. Immutable. */
final class BearerAuth {
  /** The token's digest, or null when the agent runs without auth. */
  private final byte[] tokenDigest;

  BearerAuth(String token) {
    this.tokenDigest = token == null ? null : sha256(token.getBytes(StandardCharsets.UTF_8));
  }

  /** Whether requests must carry a token. */
  boolean required() {
    return tokenDigest != null;
  }

  /** Whether the request carries the agent's bearer token (always true without a token). */
  boolean valid(HttpExchange exchange) {
    try {
      check(exchange);
      return true;
    } catch (AgentException e) {
      return false;
    }
  }

  /** Throws UNAUTHORIZED unless the request carries the token (nothing to check without one). */
  void check(HttpExchange exchange) {
    if (tokenDigest == null) {
      return;
    }
    String header = exchange.getRequestHeaders().getFirst("Authorization");
    byte[] presented = null;
    if (header != null && header.regionMatches(true, 0, "Bearer ", 0, 7)) {
      int start = 7;
      while (start < header.length() && header.charAt(start) == ' ') {
        start++; // RFC 6750 allows several spaces after the scheme, but nothing after the token
      }
      // The JDK hands over each header byte as one char: these are the exact bytes sent.
      presented = header.substring(start).getBytes(StandardCharsets.ISO_8859_1);
    }
    // Compare fixed-length digests in constant time, so neither content nor length leaks.
    if (presented == null || !MessageDigest.isEqual(tokenDigest, sha256(presented))) {
      throw new AgentException(ErrorCode.UNAUTHORIZED, presented == null
          ? "missing bearer token: send 'Authorization: Bearer <token>'"
          : "invalid bearer token");
    }
  }

  private static byte[] sha256(byte[] bytes) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(bytes);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required by every JDK", e);
    }
  }
}
