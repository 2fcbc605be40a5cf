package dev.sandboxsdk.agent.http;

import com.sun.net.httpserver.HttpExchange;
import dev.sandboxsdk.agent.AgentConfig;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.fs.Anchor;
import dev.sandboxsdk.agent.fs.PathErrors;
import dev.sandboxsdk.agent.fs.Tree;
import dev.sandboxsdk.agent.fs.Workspace;
import dev.sandboxsdk.agent.fs.WorkspaceFiles;
import dev.sandboxsdk.agent.process.OutputBudget;
import dev.sandboxsdk.agent.process.ProcessManager;
import java.io.IOException;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The file routes: Cloudflare's {@code /api/read}, {@code /api/read/stream}, {@code /api/write},
 * {@code /api/delete}, {@code /api/rename}, {@code /api/move}, {@code /api/mkdir}, {@code
 * /api/list-files} and {@code /api/exists}, and our {@code /api/stat} and {@code /api/files/raw}
 * (GET and PUT, streamed both ways). Every path stays inside the workspace ({@link Workspace});
 * no path ever goes through a shell. With {@code --command-user}, what these routes create is given
 * to that user, so commands can change it.
 */
final class FileEndpoints {
  /** Cloudflare's cap on a file answered in one JSON body (before base64). */
  static final int MAX_JSON_READ_BYTES = 32 * 1024 * 1024;
  /** The most entries one list-files answer holds; more sets {@code truncated}. */
  static final int MAX_LIST_ENTRIES = 10_000;

  private final AgentConfig config;
  private final OutputBudget budget;
  private final Workspace workspace;
  private final WorkspaceFiles files;

  FileEndpoints(ProcessManager processes, Workspace workspace) {
    this.config = processes.config();
    this.budget = processes.outputBudget();
    this.workspace = workspace;
    this.files = new WorkspaceFiles(workspace);
  }

  /** Registers the file routes, each run with the command user's file system identity. */
  void register(Routes routes) {
    routes.on("POST", "/api/read", Routes.asUser(workspace, this::read))
        .on("POST", "/api/write", Routes.asUser(workspace, this::write))
        .on("POST", "/api/delete", Routes.asUser(workspace, this::delete))
        .on("POST", "/api/rename", Routes.asUser(workspace, this::rename))
        .on("POST", "/api/move", Routes.asUser(workspace, this::move))
        .on("POST", "/api/mkdir", Routes.asUser(workspace, this::mkdir))
        .on("POST", "/api/list-files", Routes.asUser(workspace, this::listFiles))
        .on("POST", "/api/exists", Routes.asUser(workspace, this::exists))
        .on("POST", "/api/stat", Routes.asUser(workspace, this::stat));
  }

  /** Runs a route with the command user's file system identity (when there is one): every file call in it is the user's. */
  void asUser(Route route) throws IOException {
    workspace.asUser(() -> {
      route.handle();
      return null;
    });
  }

  /** One file route's work. */
  @FunctionalInterface
  interface Route {
    void handle() throws IOException;
  }

  // ---- Cloudflare's routes ----

