package dev.sandboxsdk.agent.egress;

import java.time.Duration;
import java.util.Objects;

/**
 * The proxy's bounds.
 *
 * @param maxConnections connections open at once (handshakes and tunnels); one more is answered
 *     {@code 503} and closed
 * @param handshakeTimeout how long a client has to send its whole request head, and a TLS client
 *     its whole ClientHello once its first byte arrived
 * @param idleTimeout how long a tunnel or a forwarded request may carry no byte either way
 * @param connectTimeout how long connecting to the destination may take
 * @param maxHeaderBytes the request line and headers together, at most ({@code 431} beyond)
 */
public record EgressLimits(int maxConnections, Duration handshakeTimeout, Duration idleTimeout,
    Duration connectTimeout, int maxHeaderBytes) {

  public EgressLimits {
    Objects.requireNonNull(handshakeTimeout, "handshakeTimeout");
    Objects.requireNonNull(idleTimeout, "idleTimeout");
    Objects.requireNonNull(connectTimeout, "connectTimeout");
    if (maxConnections < 1 || maxHeaderBytes < 256) {
      throw new IllegalArgumentException("maxConnections < 1 or maxHeaderBytes < 256");
    }
    if (handshakeTimeout.isNegative() || handshakeTimeout.isZero() || idleTimeout.isNegative()
        || idleTimeout.isZero() || connectTimeout.isNegative() || connectTimeout.isZero()) {
      throw new IllegalArgumentException("timeouts must be positive");
    }
  }

  /** 256 connections, a 10 s handshake, 5 min idle, a 10 s connect, 16 KiB of head. */
  public static EgressLimits defaults() {
    return new EgressLimits(256, Duration.ofSeconds(10), Duration.ofMinutes(5), Duration.ofSeconds(10), 16 * 1024);
  }

  public EgressLimits withMaxConnections(int max) {
    return new EgressLimits(max, handshakeTimeout, idleTimeout, connectTimeout, maxHeaderBytes);
  }

  public EgressLimits withHandshakeTimeout(Duration timeout) {
    return new EgressLimits(maxConnections, timeout, idleTimeout, connectTimeout, maxHeaderBytes);
  }

  public EgressLimits withIdleTimeout(Duration timeout) {
    return new EgressLimits(maxConnections, handshakeTimeout, timeout, connectTimeout, maxHeaderBytes);
  }

  public EgressLimits withConnectTimeout(Duration timeout) {
    return new EgressLimits(maxConnections, handshakeTimeout, idleTimeout, timeout, maxHeaderBytes);
  }

  public EgressLimits withMaxHeaderBytes(int max) {
    return new EgressLimits(maxConnections, handshakeTimeout, idleTimeout, connectTimeout, max);
  }
}
