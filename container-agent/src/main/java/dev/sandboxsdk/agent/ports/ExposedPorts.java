package dev.sandboxsdk.agent.ports;

import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The ports exposed through the proxy, each with its preview capability: a random token (256
 * bits) that lets a browser, which cannot send the agent's bearer token, reach that one port.
 * Unexposing drops the token, so every URL and cookie made from it stops working at once.
 * Tokens are kept as SHA-256 digests for the comparison (constant time, length-independent) and
 * never logged. Thread-safe.
 */
final class ExposedPorts {
  /** A name is a label for people: printable, without control characters, at most this long. */
  static final int MAX_NAME_LENGTH = 128;
  /**
   * Ports exposed at once. Without a cap a client could expose all 65,535 ports, and every list
   * of them was a 21 MB answer: a few lists at once ran a 256 MiB agent out of heap.
   */
  static final int MAX_EXPOSED = 256;
  private static final SecureRandom RANDOM = new SecureRandom();

  /** One exposed port. {@code toString} leaves the token out. */
  record Exposure(int port, String name, String token, byte[] tokenDigest, Instant exposedAt) {
    /** Whether {@code presented} is this exposure's token, compared in constant time. */
    boolean accepts(String presented) {
      return presented != null && MessageDigest.isEqual(tokenDigest, sha256(presented));
    }

    @Override
    public String toString() {
      return "Exposure[port=" + port + ", name=" + name + ", exposedAt=" + exposedAt + "]";
    }
  }

  private final Map<Integer, Exposure> byPort = new ConcurrentHashMap<>();

  /**
   * Exposes {@code port} under {@code name} (may be null).
   *
   * @throws AgentException PORT_ALREADY_EXPOSED if it is exposed already, TOO_MANY_EXPOSED_PORTS
   *     if {@value #MAX_EXPOSED} ports are
   */
  synchronized Exposure expose(int port, String name) {
    byte[] raw = new byte[32];
    RANDOM.nextBytes(raw);
    String token = Base64.getUrlEncoder().withoutPadding().encodeToString(raw);
    Exposure e = new Exposure(port, name, token, sha256(token), Instant.now());
    Exposure before = byPort.get(port);
    if (before == null && byPort.size() >= MAX_EXPOSED) {
      throw new AgentException(ErrorCode.TOO_MANY_EXPOSED_PORTS, MAX_EXPOSED + " ports are exposed already;"
          + " unexpose one first (DELETE /api/exposed-ports/{port})", Map.of("limit", MAX_EXPOSED));
    }
    if (before != null) {
      Map<String, Object> context = new LinkedHashMap<>();
      context.put("port", port);
      if (before.name() != null) {
        context.put("portName", before.name());
      }
      throw new AgentException(ErrorCode.PORT_ALREADY_EXPOSED, "port " + port
          + (before.name() == null ? "" : " (" + before.name() + ")") + " is already exposed", context);
    }
    byPort.put(port, e);
    return e;
  }

  /**
   * Unexposes {@code port}: its proxy route, preview URL and cookies stop working.
   *
   * @throws AgentException PORT_NOT_EXPOSED if it is not exposed
   */
  Exposure unexpose(int port) {
    Exposure e = byPort.remove(port);
    if (e == null) {
      throw notExposed(port);
    }
    return e;
  }

  /** The exposure of {@code port}, or null. */
  Exposure get(int port) {
    return byPort.get(port);
  }

  /** Every exposure, by port. */
  List<Exposure> list() {
    List<Exposure> all = new ArrayList<>(byPort.values());
    all.sort(Comparator.comparingInt(Exposure::port));
    return all;
  }

  static AgentException notExposed(int port) {
    return new AgentException(ErrorCode.PORT_NOT_EXPOSED, "port " + port + " is not exposed"
        + " (expose it first: POST /api/expose-port)", Map.of("port", port));
  }

  static byte[] sha256(String s) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.ISO_8859_1));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required by every JDK", e);
    }
  }
}
