package dev.sandboxsdk.agent.files;

import static dev.sandboxsdk.agent.fs.WorkspaceFiles.refuseDirectory;

import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.fs.Anchor;
import dev.sandboxsdk.agent.fs.PathErrors;
import dev.sandboxsdk.agent.fs.Tree;
import dev.sandboxsdk.agent.fs.Workspace;
import dev.sandboxsdk.agent.fs.WorkspaceFiles;
import dev.sandboxsdk.agent.process.OutputBudget;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFileAttributes;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the file routes do, without HTTP: read a whole file as text or base64 within the agent's
 * buffer budget, write one from a string, list a directory, describe a path, and take a stream
 * as a file atomically. Every path is resolved through the {@link Workspace} (the {@code agent.fs}
 * layer) so none leads outside it; errors name the request's field and path.
 */
final class FileOperations {
  private static final Logger log = LoggerFactory.getLogger(FileOperations.class);
  /** Cloudflare's cap on a file answered in one JSON body (before base64). */
  static final int MAX_JSON_READ_BYTES = 32 * 1024 * 1024;
  /** The most entries one list-files answer holds; more sets {@code truncated}. */
  static final int MAX_LIST_ENTRIES = 10_000;
  /** Files up to this size are not charged to the budget, as request bodies up to it are not. */
  private static final int UNCHARGED_BYTES = 16 * 1024;
  /** Buffer of an upload. */
  private static final int UPLOAD_BUFFER = 64 * 1024;

  private final OutputBudget budget;
  private final Workspace workspace;
  private final WorkspaceFiles files;

  FileOperations(OutputBudget budget, Workspace workspace) {
    this.budget = budget;
    this.workspace = workspace;
    this.files = new WorkspaceFiles(workspace);
  }

  /** The workspace's own operations (write, delete, mkdir, move, exists). */
  WorkspaceFiles files() {
    return files;
  }

  /**
   * A file read whole; holds its share of the budget until closed (after the answer is sent).
   *
   * @param content the file as UTF-8 text, or base64 when {@code text} is false
   * @param release gives the budget's share back
   */
  record WholeFile(String content, boolean text, String mimeType, int size, Runnable release)
      implements AutoCloseable {
    @Override
    public void close() {
      release.run();
    }
  }

  /**
   * Reads {@code raw} whole: as text when {@code encoding} is {@code utf-8}, as base64 when it is
   * {@code base64}, and when null as text if the file's type is text and its bytes UTF-8.
   *
   * @throws AgentException FILE_TOO_LARGE past the answer's cap, OUTPUT_BUDGET_EXHAUSTED when the
   *     budget has no room, or the path's error
   * @throws IOException if the file failed other than as a path error (its size, or closing it)
   */
  WholeFile read(String raw, String encoding) throws IOException {
    WholeFile[] read = new WholeFile[1];
    try {
      return read(raw, encoding, read);
    } catch (IOException | RuntimeException | Error e) {
      if (read[0] != null) {
        read[0].close(); // closing the file failed after it was read
      }
      throw e;
    }
  }

