package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * MCP over stdio: one JSON-RPC message per line in, one per line out. Only messages are written to
 * the output stream; logs go to stderr. {@link #run()} returns when the input ends.
 */
public final class StdioTransport {
  private static final Logger log = LoggerFactory.getLogger(StdioTransport.class);
  /** Longest line accepted; a longer one is answered with a parse error and skipped. */
  static final int MAX_LINE_CHARS = 8 * 1024 * 1024;

  private final McpServer server;
  private final Reader in;
  private final OutputStream out;
  private final Session session;
  private boolean broken; // guarded by out

  public StdioTransport(McpServer server, InputStream in, OutputStream out) {
    this.server = server;
    this.in = new InputStreamReader(in, StandardCharsets.UTF_8);
    this.out = out;
    this.session = server.newSession(null);
  }

  /** Reads messages until end of input, then cancels whatever is still running. */
  public void run() throws IOException {
    Outbound sink = this::write;
    StringBuilder line = new StringBuilder();
    boolean overlong = false;
    char[] buf = new char[8192];
    for (int n; (n = in.read(buf)) >= 0; ) {
      for (int i = 0; i < n; i++) {
        char c = buf[i];
        if (c != '\n') {
          if (line.length() < MAX_LINE_CHARS) {
            line.append(c);
          } else {
            overlong = true;
          }
          continue;
        }
        if (overlong) {
          write(JsonRpc.error(null, JsonRpc.PARSE_ERROR, "message longer than " + MAX_LINE_CHARS + " characters"));
        } else {
          dispatch(line.toString(), sink);
        }
        line.setLength(0);
        overlong = false;
      }
    }
    if (!line.toString().isBlank()) {
      dispatch(line.toString(), sink);
    }
    log.info("stdin closed; stopping");
    session.close();
  }

  private void dispatch(String text, Outbound sink) {
    if (text.isBlank()) {
      return;
    }
    JsonNode message;
    try {
      message = Json.parse(text);
    } catch (IllegalArgumentException e) {
      write(JsonRpc.error(null, JsonRpc.PARSE_ERROR, "not valid JSON: " + e.getMessage()));
      return;
    }
    if (message.isArray()) {
      write(JsonRpc.error(null, JsonRpc.INVALID_REQUEST, "JSON-RPC batches are not supported; send one message per line"));
      return;
    }
    server.handle(session, message, sink);
  }

  private void write(ObjectNode message) {
    byte[] bytes = (Json.write(message) + "\n").getBytes(StandardCharsets.UTF_8);
    synchronized (out) {
      if (broken) {
        return;
      }
      try {
        out.write(bytes);
        out.flush();
      } catch (IOException e) {
        broken = true; // the client is gone; running calls end when stdin closes
        log.warn("cannot write to stdout: {}", e.toString());
      }
    }
  }
}
