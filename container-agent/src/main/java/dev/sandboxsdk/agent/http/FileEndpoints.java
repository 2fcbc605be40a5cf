package dev.sandboxsdk.agent.http;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import dev.sandboxsdk.agent.AgentConfig;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.process.CommandUser;
import dev.sandboxsdk.agent.process.OutputBudget;
import dev.sandboxsdk.agent.process.ProcessManager;
import dev.sandboxsdk.agent.process.Trees;
import dev.sandboxsdk.agent.text.ByteBuf;
import dev.sandboxsdk.agent.text.Utf8Sanitizer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.channels.ReadableByteChannel;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The file routes: Cloudflare's {@code /api/read}, {@code /api/read/stream}, {@code /api/write},
 * {@code /api/delete}, {@code /api/rename}, {@code /api/move}, {@code /api/mkdir}, {@code
 * /api/list-files} and {@code /api/exists}, and our {@code /api/stat} and {@code /api/files/raw}
 * (GET and PUT, streamed both ways). Every path stays inside the workspace ({@link WorkspacePaths});
 * no path ever goes through a shell. With {@code --command-user}, what these routes create is given
 * to that user, so commands can change it.
 */
final class FileEndpoints {
  private static final Logger log = LoggerFactory.getLogger(FileEndpoints.class);
  /** Cloudflare's cap on a file answered in one JSON body (before base64). */
  static final int MAX_JSON_READ_BYTES = 32 * 1024 * 1024;
  /** Bytes per {@code chunk} event: Cloudflare's size, a multiple of 3 so base64 chunks join cleanly. */
  static final int STREAM_CHUNK = 65535;
  /** Buffer of the raw routes. */
  private static final int RAW_BUFFER = 64 * 1024;
  /** The most entries one list-files answer holds; more sets {@code truncated}. */
  static final int MAX_LIST_ENTRIES = 10_000;
  /** How much of a file decides whether it is text. */
  private static final int SNIFF_BYTES = 8 * 1024;
  private static final java.security.SecureRandom RANDOM = new java.security.SecureRandom();
  private static final OpenOption[] READ_NOFOLLOW = {StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS};

  private final AgentConfig config;
  private final OutputBudget budget;
  private final WorkspacePaths paths;
  /** With --command-user: makes every change as that user. */
  private final UserFiles asUser;

  FileEndpoints(ProcessManager processes) {
    this.config = processes.config();
    this.budget = processes.outputBudget();
    this.paths = new WorkspacePaths(config.workspace());
    CommandUser user = processes.commandUser();
    this.asUser = user == null ? null : new UserFiles(user);
  }

  // ---- Cloudflare's routes ----

  void read(HttpExchange exchange) throws IOException {
    Json body = readBody(exchange, Set.of("path", "encoding", "sessionId"));
    String raw = body.string("path");
    String encoding = encoding(body.string("encoding"));
    Path p = paths.follow("path", raw, paths.resolve("path", raw));
    BasicFileAttributes a = regularFile(p, raw);
    long limit = Math.min(MAX_JSON_READ_BYTES, budget.limit() / 4);
    if (a.size() > limit) {
      throw tooLargeForJson(raw, a.size(), limit);
    }
    // The bytes, the text or base64 string, and the JSON answer are in memory at once.
    long charge = a.size() <= Json.UNCHARGED_BODY_BYTES ? 0 : 4 * a.size();
    if (charge > 0 && !budget.tryReserve(charge)) {
      throw new AgentException(ErrorCode.OUTPUT_BUDGET_EXHAUSTED, "the agent cannot hold " + a.size()
          + " bytes of '" + WorkspacePaths.shorten(raw) + "' in memory now (its buffer budget is in use);"
          + " retry later, or read it with POST /api/read/stream or GET /api/files/raw?path=...",
          Map.of("budget", budget.limit(), "used", budget.used()));
    }
    try {
      byte[] bytes;
      try (ReadableByteChannel ch = open(p, raw); InputStream in = Channels.newInputStream(ch)) {
        bytes = in.readNBytes((int) limit + 1);
      } catch (IOException e) {
        throw WorkspacePaths.failure(e, "path", raw);
      }
      if (bytes.length > limit) {
        throw tooLargeForJson(raw, bytes.length, limit); // it grew while being read
      }
      String mime = mimeType(p, bytes, bytes.length);
      boolean text = encoding == null ? isTextMime(mime) && validUtf8(bytes) : encoding.equals("utf-8");
      ObjectNode out = answer(raw);
      out.put("content", text ? new String(bytes, StandardCharsets.UTF_8) : Base64.getEncoder().encodeToString(bytes));
      Responses.stamp(out);
      out.put("encoding", text ? "utf-8" : "base64");
      out.put("isBinary", !text);
      out.put("mimeType", mime);
      out.put("size", bytes.length);
      Responses.send(exchange, 200, out);
    } finally {
      budget.release(charge);
    }
  }

