package dev.sandboxsdk.agent.http;

import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.ObjectWriter;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import dev.sandboxsdk.agent.text.ByteBuf;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Writes server-sent events: one {@code data: <json>} line and a blank line per event, plus
 * keep-alive comments on idle connections. Writes block when the client reads slowly, which is how
 * a stream paces its producer. Thread-safe.
 */
public final class SseWriter {
  private static final byte[] DATA = "data: ".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] END = "\n\n".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] KEEP_ALIVE = ": keep-alive\n\n".getBytes(StandardCharsets.US_ASCII);
  private static final ObjectWriter ASCII = Json.MAPPER.writer().with(JsonWriteFeature.ESCAPE_NON_ASCII);

  private final OutputStream out;
  private final boolean ascii;
  private final ReentrantLock lock = new ReentrantLock();
  private volatile long lastWriteNanos = System.nanoTime();
  private volatile boolean broken;
  private boolean closed;

  private SseWriter(OutputStream out, boolean ascii) {
    this.out = out;
    this.ascii = ascii;
  }

  /** Sends the 200 headers of an event stream; from here on errors go into the stream, as events. */
  public static SseWriter open(HttpExchange exchange) throws IOException {
    return open(exchange, false);
  }

  /**
   * As {@link #open(HttpExchange)}, for a stream whose events built here ({@link #send(ObjectNode)},
   * {@link #send(Object)}) are pure ASCII: characters beyond it travel as JSON unicode escapes. For
   * a client that decodes each network read as UTF-8 on its own (Cloudflare's interpreter client),
   * which garbles a character split between two reads; any JSON parser reads the same text.
   */
  public static SseWriter openAscii(HttpExchange exchange) throws IOException {
    return open(exchange, true);
  }

  private static SseWriter open(HttpExchange exchange, boolean ascii) throws IOException {
    var headers = exchange.getResponseHeaders();
    headers.set("Content-Type", "text/event-stream; charset=utf-8");
    headers.set("Cache-Control", "no-cache");
    headers.set("X-Accel-Buffering", "no"); // tell nginx-style proxies not to buffer the stream
    exchange.sendResponseHeaders(200, 0);
    return new SseWriter(exchange.getResponseBody(), ascii);
  }

  /**
   * Sends one event whose JSON text is {@code json}, and flushes it.
   *
   * @throws IOException if the stream was closed or the client is gone (then every later send fails too)
   */
  public void send(ByteBuf json) throws IOException {
    lock.lock();
    try {
      ensureOpen();
      try {
        out.write(DATA);
        json.writeTo(out);
        out.write(END);
        out.flush();
      } catch (IOException e) {
        broken = true;
        throw e;
      }
      lastWriteNanos = System.nanoTime();
    } finally {
      lock.unlock();
    }
  }

  /** Sends one event built as JSON; adds its {@code timestamp}. Fails as {@link #send(ByteBuf)}. */
  public void send(ObjectNode event) throws IOException {
    event.put("timestamp", Instant.now().toString());
    ByteBuf buf = new ByteBuf(256);
    buf.append(ascii ? ASCII.writeValueAsBytes(event) : Json.MAPPER.writeValueAsBytes(event));
    send(buf);
  }

  /** Sends one event, a wire record; adds its {@code timestamp} after the record's fields. Fails as {@link #send(ByteBuf)}. */
  public void send(Object event) throws IOException {
    if (ascii) { // through a tree, for the escaping writer; the timestamp still comes last
      send((ObjectNode) Json.MAPPER.valueToTree(event));
      return;
    }
    ByteBuf buf = new ByteBuf(256);
    buf.append(Responses.stamped(event, false));
    send(buf);
  }

  /** How long until a keep-alive is due, so waits end when one must be written. */
  public long nanosUntilKeepAlive(long idleNanos) {
    return Math.max(1_000_000, lastWriteNanos + idleNanos - System.nanoTime());
  }

  /** Reports, best effort, that the agent itself failed while relaying a stream; details stay in its log. */
  public void sendInternalError(RuntimeException cause) {
    AgentMessages.ErrorEvent error;
    if (cause instanceof dev.sandboxsdk.agent.AgentException known) { // e.g. no thread to read the output
      error = new AgentMessages.ErrorEvent(known.code().name(), known.getMessage());
    } else {
      error = new AgentMessages.ErrorEvent(dev.sandboxsdk.agent.ErrorCode.INTERNAL_ERROR.name(),
          "the agent failed while streaming: " + cause.getClass().getSimpleName());
    }
    sendQuietly(error);
  }

  /**
   * Sends one event, best effort: for the last word of a stream that is failing anyway, where a
   * client that has hung up as well is no further error. Takes what {@link #send(Object)} and
   * {@link #send(ObjectNode)} take.
   */
  public void sendQuietly(Object event) {
    try {
      if (event instanceof ObjectNode node) {
        send(node);
      } else {
        send(event);
      }
    } catch (IOException ignored) {
      // the client is gone as well
    }
  }

  /**
   * Writes a keep-alive comment if nothing was written for {@code idleNanos} and no other write is
   * in progress (a writer blocked on a slow client proves the connection is alive anyway).
   *
   * @return false once the connection is known to be broken
   */
  public boolean keepAliveIfIdle(long idleNanos) {
    if (broken) {
      return false;
    }
    if (System.nanoTime() - lastWriteNanos < idleNanos || !lock.tryLock()) {
      return true;
    }
    try {
      if (closed) {
        return true;
      }
      out.write(KEEP_ALIVE);
      out.flush();
      lastWriteNanos = System.nanoTime();
      return true;
    } catch (IOException e) {
      broken = true;
      return false;
    } finally {
      lock.unlock();
    }
  }

  /** Ends the stream; later sends fail, so a lingering producer turns into a discard. Safe to call twice. */
  public void close() {
    lock.lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
      try {
        out.close();
      } catch (IOException e) {
        broken = true;
      }
    } finally {
      lock.unlock();
    }
  }

  private void ensureOpen() throws IOException {
    if (closed) {
      throw new IOException("event stream already ended");
    }
    if (broken) {
      throw new IOException("client connection is broken");
    }
  }
}
