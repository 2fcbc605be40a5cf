package dev.sandboxsdk.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.FileEntry;
import dev.sandboxsdk.FileEvent;
import dev.sandboxsdk.FileStat;
import dev.sandboxsdk.FileType;
import dev.sandboxsdk.ListOptions;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxFiles;
import dev.sandboxsdk.SandboxInvalidRequestException;
import dev.sandboxsdk.WatchOptions;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Flow;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import okhttp3.Call;
import okhttp3.HttpUrl;
import okhttp3.MediaType;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;
import okhttp3.ResponseBody;
import okio.BufferedSink;

/**
 * The {@link SandboxFiles} of a {@link RealSandbox}: file contents go over the agent's raw routes
 * ({@code GET} and {@code PUT /api/files/raw?path=}), which are byte-exact and stream with fixed
 * buffers on both sides; everything else over the JSON file routes. Uses the sandbox's client,
 * token, activity tracking, closing and error mapping. Thread-safe: it has no mutable state.
 */
final class RealFiles implements SandboxFiles {
  private static final MediaType OCTETS = MediaType.get("application/octet-stream");
  private static final int BUFFER = 64 << 10;
  /** The largest array the JVM reliably allocates. */
  private static final long MAX_ARRAY = Integer.MAX_VALUE - 8;

  private final RealSandbox sandbox;
  private final AgentHttp http;

  RealFiles(RealSandbox sandbox) {
    this.sandbox = sandbox;
    this.http = sandbox.http;
  }

  // ---- reading

  @Override
  public String readString(String path) {
    return new String(readBytes(path), StandardCharsets.UTF_8);
  }

  @Override
  public byte[] readBytes(String path) {
    String what = "readBytes " + path;
    try (Download in = open(path, what)) {
      long length = in.length;
      if (length > MAX_ARRAY) {
        throw new SandboxInvalidRequestException("'" + path + "' has " + length + " bytes, more than an array holds;"
            + " read it with open() or download()", null, "FILE_TOO_LARGE", 0, Map.of("path", path, "size", length));
      }
      if (length >= 0) {
        byte[] out = new byte[(int) length];
        int n = in.readNBytes(out, 0, out.length);
        if (n < out.length || in.read() != -1) {
          throw new SandboxException(what + ": the agent announced " + length + " bytes but sent "
              + (n < out.length ? n : "more"), null);
        }
        return out;
      }
      return in.readAllBytes(); // no Content-Length: an agent that sends chunks
    } catch (IOException e) {
      throw mapIo(e, what);
    }
  }

  @Override
  public InputStream open(String path) {
    return open(path, "open " + path);
  }

  private Download open(String path, String what) {
    HttpUrl url = rawUrl(path);
    http.ensureOpen();
    Call call = http.client.newCall(http.get(url));
    http.activity.begin();
    http.calls.add(call);
    Response response = null;
    try {
      response = call.execute();
      String restarted = http.restartNote(response);
      ResponseBody body = response.body();
      if (!response.isSuccessful()) {
        throw ErrorMapper.fromResponse(response.code(), AgentHttp.boundedBytes(body), restarted);
      }
      Download d = new Download(call, response, body.contentLength());
      if (sandbox.isClosed()) {
        d.close();
        http.ensureOpen();
      }
      return d;
    } catch (IOException | RuntimeException e) {
      http.calls.remove(call);
      http.activity.end();
      if (response != null) {
        response.close();
      }
      throw e instanceof IOException ? mapIo((IOException) e, what) : (RuntimeException) e;
    }
  }