  void readStream(HttpExchange exchange) throws IOException {
    Json body = readBody(exchange, Set.of("path", "sessionId"));
    String raw = body.string("path");
    Path p = paths.follow("path", raw, paths.resolve("path", raw));
    long size = regularFile(p, raw).size();
    try (ReadableByteChannel ch = open(p, raw)) {
      ByteBuffer buf = ByteBuffer.allocate(STREAM_CHUNK);
      try {
        fill(ch, buf); // the first chunk decides text or binary
      } catch (IOException e) {
        throw WorkspacePaths.failure(e, "path", raw);
      }
      String mime = mimeType(p, buf.array(), buf.position());
      int sample = Math.min(buf.position(), SNIFF_BYTES);
      boolean binary = !(isTextMime(mime) && validUtf8Prefix(buf.array(), sample, sample == size));
      SseWriter sse = SseWriter.open(exchange);
      try {
        ObjectNode meta = Json.object();
        meta.put("type", "metadata");
        meta.put("mimeType", mime);
        meta.put("size", size);
        meta.put("isBinary", binary);
        meta.put("encoding", binary ? "base64" : "utf-8");
        sse.send(meta);
        Utf8Sanitizer utf8 = new Utf8Sanitizer();
        ByteBuf text = new ByteBuf(STREAM_CHUNK + 8);
        long offset = 0;
        while (buf.position() > 0) {
          int n = buf.position();
          boolean last = buf.hasRemaining(); // a short fill means the end of the file was reached
          ObjectNode chunk = Json.object();
          chunk.put("type", "chunk");
          if (binary) {
            chunk.put("data", Base64.getEncoder().encodeToString(java.util.Arrays.copyOf(buf.array(), n)));
          } else {
            text.clear();
            utf8.sanitize(buf.array(), 0, n, false, text);
            chunk.put("data", new String(text.array(), 0, text.size(), StandardCharsets.UTF_8));
          }
          chunk.put("offset", offset);
          sse.send(chunk);
          offset += n;
          buf.clear();
          if (last) {
            break;
          }
          try {
            fill(ch, buf);
          } catch (IOException e) {
            sendError(sse, WorkspacePaths.failure(e, "path", raw));
            return;
          }
        }
        if (!binary && utf8.pending() > 0) {
          text.clear();
          utf8.sanitize(new byte[0], 0, 0, true, text);
          ObjectNode tail = Json.object();
          tail.put("type", "chunk");
          tail.put("data", new String(text.array(), 0, text.size(), StandardCharsets.UTF_8));
          tail.put("offset", offset);
          sse.send(tail);
        }
        ObjectNode complete = Json.object();
        complete.put("type", "complete");
        complete.put("bytesRead", offset);
        sse.send(complete);
      } catch (RuntimeException e) {
        sse.sendInternalError(e);
        throw e;
      } finally {
        sse.close();
      }
    }
  }

