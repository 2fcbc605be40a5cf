package dev.sandboxsdk.mcp.internal;

import com.sun.net.httpserver.HttpExchange;
import java.io.IOException;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The HTTP transport's sessions by {@code Mcp-Session-Id}: opening them (with room made by
 * evicting the least recently used idle one), finding the one a request names, and ending them
 * (on DELETE, after an hour idle, or at shutdown). Thread-safe.
 */
final class HttpSessions {
  /** Logs as {@link HttpTransport}, as before the split: operators filter the log by its name. */
  private static final Logger log = LoggerFactory.getLogger(HttpTransport.class);
  static final int MAX_SESSIONS = 1_000;
  /**
   * Sessions one client may hold; a client is a remote address (the token cannot tell clients
   * apart: every client of a server shares it). Local clients all come from 127.0.0.1, so locally
   * this bounds them together, and eviction is what keeps the server open to a new client.
   */
  static final int MAX_SESSIONS_PER_CLIENT = 100;
  static final long SESSION_IDLE_NANOS = TimeUnit.HOURS.toNanos(1);

  /** A session, its event streams, and which of them is its GET stream. */
  static final class HttpSession {
    final Session session;
    final String client;
    final ResumableStream.Registry streams;
    final AtomicReference<ResumableStream> getStream = new AtomicReference<>();

    HttpSession(Session session, String client, ResumableStream.Registry streams) {
      this.session = session;
      this.client = client;
      this.streams = streams;
    }

    /**
     * Whether its streams start with a priming event (an id and empty data, and the retry field):
     * MCP 2025-11-25 asks for it, and older clients may fail on an event without data.
     */
    boolean primes() {
      String v = session.protocolVersion();
      return v != null && v.compareTo("2025-11-25") >= 0;
    }

    /**
     * Whether this session may be evicted: never while a call runs; with an open GET stream only
     * if {@code evenWithGetStream} (the second choice: a client could otherwise hold one stream per
     * session and lock every other client out).
     */
    boolean evictable(boolean evenWithGetStream) {
      ResumableStream s = getStream.get();
      return session.idleNanos() > 0 && (evenWithGetStream || s == null || !s.hasOpenConnection());
    }
  }

  private final McpServer server;
  private final Map<String, HttpSession> sessions = new ConcurrentHashMap<>();
  private final ResumableStream.Budget replayBudget = new ResumableStream.Budget();
  private final SecureRandom random = new SecureRandom();

  HttpSessions(McpServer server) {
    this.server = server;
  }

  /** A new session of {@code client}, with a random id and a random tag for its event ids; not yet added. */
  HttpSession create(String client) {
    byte[] idBytes = new byte[16];
    random.nextBytes(idBytes);
    String id = HexFormat.of().formatHex(idBytes);
    byte[] tagBytes = new byte[4];
    random.nextBytes(tagBytes);
    return new HttpSession(server.newSession(id), client,
        new ResumableStream.Registry(HexFormat.of().formatHex(tagBytes), replayBudget));
  }

  /** Adds {@code hs}, making room for it first; false if there is none (every candidate is busy). */
  boolean add(HttpSession hs) {
    synchronized (sessions) {
      if (!makeRoom(hs.client)) {
        return false;
      }
      sessions.put(hs.session.id(), hs);
      return true;
    }
  }

  /** Forgets {@code hs} without ending it (an initialize that failed). */
  void remove(HttpSession hs) {
    sessions.remove(hs.session.id(), hs);
  }

  /**
   * Makes room for one more session of {@code client}: at its {@link #MAX_SESSIONS_PER_CLIENT},
   * or at {@link #MAX_SESSIONS} overall, the least recently used idle session (of that client,
   * else of anyone) is ended. False if every candidate is busy. Callers hold {@code sessions}.
   */
  private boolean makeRoom(String client) {
    long mine = sessions.values().stream().filter(s -> s.client.equals(client)).count();
    if (mine >= MAX_SESSIONS_PER_CLIENT && !evictOldest(client)) {
      return false;
    }
    return sessions.size() < MAX_SESSIONS || evictOldest(null);
  }

  /**
   * Ends the least recently used idle session (of {@code client}, or of anyone if null): one
   * without a GET stream if there is one, else one whose only activity is its GET stream. False if
   * every candidate has a call running.
   */
  private boolean evictOldest(String client) {
    return evictOldest(client, false) || evictOldest(client, true);
  }

  private boolean evictOldest(String client, boolean evenWithGetStream) {
    HttpSession oldest = null;
    long oldestIdle = 0;
    for (HttpSession s : sessions.values()) {
      if ((client == null || s.client.equals(client)) && s.evictable(evenWithGetStream)) {
        long idle = s.session.idleNanos();
        if (idle > oldestIdle) {
          oldest = s;
          oldestIdle = idle;
        }
      }
    }
    if (oldest == null) {
      return false;
    }
    log.info("session {} of {} evicted: idle for {} s, the least recently used, to make room for a new one",
        oldest.session.id(), oldest.client, TimeUnit.NANOSECONDS.toSeconds(oldestIdle));
    end(oldest);
    return true;
  }

  /**
   * The session a request names, or null after answering 400 (none given, or an unsupported
   * MCP-Protocol-Version) or 404 (unknown or ended).
   */
  HttpSession find(HttpExchange ex, String id) throws IOException {
    if (id == null) {
      HttpExchanges.rpcError(ex, 400, "Mcp-Session-Id header required: send initialize first to open a session");
      return null;
    }
    HttpSession hs = sessions.get(id);
    if (hs == null) {
      HttpExchanges.rpcError(ex, 404, "unknown or ended session: send initialize to open a new one");
      return null;
    }
    return HttpExchanges.versionAccepted(ex) ? hs : null;
  }

  void end(HttpSession hs) {
    sessions.remove(hs.session.id(), hs);
    hs.session.close();
    hs.getStream.set(null);
    hs.streams.close(); // frees the replay buffers and closes every stream's connection
    log.info("session {} ended", hs.session.id());
  }

  /** Ends the sessions idle for longer than {@link #SESSION_IDLE_NANOS}. */
  void expire() {
    for (HttpSession hs : sessions.values()) {
      if (hs.session.idleNanos() > SESSION_IDLE_NANOS) {
        log.info("session {} idle for an hour; ending it", hs.session.id());
        end(hs);
      }
    }
  }

  /** Ends every session: cancels their calls; nothing here waits for a client. */
  void closeAll() {
    sessions.values().forEach(this::end);
  }
}