  @Override
  public void download(String path, Path target) {
    Objects.requireNonNull(target, "target == null");
    Path absolute = target.toAbsolutePath();
    Path dir = absolute.getParent();
    String what = "download " + path;
    try (Download in = open(path, what)) {
      Path temp;
      try {
        temp = Files.createTempFile(dir, "." + absolute.getFileName(), ".download");
      } catch (IOException e) {
        throw new UncheckedIOException("cannot create a file next to " + target + ": " + e.getMessage(), e);
      }
      try {
        try (OutputStream out = Files.newOutputStream(temp)) {
          byte[] buf = new byte[BUFFER];
          for (;;) {
            int n;
            try {
              n = in.read(buf);
            } catch (IOException e) {
              throw mapIo(e, what);
            }
            if (n < 0) {
              break;
            }
            out.write(buf, 0, n);
          }
        }
        try {
          Files.move(temp, absolute, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (AtomicMoveNotSupportedException e) {
          Files.move(temp, absolute, StandardCopyOption.REPLACE_EXISTING);
        }
      } catch (IOException e) {
        throw new UncheckedIOException("cannot write " + target + ": " + e.getMessage(), e);
      } finally {
        try {
          Files.deleteIfExists(temp);
        } catch (IOException ignored) {
          // best effort: a leftover temporary file is named after the target
        }
      }
    }
  }

  // ---- writing

  @Override
  public void writeString(String path, String content) {
    Objects.requireNonNull(content, "content == null");
    writeBytes(path, content.getBytes(StandardCharsets.UTF_8));
  }

  @Override
  public void writeBytes(String path, byte[] data) {
    Objects.requireNonNull(data, "data == null");
    put(path, RequestBody.create(data, OCTETS), "writeBytes " + path);
  }

  @Override
  public void write(String path, InputStream data) {
    Objects.requireNonNull(data, "data == null");
    AtomicReference<IOException> sourceFailure = new AtomicReference<>();
    RequestBody body = new RequestBody() {
      @Override
      public MediaType contentType() {
        return OCTETS;
      }

      @Override
      public boolean isOneShot() {
        return true; // the caller's stream cannot be read twice: never retry
      }

      @Override
      public void writeTo(BufferedSink sink) throws IOException {
        byte[] buf = new byte[BUFFER];
        for (;;) {
          int n;
          try {
            n = data.read(buf);
          } catch (IOException e) {
            sourceFailure.set(e);
            throw e; // fails the call; the agent removes its temporary file
          }
          if (n < 0) {
            return;
          }
          sink.write(buf, 0, n);
        }
      }
    };
    try {
      put(path, body, "write " + path);
    } catch (SandboxException e) {
      IOException source = sourceFailure.get();
      if (source != null) {
        throw new UncheckedIOException("reading the data to write to '" + path + "' failed; the file is unchanged: "
            + source.getMessage(), source);
      }
      throw e;
    }
  }

  @Override
  public void upload(Path source, String path) {
    Objects.requireNonNull(source, "source == null");
    if (!Files.isRegularFile(source) || !Files.isReadable(source)) {
      throw new UncheckedIOException(new NoSuchFileException(source.toString(), null,
          "not a readable regular file"));
    }
    // Known length: sent with Content-Length, read from the file as OkHttp writes it.
    put(path, RequestBody.create(source.toFile(), OCTETS), "upload " + source + " to " + path);
  }

  private void put(String path, RequestBody body, String what) {
    Request request = http.get(rawUrl(path)).newBuilder().put(body).build();
    http.call(request, what);
  }

  // ---- directories and changes

  @Override
  public List<FileEntry> list(String path) {
    return list(path, ListOptions.defaults());
  }

  @Override
  public List<FileEntry> list(String path, ListOptions options) {
    Objects.requireNonNull(options, "options == null");
    ObjectNode body = body(path);
    ObjectNode o = body.putObject("options");
    o.put("recursive", options.recursive());
    o.put("includeHidden", options.includeHidden());
    String what = "list " + path;
    JsonNode n = post(what, body, "list-files");
    if (n.path("truncated").asBoolean(false)) {
      throw new SandboxException(what + ": the listing has more entries than the agent answers at once ("
          + n.path("count").asInt() + " sent); list the directories one by one", null, "LIST_TRUNCATED", 0,
          Map.of("path", path, "count", n.path("count").asInt()));
    }
    List<FileEntry> out = new ArrayList<>();
    for (JsonNode f : n.path("files")) {
      out.add(new FileEntry(Wire.text(f, "name"), Wire.text(f, "relativePath"), Wire.text(f, "absolutePath"),
          type(f), Wire.longValue(f, "size"), instant(f, "modifiedAt"), permissionBits(f.path("mode").asText(""))));
    }
    return List.copyOf(out);
  }

  @Override
  public void mkdir(String path) {
    post("mkdir " + path, body(path).put("recursive", true), "mkdir");
  }

  @Override
  public void delete(String path) {
    post("delete " + path, body(path), "delete");
  }

  @Override
  public void deleteRecursively(String path) {
    post("deleteRecursively " + path, body(path).put("recursive", true), "delete");
  }

  @Override
  public void rename(String from, String to) {
    Objects.requireNonNull(from, "from == null");
    Objects.requireNonNull(to, "to == null");
    post("rename " + from + " to " + to, Wire.MAPPER.createObjectNode().put("oldPath", from).put("newPath", to),
        "rename");
  }

  @Override
  public void move(String from, String to) {
    Objects.requireNonNull(from, "from == null");
    Objects.requireNonNull(to, "to == null");
    post("move " + from + " to " + to,
        Wire.MAPPER.createObjectNode().put("sourcePath", from).put("destinationPath", to), "move");
  }

  @Override
  public boolean exists(String path) {
    JsonNode n = post("exists " + path, body(path), "exists");
    if (!n.path("exists").isBoolean()) {
      throw Wire.malformed("answer to exists " + path, "'exists' is missing or not a boolean");
    }
    return n.get("exists").asBoolean();
  }

  @Override
  public FileStat stat(String path) {
    JsonNode n = post("stat " + path, body(path), "stat");
    String mode = Wire.text(n, "mode");
    int bits;
    try {
      bits = Integer.parseInt(mode, 8);
    } catch (NumberFormatException e) {
      throw Wire.malformed("answer to stat " + path, "'mode' is not octal: '" + mode + "'");
    }
    JsonNode link = n.get("symlinkTarget");
    return new FileStat(path, Wire.text(n, "absolutePath"), type(n), Wire.longValue(n, "size"), bits,
        instant(n, "modifiedAt"), n.path("uid").asLong(-1), n.path("gid").asLong(-1),
        link != null && link.isTextual() ? link.asText() : null);
  }

  // ---- watching

  /** POST /api/watch. */
  @Override
  public Flow.Publisher<FileEvent> watch(String path, WatchOptions options) {
    Objects.requireNonNull(path, "path == null");
    Objects.requireNonNull(options, "options == null");
    String what = "watch " + path;
    return new EventPublisher<>(abort -> new WatchCursor(sandbox.streams.openStream(http.post(http.url("api", "watch"),
        Wire.watchBody(path, options)), what, n -> n, WatchCursor::isFinal, abort), what), http.executor(),
        t -> http.streamError(t, what));
  }

  @Override
  public String toString() {
    return "SandboxFiles{" + sandbox + "}";
  }

  // ---- plumbing

  private static ObjectNode body(String path) {
    Objects.requireNonNull(path, "path == null");
    return Wire.MAPPER.createObjectNode().put("path", path);
  }

  private JsonNode post(String what, ObjectNode body, String route) {
    return http.call(http.post(http.url("api", route), body), what);
  }

  private HttpUrl rawUrl(String path) {
    Objects.requireNonNull(path, "path == null");
    // addQueryParameter percent-encodes everything the agent's URL decoder would change: a space
    // as %20, '+' as %2B, '/', '&', '=', '#' and non-ASCII as UTF-8 escapes.
    return http.url("api", "files", "raw").newBuilder().addQueryParameter("path", path).build();
  }

  private SandboxException mapIo(IOException e, String what) {
    if (sandbox.isClosed()) {
      return http.closedError(e);
    }
    if (e instanceof InterruptedIOException && Thread.currentThread().isInterrupted()) {
      return new SandboxException(what + ": interrupted", e); // the flag stays set
    }
    return ErrorMapper.fromIo(e, what);
  }

  private static FileType type(JsonNode n) {
    String t = Wire.text(n, "type");
    switch (t) {
      case "file":
        return FileType.FILE;
      case "directory":
        return FileType.DIRECTORY;
      case "symlink":
        return FileType.SYMLINK;
      default:
        return FileType.OTHER; // "other", and whatever a later agent adds
    }
  }

  private static Instant instant(JsonNode n, String field) {
    String text = Wire.text(n, field);
    try {
      return Instant.parse(text);
    } catch (DateTimeParseException e) {
      throw Wire.malformed("file info", "'" + field + "' is not an ISO-8601 instant: '" + text + "'");
    }
  }

  /** {@code rwxr-xr-x} (as {@code ls} and the agent's listing write it) to {@code 0755}. */
  static int permissionBits(String rwx) {
    int bits = 0;
    for (int i = 0; i < 9 && i < rwx.length(); i++) {
      if (rwx.charAt(i) != '-') {
        bits |= 1 << (8 - i);
      }
    }
    return bits;
  }

  /**
   * The body of a raw download; closing it (once) releases the connection, the call's place among
   * the sandbox's calls in flight, and its activity.
   */
  private final class Download extends FilterInputStream {
    private final Call call;
    private final Response response;
    private final long length;
    private final AtomicBoolean closed = new AtomicBoolean();
    private volatile boolean atEnd;

    Download(Call call, Response response, long length) {
      super(response.body().byteStream());
      this.call = call;
      this.response = response;
      this.length = length;
    }

    @Override
    public int read() throws IOException {
      int b = super.read();
      atEnd |= b < 0;
      return b;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      int n = super.read(b, off, len);
      atEnd |= n < 0;
      return n;
    }

    @Override
    public void close() {
      if (closed.compareAndSet(false, true)) {
        try {
          if (!atEnd) {
            // Closed early: drop the connection instead of letting OkHttp read on to reuse it.
            call.cancel();
          }
          response.close();
        } finally {
          http.calls.remove(call);
          http.activity.end();
        }
      }
    }
  }
}
