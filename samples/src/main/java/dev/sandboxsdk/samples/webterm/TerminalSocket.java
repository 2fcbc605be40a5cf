package dev.sandboxsdk.samples.webterm;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sandboxsdk.ProcessNotFoundException;
import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxInvalidRequestException;
import dev.sandboxsdk.Terminal;
import dev.sandboxsdk.TerminalOptions;
import dev.sandboxsdk.TerminalOutput;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Flow;
import org.eclipse.jetty.util.Fields;
import org.eclipse.jetty.websocket.api.Callback;
import org.eclipse.jetty.websocket.api.Session;
import org.eclipse.jetty.websocket.api.StatusCode;

/**
 * One browser WebSocket bridged to one {@link Terminal}. The query string says which:
 * {@code ?cols=120&rows=30} opens a new terminal of that size, {@code ?id=...&offset=N} attaches
 * to a running one and sends its output from byte {@code N} (0 on a fresh page: the whole
 * retained output is replayed).
 *
 * <p>Page to terminal: binary frames are input bytes; text frames are JSON,
 * {@code {"type":"resize","cols":..,"rows":..}}, {@code {"type":"kill"}} or {@code {"type":"ping"}}.
 * Terminal to page: binary frames are output bytes; before the first one, and wherever output
 * was dropped from the retained window, {@code {"type":"offset","offset":N}} says where they
 * start, so the page can count the bytes it has and resume there. When the terminal's output
 * ends: {@code {"type":"exit","exitCode":N}} and a normal close. A bad request or message gets
 * {@code {"type":"error","message":".."}} and a close with a 4xxx or 100x code.
 *
 * <p>Backpressure: the output publisher is asked for one chunk at a time, the next only when
 * the WebSocket has sent the last one, so a slow browser holds at most one chunk here and the
 * rest waits in the sandbox's retained window. Input is read one message at a time too: the
 * next frame is read only after the last one was written to the terminal.
 *
 * <p>Closing the socket detaches: the terminal goes on running and can be attached to again.
 *
 * <p>Public because Jetty calls its listener methods reflectively.
 */
public final class TerminalSocket implements Session.Listener {
  /** Close codes the page acts on (4000-4999 are the application's own). */
  static final int BAD_REQUEST = 4400;
  static final int NO_SUCH_TERMINAL = 4404;

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int MAX_SIZE = TerminalOptions.MAX_SIZE;
  private static final int MAX_ID_LENGTH = 256;

  private final Sandbox sandbox;
  private final String problem;
  private final String id;
  private final long offset;
  private final int cols;
  private final int rows;

  private volatile Session session;
  private volatile Terminal terminal;
  private volatile Flow.Subscription output;
  private volatile boolean closed;

  private TerminalSocket(Sandbox sandbox, String problem, String id, long offset, int cols, int rows) {
    this.sandbox = sandbox;
    this.problem = problem;
    this.id = id;
    this.offset = offset;
    this.cols = cols;
    this.rows = rows;
  }

  /** The socket for an upgrade request; a bad query is answered once the socket is open (a browser sees no HTTP error). */
  static TerminalSocket forRequest(Sandbox sandbox, Fields query) {
    try {
      String id = query.getValue("id");
      if (id != null && (id.isEmpty() || id.length() > MAX_ID_LENGTH)) {
        throw new IllegalArgumentException("'id' must be 1 to " + MAX_ID_LENGTH + " characters");
      }
      long offset = number(query, "offset", 0, 0, Long.MAX_VALUE);
      int cols = (int) number(query, "cols", 80, 1, MAX_SIZE);
      int rows = (int) number(query, "rows", 24, 1, MAX_SIZE);
      return new TerminalSocket(sandbox, null, id, offset, cols, rows);
    } catch (IllegalArgumentException e) {
      return new TerminalSocket(sandbox, e.getMessage(), null, 0, 0, 0);
    }
  }

  @Override
  public void onWebSocketOpen(Session session) {
    this.session = session;
    if (problem != null) {
      refuse(BAD_REQUEST, problem);
      return;
    }
    try {
      terminal = id == null
          ? sandbox.terminals().open(TerminalOptions.builder().cols(cols).rows(rows).build())
          : sandbox.terminals().attach(id);
    } catch (ProcessNotFoundException e) {
      refuse(NO_SUCH_TERMINAL, "no terminal '" + id + "' in this sandbox (it ended and was removed, or never was)");
      return;
    } catch (IllegalArgumentException | SandboxInvalidRequestException e) {
      refuse(BAD_REQUEST, e.getMessage()); // e.g. an id with a slash, or a process that is not a terminal
      return;
    } catch (SandboxException e) {
      refuse(StatusCode.SERVER_ERROR, (id == null ? "opening a terminal" : "attaching to '" + id + "'")
          + " failed: " + e.getMessage());
      return;
    }
    send(Map.of("type", "attached", "id", terminal.id()));
    terminal.output(offset).subscribe(new Output());
    session.demand();
  }

