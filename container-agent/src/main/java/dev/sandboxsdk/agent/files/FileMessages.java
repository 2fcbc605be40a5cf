package dev.sandboxsdk.agent.files;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonInclude.Include;
import java.util.List;

/**
 * Wire records of the file routes ({@link FileRoutes}, {@link FileTransferRoutes}). Unlike the other
 * answers, a file answer starts with {@code success} (Cloudflare's order), so these records carry
 * it as their first component and {@code Responses.okTimestamped} appends only the
 * {@code timestamp}. Components are written in declaration order; a component marked
 * {@code NON_NULL} is left out when null, every other one is always written.
 */
final class FileMessages {
  private FileMessages() {
  }

  /** POST /api/write and /api/delete: the caller's path. */
  record PathAnswer(boolean success, @JsonInclude(Include.NON_NULL) String path) {
    PathAnswer(String path) {
      this(true, path);
    }
  }

  /**
   * POST /api/read. The {@code timestamp} sits before the file's description, where the first
   * version of the route put it; clients parse by name, but the bytes stay as they were.
   */
  record Read(boolean success, @JsonInclude(Include.NON_NULL) String path, String content, String timestamp,
      String encoding, boolean isBinary, String mimeType, int size) {
  }

  /** POST /api/mkdir. */
  record Mkdir(boolean success, @JsonInclude(Include.NON_NULL) String path, boolean recursive) {
    Mkdir(String path, boolean recursive) {
      this(true, path, recursive);
    }
  }

  /** POST /api/list-files; {@code truncated} only when the listing stopped at the entry cap. */
  record Listed(boolean success, @JsonInclude(Include.NON_NULL) String path, List<FileInfo> files, int count,
      @JsonInclude(Include.NON_NULL) Boolean truncated) {
    Listed(String path, List<FileInfo> files, boolean truncated) {
      this(true, path, files, files.size(), truncated ? Boolean.TRUE : null);
    }
  }

  /** One entry of a listing; {@code mode} is the permission string ({@code rw-r--r--}). */
  record FileInfo(String name, String absolutePath, String relativePath, String type, long size, String modifiedAt,
      String mode, Permissions permissions) {
  }

  /** The owner's permissions. */
  record Permissions(boolean readable, boolean writable, boolean executable) {
  }

  /** POST /api/exists. */
  record Exists(boolean success, @JsonInclude(Include.NON_NULL) String path, boolean exists) {
    Exists(String path, boolean exists) {
      this(true, path, exists);
    }
  }

  /** POST /api/rename and /api/move: where it was and where it is now. */
  record Moved(boolean success, String path, String newPath) {
    Moved(String path, String newPath) {
      this(true, path, newPath);
    }
  }

  /** POST /api/stat: what lstat says; {@code mode} in octal, {@code symlinkTarget} only for a link. */
  record Stat(boolean success, @JsonInclude(Include.NON_NULL) String path, String absolutePath, String type, long size,
      String mode, String modifiedAt, long uid, long gid, @JsonInclude(Include.NON_NULL) String symlinkTarget) {
  }

  /** PUT /api/files/raw: the bytes written. */
  record Uploaded(boolean success, @JsonInclude(Include.NON_NULL) String path, long size) {
    Uploaded(String path, long size) {
      this(true, path, size);
    }
  }

  /** The first event of /api/read/stream. */
  record MetadataEvent(String type, String mimeType, long size, boolean isBinary, String encoding) {
    MetadataEvent(String mimeType, long size, boolean isBinary, String encoding) {
      this("metadata", mimeType, size, isBinary, encoding);
    }
  }

  /** A piece of the file: text, or base64 for a binary file; {@code offset} is where its bytes start. */
  record ChunkEvent(String type, String data, long offset) {
    ChunkEvent(String data, long offset) {
      this("chunk", data, offset);
    }
  }

  /** The last event of /api/read/stream. */
  record CompleteEvent(String type, long bytesRead) {
    CompleteEvent(long bytesRead) {
      this("complete", bytesRead);
    }
  }

  /** A failure after the stream started; {@code error} is Cloudflare's field, {@code code} and {@code message} ours. */
  record ErrorEvent(String type, String error, String code, String message) {
    ErrorEvent(String code, String message) {
      this("error", message, code, message);
    }
  }
}
