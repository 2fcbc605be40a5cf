package dev.sandboxsdk.agent.files;

import com.sun.net.httpserver.HttpExchange;
import dev.sandboxsdk.agent.AgentConfig;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.fs.Tree;
import dev.sandboxsdk.agent.fs.Workspace;
import dev.sandboxsdk.agent.fs.WorkspaceFiles;
import dev.sandboxsdk.agent.http.Json;
import dev.sandboxsdk.agent.http.Query;
import dev.sandboxsdk.agent.http.Responses;
import dev.sandboxsdk.agent.http.Routes;
import dev.sandboxsdk.agent.process.OutputBudget;
import dev.sandboxsdk.agent.process.ProcessManager;
import java.io.IOException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The file routes: Cloudflare's {@code /api/read}, {@code /api/write}, {@code /api/delete},
 * {@code /api/rename}, {@code /api/move}, {@code /api/mkdir}, {@code /api/list-files} and
 * {@code /api/exists}, and our {@code /api/stat}. Each parses its request, asks {@link
 * FileOperations} (or the workspace's {@link WorkspaceFiles}) and writes the answer. With
 * {@code --command-user}, each runs with that user's file system identity, so what it creates
 * belongs to the user and commands can change it.
 */
public final class FileRoutes {
  private final AgentConfig config;
  private final OutputBudget budget;
  private final Workspace workspace;
  private final FileOperations operations;
  private final WorkspaceFiles files;

  public FileRoutes(ProcessManager processes, Workspace workspace) {
    this.config = processes.config();
    this.budget = processes.outputBudget();
    this.workspace = workspace;
    this.operations = new FileOperations(budget, workspace);
    this.files = operations.files();
  }

  /** Registers the file routes, each run with the command user's file system identity. */
  public void register(Routes routes) {
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

  // ---- Cloudflare's routes ----

  void read(HttpExchange exchange) throws IOException {
    Json body = readBody(exchange, Set.of("path", "encoding", "sessionId"));
    String raw = body.string("path");
    String encoding = encoding(body.string("encoding"));
    try (FileOperations.WholeFile file = operations.read(raw, encoding)) {
      boolean text = file.text();
      Responses.okAsIs(exchange, new FileMessages.Read(true, raw, file.content(), Instant.now().toString(),
          text ? "utf-8" : "base64", !text, file.mimeType(), file.size()));
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
    operations.write(raw, content, encoding);
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
    FileOperations.Listing listing = operations.list(raw, recursive, hidden);
    List<FileMessages.FileInfo> infos = new ArrayList<>(listing.entries().size());
    for (Tree.Entry e : listing.entries()) {
      infos.add(fileInfo(listing.base(), e));
    }
    Responses.okTimestamped(exchange, new FileMessages.Listed(raw, infos, listing.truncated()));
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
    FileOperations.Stat s = operations.stat(raw);
    PosixFileAttributes attrs = s.attributes();
    Responses.okTimestamped(exchange, new FileMessages.Stat(true, raw, s.absolutePath(), type(attrs), attrs.size(),
        String.format(Locale.ROOT, "%04o", s.mode()), attrs.lastModifiedTime().toInstant().toString(), s.uid(), s.gid(),
        s.symlinkTarget()));
  }

  // ---- helpers ----

  /** The body of a file route: no query, only the {@code allowed} fields. */
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