  @Override
  public void onWebSocketBinary(ByteBuffer payload, Callback callback) {
    byte[] bytes = new byte[payload.remaining()];
    payload.get(bytes);
    callback.succeed();
    try {
      terminal.write(bytes);
    } catch (SandboxException e) {
      // The terminal has ended (its "exit" message is on its way), or its program read nothing
      // for 10 s and the input queue stayed full: these keystrokes are lost, so say so.
      send(Map.of("type", "error", "message", "input not delivered: " + e.getMessage()));
    }
    session.demand();
  }

  @Override
  public void onWebSocketText(String text) {
    JsonNode message;
    try {
      message = JSON.readTree(text);
    } catch (JsonProcessingException e) {
      refuse(StatusCode.BAD_PAYLOAD, "a control message is a JSON object such as {\"type\":\"resize\",\"cols\":80,\"rows\":24}");
      return;
    }
    String type = message == null ? "" : message.path("type").asText("");
    try {
      switch (type) {
        case "resize" -> {
          JsonNode c = message.path("cols");
          JsonNode r = message.path("rows");
          if (!c.canConvertToInt() || !r.canConvertToInt() || !c.isIntegralNumber() || !r.isIntegralNumber()
              || c.intValue() < 1 || c.intValue() > MAX_SIZE || r.intValue() < 1 || r.intValue() > MAX_SIZE) {
            refuse(StatusCode.POLICY_VIOLATION, "resize needs whole numbers 'cols' and 'rows' from 1 to " + MAX_SIZE);
            return;
          }
          terminal.resize(c.intValue(), r.intValue());
        }
        case "kill" -> terminal.kill();
        case "ping" -> { } // keeps an idle connection open
        default -> {
          refuse(StatusCode.POLICY_VIOLATION, "unknown control message; the types are resize, kill and ping");
          return;
        }
      }
    } catch (SandboxException e) {
      // The terminal has ended; the page learns it from the "exit" message.
    }
    session.demand();
  }

  @Override
  public void onWebSocketClose(int statusCode, String reason, Callback callback) {
    detach();
    callback.succeed();
  }

  @Override
  public void onWebSocketError(Throwable cause) {
    detach(); // e.g. a message above the size limit: Jetty closes the socket with 1009 and the reason
  }

  /** Stops reading the terminal's output; the terminal itself runs on. */
  private void detach() {
    closed = true;
    Flow.Subscription s = output;
    if (s != null) {
      s.cancel();
    }
  }

  private void send(Map<String, Object> message) {
    try {
      session.sendText(JSON.writeValueAsString(message), Callback.NOOP);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Tells the page what went wrong, then closes with that code and a short reason. */
  private void fail(int code, String message) {
    send(Map.of("type", "error", "message", message));
    session.close(code, closeReason(message), Callback.NOOP);
    detach();
  }

  /**
   * {@link #fail} from a listener method, which has no read pending: asks for one more frame so
   * that Jetty reads the page's close reply and lets the connection go now, not at the idle timeout.
   */
  private void refuse(int code, String message) {
    fail(code, message);
    session.demand();
  }

  /** A close frame's reason has at most 123 bytes of UTF-8. */
  private static String closeReason(String message) {
    String reason = message;
    while (reason.getBytes(StandardCharsets.UTF_8).length > 123) {
      reason = reason.substring(0, reason.length() - 2) + "…";
    }
    return reason;
  }

  private static long number(Fields query, String name, long absent, long min, long max) {
    String value = query.getValue(name);
    if (value == null) {
      return absent;
    }
    try {
      long n = Long.parseLong(value);
      if (n >= min && n <= max) {
        return n;
      }
    } catch (NumberFormatException e) {
      // falls through to the message below
    }
    throw new IllegalArgumentException("'" + name + "' must be a whole number from " + min + " to " + max);
  }

  /** Sends the terminal's output, one chunk in flight at a time. */
  private final class Output implements Flow.Subscriber<TerminalOutput> {
    private Flow.Subscription subscription;
    private long next = -1;

    @Override
    public void onSubscribe(Flow.Subscription s) {
      subscription = s;
      output = s;
      if (closed) {
        s.cancel();
      } else {
        s.request(1);
      }
    }

    @Override
    public void onNext(TerminalOutput chunk) {
      if (chunk.offset() != next) {
        send(Map.of("type", "offset", "offset", chunk.offset()));
      }
      next = chunk.nextOffset();
      session.sendBinary(ByteBuffer.wrap(chunk.bytes()),
          Callback.from(() -> subscription.request(1), failure -> subscription.cancel()));
    }

    @Override
    public void onError(Throwable error) {
      if (!closed) {
        fail(StatusCode.SERVER_ERROR, "reading the terminal's output failed: " + error.getMessage());
      }
    }

    @Override
    public void onComplete() {
      if (closed) {
        return;
      }
      Integer exitCode = null;
      try {
        exitCode = terminal.waitForExit(Duration.ofSeconds(10)).exitCode();
      } catch (SandboxException e) {
        // the output ended but the exit is not known (yet): say so with a null exit code
      }
      Map<String, Object> exit = new HashMap<>(); // Map.of takes no null
      exit.put("type", "exit");
      exit.put("exitCode", exitCode);
      send(exit);
      session.close(StatusCode.NORMAL, "the terminal ended", Callback.NOOP);
    }
  }
}
