package dev.sandboxsdk.agent.files;

import static dev.sandboxsdk.agent.fs.WorkspaceFiles.openForReading;

import com.sun.net.httpserver.HttpExchange;
import dev.sandboxsdk.agent.AgentConfig;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.fs.Anchor;
import dev.sandboxsdk.agent.fs.PathErrors;
import dev.sandboxsdk.agent.fs.Workspace;
import dev.sandboxsdk.agent.http.Json;
import dev.sandboxsdk.agent.http.Query;
import dev.sandboxsdk.agent.http.Responses;
import dev.sandboxsdk.agent.http.Routes;
import dev.sandboxsdk.agent.http.SseWriter;
import dev.sandboxsdk.agent.process.OutputBudget;
import dev.sandboxsdk.agent.process.ProcessManager;
import dev.sandboxsdk.agent.text.ByteBuf;
import dev.sandboxsdk.agent.text.Utf8Sanitizer;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.ReadableByteChannel;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Set;

/**
 * The file routes that stream: Cloudflare's {@code /api/read/stream} (SSE chunks) and our {@code
 * GET/PUT /api/files/raw}, in bounded memory whatever the file's size. Paths are resolved as the
 * other file routes resolve them ({@link Workspace}).
 */
public final class FileTransferRoutes {
  /** Bytes per {@code chunk} event: Cloudflare's size, a multiple of 3 so base64 chunks join cleanly. */
  static final int STREAM_CHUNK = 65535;
  /** Buffer of the raw routes. */
  private static final int RAW_BUFFER = 64 * 1024;

  private final AgentConfig config;
  private final OutputBudget budget;
  private final Workspace workspace;
  private final FileOperations operations;

  public FileTransferRoutes(ProcessManager processes, Workspace workspace) {
    this.config = processes.config();
    this.budget = processes.outputBudget();
    this.workspace = workspace;
    this.operations = new FileOperations(processes.outputBudget(), workspace);
  }

  /** Registers the streamed read and the raw download and upload, as the command user. */
  public void register(Routes routes) {
    routes.on("POST", "/api/read/stream", Routes.asUser(workspace, this::readStream))
        .on("GET", "/api/files/raw", Routes.asUser(workspace, this::download))
        .on("PUT", "/api/files/raw", Routes.asUser(workspace, this::upload));
  }

  void readStream(HttpExchange exchange) throws IOException {
    Query.none(exchange);
    Json body = Json.read(exchange, config.maxBodyBytes(), budget).allowOnly(Set.of("path", "sessionId"));
    String raw = body.string("path");
    try (Anchor a = workspace.resolve("path", raw, true, false); Anchor file = a.hold("path", raw);
        FileChannel ch = openForReading(file, raw)) {
      long size = ch.size();
      ByteBuffer buf = ByteBuffer.allocate(STREAM_CHUNK);
      try {
        fill(ch, buf); // the first chunk decides text or binary
      } catch (IOException e) {
        throw PathErrors.failure(e, "path", raw);
      }
      String mime = FileTypes.mimeType(a.name(), buf.array(), buf.position());
      int sample = Math.min(buf.position(), FileTypes.SNIFF_BYTES);
      boolean binary = !(FileTypes.isTextMime(mime) && FileTypes.validUtf8Prefix(buf.array(), sample, sample == size));
      SseWriter sse = SseWriter.open(exchange);
      try {
        sse.send(new FileMessages.MetadataEvent(mime, size, binary, binary ? "base64" : "utf-8"));
        Utf8Sanitizer utf8 = new Utf8Sanitizer();
        ByteBuf text = new ByteBuf(STREAM_CHUNK + 8);
        long offset = 0;
        while (buf.position() > 0) {
          int n = buf.position();
          boolean last = buf.hasRemaining(); // a short fill means the end of the file was reached
          String data;
          if (binary) {
            data = Base64.getEncoder().encodeToString(java.util.Arrays.copyOf(buf.array(), n));
          } else {
            text.clear();
            utf8.sanitize(buf.array(), 0, n, false, text);
            data = new String(text.array(), 0, text.size(), StandardCharsets.UTF_8);
          }
          sse.send(new FileMessages.ChunkEvent(data, offset));
          offset += n;
          buf.clear();
          if (last) {
            break;
          }
          try {
            fill(ch, buf);
          } catch (IOException e) {
            sendError(sse, PathErrors.failure(e, "path", raw));
            return;
          }
        }
        if (!binary && utf8.pending() > 0) {
          text.clear();
          utf8.sanitize(new byte[0], 0, 0, true, text);
          sse.send(new FileMessages.ChunkEvent(new String(text.array(), 0, text.size(), StandardCharsets.UTF_8), offset));
        }
        sse.send(new FileMessages.CompleteEvent(offset));
      } catch (RuntimeException e) {
        sse.sendInternalError(e);
        throw e;
      } finally {
        sse.close();
      }
    }
  }

  /** {@code GET /api/files/raw?path=}: the file's bytes as the body, with Content-Length, streamed. */
  void download(HttpExchange exchange) throws IOException {
    String raw = Query.parse(exchange.getRequestURI(), Set.of("path")).string("path");
    try (Anchor a = workspace.resolve("path", raw, true, false); Anchor file = a.hold("path", raw);
        FileChannel ch = openForReading(file, raw)) {
      long size = ch.size();
      exchange.getResponseHeaders().set("Content-Type", "application/octet-stream");
      exchange.sendResponseHeaders(200, size == 0 ? -1 : size);
      if (size == 0) {
        return;
      }
      OutputStream out = exchange.getResponseBody();
      ByteBuffer buf = ByteBuffer.allocate(RAW_BUFFER);
      long left = size;
      while (left > 0) {
        buf.clear().limit((int) Math.min(buf.capacity(), left));
        int n;
        try {
          n = ch.read(buf);
        } catch (IOException e) {
          throw new IOException("reading '" + PathErrors.shorten(raw) + "' failed after " + (size - left) + " bytes: "
              + e.getMessage(), e);
        }
        if (n < 0) {
          // The file shrank: cut the connection rather than pretend the short body is complete.
          throw new IOException("'" + PathErrors.shorten(raw) + "' shrank to " + (size - left)
              + " bytes while being sent (" + size + " announced)");
        }
        out.write(buf.array(), 0, n);
        left -= n;
      }
      out.close();
    }
  }

  /**
   * {@code PUT /api/files/raw?path=}: the request body becomes the file, moved into place
   * atomically ({@link FileOperations#upload}).
   */
  void upload(HttpExchange exchange) throws IOException {
    String raw = Query.parse(exchange.getRequestURI(), Set.of("path")).string("path");
    long written = operations.upload(raw, exchange.getRequestBody());
    Responses.okTimestamped(exchange, new FileMessages.Uploaded(raw, written));
  }

  private static void fill(ReadableByteChannel ch, ByteBuffer buf) throws IOException {
    while (buf.hasRemaining()) {
      if (ch.read(buf) < 0) {
        return;
      }
    }
  }

  private static void sendError(SseWriter sse, AgentException e) throws IOException {
    sse.send(new FileMessages.ErrorEvent(e.code().name(), e.getMessage()));
  }
}