  void write(HttpExchange exchange) throws IOException {
    Json body;
    try {
      body = readBody(exchange, Set.of("path", "content", "encoding", "sessionId"));
    } catch (AgentException e) {
      if (e.code() == ErrorCode.PAYLOAD_TOO_LARGE) {
        throw new AgentException(ErrorCode.PAYLOAD_TOO_LARGE, e.getMessage() + "; send large or binary files"
            + " as the raw body of PUT /api/files/raw?path=... instead", e.context());
      }
      throw e;
    }
    String raw = body.string("path");
    String content = body.string("content");
    String encoding = encoding(body.string("encoding"));
    Path p = paths.follow("path", raw, paths.resolve("path", raw));
    if (content == null) {
      throw AgentException.invalid("content", "'content' is required (it may be empty)");
    }
    byte[] bytes;
    if ("base64".equals(encoding)) {
      try {
        bytes = Base64.getDecoder().decode(content);
      } catch (IllegalArgumentException e) {
        throw AgentException.invalid("content", "'content' is not valid base64 (A-Z, a-z, 0-9, +, / and = padding): "
            + e.getMessage());
      }
    } else {
      bytes = content.getBytes(StandardCharsets.UTF_8);
    }
    refuseDirectory(p, raw);
    createParents(p, raw);
    if (asUser != null) {
      asUser.write(p, new java.io.ByteArrayInputStream(bytes), false, "path", raw);
      ObjectNode out = answer(raw);
      Responses.ok(exchange, out);
      return;
    }
    try (FileChannel ch = FileChannel.open(p, StandardOpenOption.WRITE, StandardOpenOption.CREATE,
        StandardOpenOption.TRUNCATE_EXISTING, LinkOption.NOFOLLOW_LINKS)) {
      ByteBuffer b = ByteBuffer.wrap(bytes);
      while (b.hasRemaining()) {
        ch.write(b);
      }
    } catch (IOException e) {
      throw WorkspacePaths.failure(e, "path", raw);
    }
    ObjectNode out = answer(raw);
    Responses.ok(exchange, out);
  }

  void delete(HttpExchange exchange) throws IOException {
    Json body = readBody(exchange, Set.of("path", "recursive", "sessionId"));
    String raw = body.string("path");
    boolean recursive = Boolean.TRUE.equals(body.bool("recursive"));
    Path p = paths.resolve("path", raw); // a final link is deleted, never followed
    notTheWorkspace(p, "path", raw, "deleted");
    BasicFileAttributes a = attributes(p, "path", raw);
    if (a.isDirectory() && !recursive) {
      throw new AgentException(ErrorCode.IS_DIRECTORY, "'" + WorkspacePaths.shorten(raw)
          + "' is a directory; pass \"recursive\": true to delete it with everything in it",
          Map.of("field", "path", "path", WorkspacePaths.shorten(raw)));
    }
    try {
      if (asUser != null) {
        asUser.remove(p, a.isDirectory(), "path", raw);
      } else if (a.isDirectory()) {
        Trees.delete(p);
      } else {
        Files.delete(p);
      }
    } catch (IOException e) {
      throw WorkspacePaths.failure(e, "path", raw);
    }
    ObjectNode out = answer(raw);
    Responses.ok(exchange, out);
  }

  void rename(HttpExchange exchange) throws IOException {
    move(exchange, "oldPath", "newPath");
  }

  void move(HttpExchange exchange) throws IOException {
    move(exchange, "sourcePath", "destinationPath");
  }

  void mkdir(HttpExchange exchange) throws IOException {
    Json body = readBody(exchange, Set.of("path", "recursive", "sessionId"));
    String raw = body.string("path");
    boolean recursive = Boolean.TRUE.equals(body.bool("recursive"));
    Path p = paths.resolve("path", raw);
    if (Files.exists(p, LinkOption.NOFOLLOW_LINKS) || Files.isSymbolicLink(p)) {
      if (!(recursive && Files.isDirectory(paths.follow("path", raw, p)))) {
        throw new AgentException(ErrorCode.FILE_EXISTS, "'" + WorkspacePaths.shorten(raw) + "' already exists"
            + (recursive ? " and is not a directory" : ""), Map.of("field", "path", "path", WorkspacePaths.shorten(raw)));
      }
    } else if (recursive) {
      createDirectories(p, raw);
    } else {
      Path parent = p.getParent();
      if (!Files.isDirectory(parent)) {
        boolean exists = Files.exists(parent);
        throw new AgentException(exists ? ErrorCode.NOT_DIRECTORY : ErrorCode.FILE_NOT_FOUND, "the parent of '"
            + WorkspacePaths.shorten(raw) + "' " + (exists ? "is not a directory" : "does not exist; pass \"recursive\": true"
            + " to create it too"), Map.of("field", "path", "path", WorkspacePaths.shorten(raw)));
      }
      if (asUser != null) {
        asUser.mkdir(p, false, "path", raw);
      } else {
        try {
          Files.createDirectory(p);
        } catch (IOException e) {
          throw WorkspacePaths.failure(e, "path", raw);
        }
      }
    }
    ObjectNode out = answer(raw);
    out.put("recursive", recursive);
    Responses.ok(exchange, out);
  }