  void read(HttpExchange exchange) throws IOException {
    Json body = readBody(exchange, Set.of("path", "encoding", "sessionId"));
    String raw = body.string("path");
    String encoding = encoding(body.string("encoding"));
    try (Anchor a = workspace.resolve("path", raw, true, false); Anchor file = a.hold("path", raw);
        FileChannel ch = WorkspaceFiles.openForReading(file, raw)) {
      long size = ch.size(); // of what was opened: a swap after the open changes nothing
      long limit = Math.min(MAX_JSON_READ_BYTES, budget.limit() / 4);
      if (size > limit) {
        throw tooLargeForJson(raw, size, limit);
      }
      // The bytes, the text or base64 string, and the JSON answer are in memory at once.
      long charge = size <= Json.UNCHARGED_BODY_BYTES ? 0 : 4 * size;
      if (charge > 0 && !budget.tryReserve(charge)) {
        throw new AgentException(ErrorCode.OUTPUT_BUDGET_EXHAUSTED, "the agent cannot hold " + size
            + " bytes of '" + PathErrors.shorten(raw) + "' in memory now (its buffer budget is in use);"
            + " retry later, or read it with POST /api/read/stream or GET /api/files/raw?path=...",
            Map.of("budget", budget.limit(), "used", budget.used()));
      }
      try {
        byte[] bytes;
        try {
          bytes = Channels.newInputStream(ch).readNBytes((int) limit + 1);
        } catch (IOException e) {
          throw PathErrors.failure(e, "path", raw);
        }
        if (bytes.length > limit) {
          throw tooLargeForJson(raw, bytes.length, limit); // it grew while being read
        }
        String mime = FileTypes.mimeType(a.name(), bytes, bytes.length);
        boolean text = encoding == null ? FileTypes.isTextMime(mime) && FileTypes.validUtf8(bytes)
            : encoding.equals("utf-8");
        String content = text ? new String(bytes, StandardCharsets.UTF_8) : Base64.getEncoder().encodeToString(bytes);
        Responses.send(exchange, 200, Json.MAPPER.writeValueAsBytes(new FileMessages.Read(true, raw, content,
            Instant.now().toString(), text ? "utf-8" : "base64", !text, mime, bytes.length)));
      } finally {
        budget.release(charge);
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
    workspace.relative("path", raw); // a bad path is reported before a missing content
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
    files.write(raw, bytes);
    Responses.okTimestamped(exchange, new FileMessages.PathAnswer(raw));
  }

  void delete(HttpExchange exchange) throws IOException {
    Json body = readBody(exchange, Set.of("path", "recursive", "sessionId"));
    String raw = body.string("path");
    boolean recursive = Boolean.TRUE.equals(body.bool("recursive"));
    files.delete(raw, recursive);
    Responses.okTimestamped(exchange, new FileMessages.PathAnswer(raw));
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
    files.mkdir(raw, recursive);
    Responses.okTimestamped(exchange, new FileMessages.Mkdir(raw, recursive));
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
    List<FileMessages.FileInfo> files = new ArrayList<>();
    boolean truncated;
    try (Anchor dir = workspace.resolve("path", raw, true, false)) {
      if (dir.name() != null) { // the walk ended at something that is not a directory (or nothing)
        WorkspaceFiles.attributes(dir, "path", raw);
        throw new AgentException(ErrorCode.NOT_DIRECTORY, "'" + PathErrors.shorten(raw) + "' is not a directory",
            Map.of("field", "path", "path", PathErrors.shorten(raw)));
      }
      Path base = dir.logical();
      try {
        truncated = Tree.list(dir, recursive, hidden, "path", raw, e -> {
          if (files.size() >= MAX_LIST_ENTRIES) {
            return false;
          }
          files.add(fileInfo(base, e));
          return true;
        });
      } catch (IOException e) {
        throw PathErrors.failure(e, "path", raw);
      }
    }
    Responses.okTimestamped(exchange, new FileMessages.Listed(raw, files, truncated));
  }

  void exists(HttpExchange exchange) throws IOException {
    Json body = readBody(exchange, Set.of("path", "sessionId"));
    String raw = body.string("path");
    boolean exists = files.exists(raw);
    Responses.okTimestamped(exchange, new FileMessages.Exists(raw, exists));
  }

  // ---- our routes ----

  /** {@code POST /api/stat}: what lstat says about one path; a final link is described, not followed. */
  void stat(HttpExchange exchange) throws IOException {
    Json body = readBody(exchange, Set.of("path", "sessionId"));
    String raw = body.string("path");
    FileMessages.Stat answer;
    try (Anchor a = workspace.resolve("path", raw, false, false)) {
      PosixFileAttributes attrs = WorkspaceFiles.posix(a, "path", raw);
      try {
        int mode = (Integer) Files.getAttribute(a.path(), "unix:mode", a.linkOptions());
        answer = new FileMessages.Stat(true, raw, a.logical().toString(), type(attrs), attrs.size(),
            String.format(Locale.ROOT, "%04o", mode & 07777), attrs.lastModifiedTime().toInstant().toString(),
            Integer.toUnsignedLong((Integer) Files.getAttribute(a.path(), "unix:uid", a.linkOptions())),
            Integer.toUnsignedLong((Integer) Files.getAttribute(a.path(), "unix:gid", a.linkOptions())),
            attrs.isSymbolicLink() ? Files.readSymbolicLink(a.path()).toString() : null);
      } catch (IOException e) {
        throw PathErrors.failure(e, "path", raw);
      }
    }
    Responses.okTimestamped(exchange, answer);
  }

  // ---- helpers ----

  Json readBody(HttpExchange exchange, Set<String> allowed) throws IOException {
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
    files.move(fromField, fromRaw, toField, toRaw);
    Responses.okTimestamped(exchange, new FileMessages.Moved(fromRaw, toRaw));
  }

  private static AgentException tooLargeForJson(String raw, long size, long limit) {
    return new AgentException(ErrorCode.FILE_TOO_LARGE, "'" + PathErrors.shorten(raw) + "' has " + size
        + " bytes, more than the " + limit + " a JSON answer may carry; read it with POST /api/read/stream"
        + " or GET /api/files/raw?path=...", Map.of("path", PathErrors.shorten(raw), "size", size, "limit", limit));
  }

  private static FileMessages.FileInfo fileInfo(Path base, Tree.Entry e) {
    PosixFileAttributes a = e.attributes();
    Set<PosixFilePermission> perms = a.permissions();
    return new FileMessages.FileInfo(e.name(), base.resolve(e.relativePath()).toString(), e.relativePath(), type(a),
        a.size(), a.lastModifiedTime().toInstant().toString(), PosixFilePermissions.toString(perms),
        new FileMessages.Permissions(perms.contains(PosixFilePermission.OWNER_READ),
            perms.contains(PosixFilePermission.OWNER_WRITE), perms.contains(PosixFilePermission.OWNER_EXECUTE)));
  }

  private static String type(BasicFileAttributes a) {
    return a.isSymbolicLink() ? "symlink" : a.isDirectory() ? "directory" : a.isRegularFile() ? "file" : "other";
  }
}