  private WholeFile read(String raw, String encoding, WholeFile[] read) throws IOException {
    try (Anchor a = workspace.resolve("path", raw, true, false); Anchor file = a.hold("path", raw);
        FileChannel ch = WorkspaceFiles.openForReading(file, raw)) {
      long size = ch.size(); // of what was opened: a swap after the open changes nothing
      long limit = Math.min(MAX_JSON_READ_BYTES, budget.limit() / 4);
      if (size > limit) {
        throw tooLargeForJson(raw, size, limit);
      }
      // The bytes, the text or base64 string, and the JSON answer are in memory at once.
      long charge = size <= UNCHARGED_BYTES ? 0 : 4 * size;
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
        read[0] = new WholeFile(content, text, mime, bytes.length, () -> budget.release(charge));
        return read[0];
      } finally {
        if (read[0] == null) {
          budget.release(charge);
        }
      }
    }
  }

  /**
   * Writes {@code content} as the whole file {@code raw}: base64 when {@code encoding} says so,
   * else UTF-8 text. A bad path is reported before a missing content.
   */
  void write(String raw, String content, String encoding) {
    workspace.relative("path", raw);
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
  }

  /** A directory's entries (at most {@value #MAX_LIST_ENTRIES}) and the path they are relative to. */
  record Listing(Path base, List<Tree.Entry> entries, boolean truncated) {
  }

  /**
   * Lists the directory {@code raw}, with its subdirectories when {@code recursive}, with names
   * starting with a dot when {@code hidden}.
   *
   * @throws AgentException NOT_DIRECTORY, or the path's error
   */
  Listing list(String raw, boolean recursive, boolean hidden) {
    List<Tree.Entry> entries = new ArrayList<>();
    try (Anchor dir = workspace.resolve("path", raw, true, false)) {
      if (dir.name() != null) { // the walk ended at something that is not a directory (or nothing)
        WorkspaceFiles.attributes(dir, "path", raw);
        throw new AgentException(ErrorCode.NOT_DIRECTORY, "'" + PathErrors.shorten(raw) + "' is not a directory",
            Map.of("field", "path", "path", PathErrors.shorten(raw)));
      }
      boolean truncated;
      try {
        truncated = Tree.list(dir, recursive, hidden, "path", raw, e -> {
          if (entries.size() >= MAX_LIST_ENTRIES) {
            return false;
          }
          entries.add(e);
          return true;
        });
      } catch (IOException e) {
        throw PathErrors.failure(e, "path", raw);
      }
      return new Listing(dir.logical(), entries, truncated);
    }
  }

  /** What lstat says about a path; {@code mode} holds the permission bits, {@code symlinkTarget} is only for a link. */
  record Stat(String absolutePath, PosixFileAttributes attributes, int mode, long uid, long gid, String symlinkTarget) {
  }

  /** Describes {@code raw}; a final link is described, not followed. */
  Stat stat(String raw) {
    try (Anchor a = workspace.resolve("path", raw, false, false)) {
      PosixFileAttributes attrs = WorkspaceFiles.posix(a, "path", raw);
      try {
        int mode = (Integer) Files.getAttribute(a.path(), "unix:mode", a.linkOptions());
        return new Stat(a.logical().toString(), attrs, mode & 07777,
            Integer.toUnsignedLong((Integer) Files.getAttribute(a.path(), "unix:uid", a.linkOptions())),
            Integer.toUnsignedLong((Integer) Files.getAttribute(a.path(), "unix:gid", a.linkOptions())),
            attrs.isSymbolicLink() ? Files.readSymbolicLink(a.path()).toString() : null);
      } catch (IOException e) {
        throw PathErrors.failure(e, "path", raw);
      }
    }
  }

  /**
   * Makes {@code body} the file {@code raw}: written to a temporary file in the same directory and
   * moved into place atomically, so readers see the old file or the whole new one, never a part.
   * A file replaced keeps its permissions.
   *
   * @return the bytes written
   * @throws IOException if reading {@code body} failed (the client's side)
   */
  long upload(String raw, InputStream body) throws IOException {
    try (Anchor a = workspace.resolve("path", raw, true, true)) {
      refuseDirectory(a, raw);
      Integer previousMode = null;
      try {
        previousMode = (Integer) Files.getAttribute(a.path(), "unix:mode", LinkOption.NOFOLLOW_LINKS) & 07777;
      } catch (NoSuchFileException e) {
        // a new file
      } catch (IOException e) {
        throw PathErrors.failure(e, "path", raw);
      }
      return upload(body, a, raw, previousMode);
    }
  }

  private long upload(InputStream in, Anchor a, String raw, Integer previousMode) throws IOException {
    Path tmp;
    try {
      tmp = Files.createTempFile(a.directory(), "." + a.name() + ".", ".upload"); // O_EXCL: never through a link
    } catch (IOException e) {
      throw PathErrors.failure(e, "path", raw);
    }
    try {
      long written = 0;
      try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS)) {
        byte[] buf = new byte[UPLOAD_BUFFER];
        for (int n; (n = in.read(buf)) >= 0; ) { // an IOException from in is the client's: it closes the connection
          try {
            ByteBuffer b = ByteBuffer.wrap(buf, 0, n);
            while (b.hasRemaining()) {
              ch.write(b);
            }
          } catch (IOException e) {
            throw PathErrors.failure(e, "path", raw);
          }
          written += n;
        }
        try {
          ch.force(false);
        } catch (IOException e) {
          throw PathErrors.failure(e, "path", raw);
        }
      }
      try {
        Files.setAttribute(tmp, "unix:mode", previousMode != null ? previousMode : 0644, LinkOption.NOFOLLOW_LINKS);
        Files.move(tmp, a.path(), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      } catch (IOException e) {
        throw PathErrors.failure(e, "path", raw);
      }
      return written;
    } finally {
      try {
        Files.deleteIfExists(tmp);
      } catch (IOException e) {
        log.debug("cannot remove a partial upload of '{}': {}", PathErrors.shorten(raw), e.toString());
      }
    }
  }

  private static AgentException tooLargeForJson(String raw, long size, long limit) {
    return new AgentException(ErrorCode.FILE_TOO_LARGE, "'" + PathErrors.shorten(raw) + "' has " + size
        + " bytes, more than the " + limit + " a JSON answer may carry; read it with POST /api/read/stream"
        + " or GET /api/files/raw?path=...", Map.of("path", PathErrors.shorten(raw), "size", size, "limit", limit));
  }
}