  void listFiles(HttpExchange exchange) throws IOException {
    Json body = readBody(exchange, Set.of("path", "options", "sessionId"));
    String raw = body.string("path");
    Json options = body.object("options");
    boolean recursive = false;
    boolean hidden = false;
    if (options != null) {
      options.allowOnly(Set.of("recursive", "includeHidden", "sessionId"));
      recursive = Boolean.TRUE.equals(options.bool("recursive"));
      hidden = Boolean.TRUE.equals(options.bool("includeHidden"));
    }
    Path dir = paths.follow("path", raw, paths.resolve("path", raw));
    BasicFileAttributes a = attributes(dir, "path", raw);
    if (!a.isDirectory()) {
      throw new AgentException(ErrorCode.NOT_DIRECTORY, "'" + WorkspacePaths.shorten(raw) + "' is not a directory",
          Map.of("field", "path", "path", WorkspacePaths.shorten(raw)));
    }
    ArrayNode files = Json.MAPPER.createArrayNode();
    boolean truncated;
    try {
      truncated = list(dir, dir, recursive, hidden, files);
    } catch (IOException e) {
      throw WorkspacePaths.failure(e, "path", raw);
    }
    ObjectNode out = answer(raw);
    out.set("files", files);
    out.put("count", files.size());
    if (truncated) {
      out.put("truncated", true);
    }
    Responses.ok(exchange, out);
  }

  void exists(HttpExchange exchange) throws IOException {
    Json body = readBody(exchange, Set.of("path", "sessionId"));
    String raw = body.string("path");
    Path p = paths.follow("path", raw, paths.resolve("path", raw));
    ObjectNode out = answer(raw);
    out.put("exists", Files.exists(p));
    Responses.ok(exchange, out);
  }

  // ---- our routes ----

  /** {@code POST /api/stat}: what lstat says about one path; a final link is described, not followed. */
  void stat(HttpExchange exchange) throws IOException {
    Json body = readBody(exchange, Set.of("path", "sessionId"));
    String raw = body.string("path");
    Path p = paths.resolve("path", raw);
    PosixFileAttributes a = posix(p, "path", raw);
    ObjectNode out = answer(raw);
    out.put("absolutePath", p.toString());
    out.put("type", type(a));
    out.put("size", a.size());
    int mode;
    try {
      mode = (Integer) Files.getAttribute(p, "unix:mode", LinkOption.NOFOLLOW_LINKS);
      out.put("mode", String.format(Locale.ROOT, "%04o", mode & 07777));
      out.put("modifiedAt", a.lastModifiedTime().toInstant().toString());
      out.put("uid", Integer.toUnsignedLong((Integer) Files.getAttribute(p, "unix:uid", LinkOption.NOFOLLOW_LINKS)));
      out.put("gid", Integer.toUnsignedLong((Integer) Files.getAttribute(p, "unix:gid", LinkOption.NOFOLLOW_LINKS)));
      if (a.isSymbolicLink()) {
        out.put("symlinkTarget", Files.readSymbolicLink(p).toString());
      }
    } catch (IOException e) {
      throw WorkspacePaths.failure(e, "path", raw);
    }
    Responses.ok(exchange, out);
  }

  /** {@code GET /api/files/raw?path=}: the file's bytes as the body, with Content-Length, streamed. */
  void download(HttpExchange exchange) throws IOException {
    String raw = Query.parse(exchange.getRequestURI(), Set.of("path")).string("path");
    Path p = paths.follow("path", raw, paths.resolve("path", raw));
    long size = regularFile(p, raw).size();
    try (ReadableByteChannel ch = open(p, raw)) {
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
          throw new IOException("reading " + p + " failed after " + (size - left) + " bytes: " + e.getMessage(), e);
        }
        if (n < 0) {
          // The file shrank: cut the connection rather than pretend the short body is complete.
          throw new IOException(p + " shrank to " + (size - left) + " bytes while being sent (" + size + " announced)");
        }
        out.write(buf.array(), 0, n);
        left -= n;
      }
      out.close();
    }
  }

  /**
   * {@code PUT /api/files/raw?path=}: the request body becomes the file. It is written to a
   * temporary file in the same directory and moved into place atomically, so readers see the old
   * file or the whole new one, never a part.
   */
  void upload(HttpExchange exchange) throws IOException {
    String raw = Query.parse(exchange.getRequestURI(), Set.of("path")).string("path");
    Path p = paths.follow("path", raw, paths.resolve("path", raw));
    refuseDirectory(p, raw);
    createParents(p, raw);
    Integer previousMode = null;
    try {
      previousMode = (Integer) Files.getAttribute(p, "unix:mode", LinkOption.NOFOLLOW_LINKS) & 07777;
    } catch (NoSuchFileException e) {
      // a new file
    } catch (IOException e) {
      throw WorkspacePaths.failure(e, "path", raw);
    }
    long written = asUser != null ? uploadAsUser(exchange, p, raw, previousMode) : uploadDirectly(exchange, p, raw, previousMode);
    ObjectNode out = answer(raw);
    out.put("size", written);
    Responses.ok(exchange, out);
  }

  private long uploadDirectly(HttpExchange exchange, Path p, String raw, Integer previousMode) throws IOException {
    Path tmp;
    try {
      tmp = Files.createTempFile(p.getParent(), "." + p.getFileName() + ".", ".upload");
    } catch (IOException e) {
      throw WorkspacePaths.failure(e, "path", raw);
    }
    try {
      long written = 0;
      try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS)) {
        InputStream in = exchange.getRequestBody();
        byte[] buf = new byte[RAW_BUFFER];
        for (int n; (n = in.read(buf)) >= 0; ) { // an IOException from in is the client's: it closes the connection
          try {
            ByteBuffer b = ByteBuffer.wrap(buf, 0, n);
            while (b.hasRemaining()) {
              ch.write(b);
            }
          } catch (IOException e) {
            throw WorkspacePaths.failure(e, "path", raw);
          }
          written += n;
        }
        try {
          ch.force(false);
        } catch (IOException e) {
          throw WorkspacePaths.failure(e, "path", raw);
        }
      }
      try {
        Files.setAttribute(tmp, "unix:mode", previousMode != null ? previousMode : 0644, LinkOption.NOFOLLOW_LINKS);
        moveAtomically(tmp, p);
      } catch (IOException e) {
        throw WorkspacePaths.failure(e, "path", raw);
      }
      return written;
    } finally {
      try {
        Files.deleteIfExists(tmp);
      } catch (IOException e) {
        log.debug("cannot remove the partial upload {}: {}", tmp, e.toString());
      }
    }
  }

  private long uploadAsUser(HttpExchange exchange, Path p, String raw, Integer previousMode) throws IOException {
    Path tmp = p.resolveSibling("." + p.getFileName() + "." + Long.toUnsignedString(RANDOM.nextLong(), 36) + ".upload");
    boolean moved = false;
    try {
      long written = asUser.write(tmp, exchange.getRequestBody(), true, "path", raw);
      if (previousMode != null) {
        asUser.chmod(tmp, previousMode, "path", raw);
      }
      asUser.rename(tmp, p, "path", raw);
      moved = true;
      return written;
    } finally {
      if (!moved) {
        try {
          asUser.remove(tmp, false, "path", raw);
        } catch (AgentException e) {
          log.debug("cannot remove the partial upload {}: {}", tmp, e.getMessage());
        }
      }
    }
  }

  // ---- helpers ----

  private Json readBody(HttpExchange exchange, Set<String> allowed) throws IOException {
    Query.none(exchange);
    return Json.read(exchange, config.maxBodyBytes(), budget).allowOnly(allowed);
  }

  /** null (decide by content), {@code utf-8} or {@code base64}. */
  private static String encoding(String given) {
    if (given == null) {
      return null;
    }
    switch (given.toLowerCase(Locale.ROOT)) {
      case "utf-8":
      case "utf8":
        return "utf-8";
      case "base64":
        return "base64";
      default:
        throw AgentException.invalid("encoding", "unknown encoding '" + given + "'; use utf-8, utf8 or base64");
    }
  }

  private void move(HttpExchange exchange, String fromField, String toField) throws IOException {
    Json body = readBody(exchange, Set.of(fromField, toField, "sessionId"));
    String fromRaw = body.string(fromField);
    String toRaw = body.string(toField);
    Path from = paths.resolve(fromField, fromRaw); // a link is moved itself, never its target
    Path to = paths.resolve(toField, toRaw);
    notTheWorkspace(from, fromField, fromRaw, "moved");
    BasicFileAttributes a = attributes(from, fromField, fromRaw);
    // Like mv(1): into an existing directory (not a link to one) it goes under its own name.
    if (Files.isDirectory(to, LinkOption.NOFOLLOW_LINKS) && !to.equals(from)) {
      to = to.resolve(from.getFileName());
    }
    if (a.isDirectory() && to.startsWith(from) && !to.equals(from)) {
      throw AgentException.invalid(toField, "cannot move the directory '" + WorkspacePaths.shorten(fromRaw)
          + "' into itself");
    }
    if (!Files.isDirectory(to.getParent())) {
      throw new AgentException(Files.exists(to.getParent()) ? ErrorCode.NOT_DIRECTORY : ErrorCode.FILE_NOT_FOUND,
          "the directory of '" + WorkspacePaths.shorten(toRaw) + "' does not exist or is not a directory",
          Map.of("field", toField, "path", WorkspacePaths.shorten(toRaw)));
    }
    try {
      BasicFileAttributes target = Files.readAttributes(to, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
      if (target.isDirectory() && !a.isDirectory()) {
        throw new AgentException(ErrorCode.IS_DIRECTORY, "cannot replace the directory '" + to + "' with a file",
            Map.of("field", toField, "path", WorkspacePaths.shorten(toRaw)));
      }
      if (!target.isDirectory() && a.isDirectory()) {
        throw new AgentException(ErrorCode.NOT_DIRECTORY, "cannot replace the file '" + to + "' with a directory",
            Map.of("field", toField, "path", WorkspacePaths.shorten(toRaw)));
      }
    } catch (NoSuchFileException e) {
      // the usual case
    } catch (IOException e) {
      throw WorkspacePaths.failure(e, toField, toRaw);
    }
    try {
      if (asUser != null) {
        asUser.rename(from, to, toField, toRaw);
      } else {
        moveAtomically(from, to);
      }
    } catch (IOException e) {
      throw WorkspacePaths.failure(e, toField, toRaw);
    }
    ObjectNode out = answer(null);
    out.put("path", fromRaw);
    out.put("newPath", toRaw);
    Responses.ok(exchange, out);
  }

  private static void moveAtomically(Path from, Path to) throws IOException {
    try {
      Files.move(from, to, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    } catch (AtomicMoveNotSupportedException e) {
      Files.move(from, to, StandardCopyOption.REPLACE_EXISTING); // another file system: copy, then delete
    }
  }

  private void notTheWorkspace(Path p, String field, String raw, String verb) {
    if (p.equals(paths.root())) {
      throw new AgentException(ErrorCode.PERMISSION_DENIED, "the workspace itself cannot be " + verb,
          Map.of("field", field, "path", WorkspacePaths.shorten(raw)));
    }
  }

  private static BasicFileAttributes attributes(Path p, String field, String raw) {
    try {
      return Files.readAttributes(p, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
    } catch (IOException e) {
      throw WorkspacePaths.failure(e, field, raw);
    }
  }

  private static PosixFileAttributes posix(Path p, String field, String raw) {
    try {
      return Files.readAttributes(p, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
    } catch (IOException e) {
      throw WorkspacePaths.failure(e, field, raw);
    }
  }

  /** A regular file, or the matching error (a FIFO or device would block or never end). */
  private static BasicFileAttributes regularFile(Path p, String raw) {
    BasicFileAttributes a = attributes(p, "path", raw);
    if (a.isDirectory()) {
      throw new AgentException(ErrorCode.IS_DIRECTORY, "'" + WorkspacePaths.shorten(raw) + "' is a directory, not a file",
          Map.of("field", "path", "path", WorkspacePaths.shorten(raw)));
    }
    if (a.isSymbolicLink()) {
      throw new AgentException(ErrorCode.FILE_NOT_FOUND, "'" + WorkspacePaths.shorten(raw)
          + "' is a symbolic link to nothing", Map.of("field", "path", "path", WorkspacePaths.shorten(raw)));
    }
    if (!a.isRegularFile()) {
      throw AgentException.invalid("path", "'" + WorkspacePaths.shorten(raw) + "' is not a regular file"
          + " (a device, FIFO or socket)");
    }
    return a;
  }

  private static void refuseDirectory(Path p, String raw) {
    if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
      throw new AgentException(ErrorCode.IS_DIRECTORY, "'" + WorkspacePaths.shorten(raw) + "' is a directory",
          Map.of("field", "path", "path", WorkspacePaths.shorten(raw)));
    }
  }

  private static AgentException tooLargeForJson(String raw, long size, long limit) {
    return new AgentException(ErrorCode.FILE_TOO_LARGE, "'" + WorkspacePaths.shorten(raw) + "' has " + size
        + " bytes, more than the " + limit + " a JSON answer may carry; read it with POST /api/read/stream"
        + " or GET /api/files/raw?path=...", Map.of("path", WorkspacePaths.shorten(raw), "size", size, "limit", limit));
  }

  private void createParents(Path p, String raw) {
    Path parent = p.getParent();
    if (!Files.isDirectory(parent)) {
      createDirectories(parent, raw);
    }
  }

  /** Like mkdir -p, giving each directory it makes to the command user. */
  private void createDirectories(Path dir, String raw) {
    List<Path> missing = new ArrayList<>();
    for (Path d = dir; d != null && !Files.isDirectory(d); d = d.getParent()) {
      if (Files.exists(d, LinkOption.NOFOLLOW_LINKS) || Files.isSymbolicLink(d)) {
        throw new AgentException(ErrorCode.NOT_DIRECTORY, "'" + paths.root().relativize(d) + "' on the way to '"
            + WorkspacePaths.shorten(raw) + "' exists and is not a directory",
            Map.of("field", "path", "path", WorkspacePaths.shorten(raw)));
      }
      missing.add(0, d);
    }
    if (asUser != null) {
      if (!missing.isEmpty()) {
        asUser.mkdir(dir, true, "path", raw);
      }
      return;
    }
    for (Path d : missing) {
      try {
        Files.createDirectory(d);
      } catch (FileAlreadyExistsException e) {
        if (!Files.isDirectory(d)) {
          throw WorkspacePaths.failure(e, "path", raw);
        }
      } catch (IOException e) {
        throw WorkspacePaths.failure(e, "path", raw);
      }
    }
  }

  /** Opens a file for reading; with --command-user, one the agent may not open is read by that user. */
  private ReadableByteChannel open(Path p, String raw) {
    try {
      return FileChannel.open(p, READ_NOFOLLOW);
    } catch (AccessDeniedException e) {
      if (asUser == null) {
        throw WorkspacePaths.failure(e, "path", raw);
      }
      try {
        return Channels.newChannel(asUser.read(p, "path", raw));
      } catch (IOException io) {
        throw WorkspacePaths.failure(io, "path", raw);
      }
    } catch (IOException e) {
      throw WorkspacePaths.failure(e, "path", raw);
    }
  }

  /** Pre-order, names sorted, links not followed, hidden entries (and what is in them) skipped unless asked. */
  private boolean list(Path base, Path dir, boolean recursive, boolean hidden, ArrayNode out) throws IOException {
    List<Path> children = new ArrayList<>();
    try (var stream = Files.newDirectoryStream(dir)) {
      for (Path c : stream) {
        if (hidden || !c.getFileName().toString().startsWith(".")) {
          children.add(c);
        }
      }
    }
    children.sort(null);
    for (Path c : children) {
      if (out.size() >= MAX_LIST_ENTRIES) {
        return true;
      }
      PosixFileAttributes a;
      try {
        a = Files.readAttributes(c, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
      } catch (NoSuchFileException e) {
        continue; // deleted meanwhile
      }
      out.add(fileInfo(base, c, a));
      if (recursive && a.isDirectory() && list(base, c, true, hidden, out)) {
        return true;
      }
    }
    return false;
  }

  private static ObjectNode fileInfo(Path base, Path p, PosixFileAttributes a) {
    ObjectNode info = Json.object();
    info.put("name", p.getFileName().toString());
    info.put("absolutePath", p.toString());
    info.put("relativePath", base.relativize(p).toString());
    info.put("type", type(a));
    info.put("size", a.size());
    info.put("modifiedAt", a.lastModifiedTime().toInstant().toString());
    Set<PosixFilePermission> perms = a.permissions();
    info.put("mode", PosixFilePermissions.toString(perms));
    ObjectNode own = info.putObject("permissions");
    own.put("readable", perms.contains(PosixFilePermission.OWNER_READ));
    own.put("writable", perms.contains(PosixFilePermission.OWNER_WRITE));
    own.put("executable", perms.contains(PosixFilePermission.OWNER_EXECUTE));
    return info;
  }

  private static String type(BasicFileAttributes a) {
    return a.isSymbolicLink() ? "symlink" : a.isDirectory() ? "directory" : a.isRegularFile() ? "file" : "other";
  }

  private static void fill(ReadableByteChannel ch, ByteBuffer buf) throws IOException {
    while (buf.hasRemaining()) {
      if (ch.read(buf) < 0) {
        return;
      }
    }
  }

  private static void sendError(SseWriter sse, AgentException e) throws IOException {
    ObjectNode error = Json.object();
    error.put("type", "error");
    error.put("error", e.getMessage()); // Cloudflare's field
    error.put("code", e.code().name());
    error.put("message", e.getMessage());
    sse.send(error);
  }

  // ---- text or binary ----

  private static final Map<String, String> MIME_BY_EXTENSION = Map.ofEntries(
      Map.entry("txt", "text/plain"), Map.entry("md", "text/markdown"), Map.entry("csv", "text/csv"),
      Map.entry("html", "text/html"), Map.entry("htm", "text/html"), Map.entry("css", "text/css"),
      Map.entry("js", "text/javascript"), Map.entry("mjs", "text/javascript"), Map.entry("ts", "text/typescript"),
      Map.entry("json", "application/json"), Map.entry("xml", "application/xml"), Map.entry("svg", "image/svg+xml"),
      Map.entry("yaml", "application/yaml"), Map.entry("yml", "application/yaml"), Map.entry("toml", "application/toml"),
      Map.entry("py", "text/x-python"), Map.entry("java", "text/x-java"), Map.entry("sh", "application/x-sh"),
      Map.entry("sql", "application/sql"), Map.entry("png", "image/png"), Map.entry("jpg", "image/jpeg"),
      Map.entry("jpeg", "image/jpeg"), Map.entry("gif", "image/gif"), Map.entry("webp", "image/webp"),
      Map.entry("pdf", "application/pdf"), Map.entry("zip", "application/zip"), Map.entry("gz", "application/gzip"),
      Map.entry("tar", "application/x-tar"), Map.entry("wasm", "application/wasm"), Map.entry("jar", "application/java-archive"));

  private static final Set<String> TEXT_APPLICATION_TYPES = Set.of("application/json", "application/xml",
      "application/yaml", "application/toml", "application/x-sh", "application/sql", "application/javascript");

  /** By extension; otherwise text/plain when the first bytes are UTF-8 without NUL, else application/octet-stream. */
  static String mimeType(Path p, byte[] head, int length) {
    String name = p.getFileName().toString();
    int dot = name.lastIndexOf('.');
    if (dot > 0) {
      String known = MIME_BY_EXTENSION.get(name.substring(dot + 1).toLowerCase(Locale.ROOT));
      if (known != null) {
        return known;
      }
    }
    int n = Math.min(length, SNIFF_BYTES);
    for (int i = 0; i < n; i++) {
      if (head[i] == 0) {
        return "application/octet-stream";
      }
    }
    return validUtf8Prefix(head, n, n == length) ? "text/plain" : "application/octet-stream";
  }

  static boolean isTextMime(String mime) {
    String subtype = mime.substring(mime.indexOf('/') + 1);
    return mime.startsWith("text/") || TEXT_APPLICATION_TYPES.contains(mime) || subtype.endsWith("+json")
        || subtype.endsWith("+xml");
  }

  private static boolean validUtf8(byte[] bytes) {
    return validUtf8Prefix(bytes, bytes.length, true);
  }

  /** Whether {@code bytes[0, n)} is UTF-8; unless it is the whole file, a code point cut at the end is fine. */
  private static boolean validUtf8Prefix(byte[] bytes, int n, boolean whole) {
    int end = n;
    if (!whole) {
      // Step back over a code point the sample may have cut (at most 3 bytes).
      int back = 0;
      while (back < 3 && end - back - 1 >= 0 && (bytes[end - back - 1] & 0xC0) == 0x80) {
        back++;
      }
      if (end - back - 1 >= 0 && (bytes[end - back - 1] & 0xC0) == 0xC0) {
        end = end - back - 1;
      }
    }
    try {
      StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes, 0, end));
      return true;
    } catch (CharacterCodingException e) {
      return false;
    }
  }

  /** A successful answer's body: {@code success}, and the caller's {@code path} unless null. */
  private static ObjectNode answer(String path) {
    ObjectNode out = Json.object();
    out.put("success", true);
    if (path != null) {
      out.put("path", path);
    }
    return out;
  }
}
