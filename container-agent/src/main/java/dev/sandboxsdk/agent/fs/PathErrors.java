package dev.sandboxsdk.agent.fs;

import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The protocol's errors for file system failures. They name the path the caller sent, never the
 * path the agent resolved it to (a descriptor's {@code /proc/self/fd/...} or a place outside the
 * workspace).
 */
public final class PathErrors {
  private PathErrors() {}

  /** What the caller sees for a path in messages: what they sent. */
  public static String shorten(String raw) {
    return raw.length() > 300 ? raw.substring(0, 300) + "..." : raw;
  }

  /** Maps a file system failure to the protocol's error, naming the caller's path. */
  public static AgentException failure(IOException e, String field, String raw) {
    String path = shorten(raw);
    Map<String, Object> context = new LinkedHashMap<>();
    context.put("field", field);
    context.put("path", path);
    String reason = e instanceof FileSystemException && ((FileSystemException) e).getReason() != null
        ? ((FileSystemException) e).getReason() : String.valueOf(e.getMessage());
    if (e instanceof NoSuchFileException || reason.contains("No such file or directory")) {
      return new AgentException(ErrorCode.FILE_NOT_FOUND, "file not found: " + path, context);
    }
    if (e instanceof AccessDeniedException) {
      return new AgentException(ErrorCode.PERMISSION_DENIED, "permission denied: " + path, context);
    }
    if (e instanceof FileAlreadyExistsException || reason.contains("File exists")) {
      return new AgentException(ErrorCode.FILE_EXISTS, "already exists: " + path, context);
    }
    if (e instanceof DirectoryNotEmptyException || reason.contains("Directory not empty")) {
      return new AgentException(ErrorCode.FILE_EXISTS, "directory not empty: " + path, context);
    }
    if (e instanceof NotDirectoryException || reason.contains("Not a directory")) {
      return new AgentException(ErrorCode.NOT_DIRECTORY, "not a directory: " + path, context);
    }
    if (reason.contains("Is a directory")) {
      return new AgentException(ErrorCode.IS_DIRECTORY, "is a directory: " + path, context);
    }
    if (reason.contains("No space left") || reason.contains("quota exceeded")) {
      return new AgentException(ErrorCode.NO_SPACE, "no space left on the device (or quota exceeded) for " + path, context);
    }
    if (reason.contains("File name too long")) {
      return new AgentException(ErrorCode.NAME_TOO_LONG, "file name too long: " + path, context);
    }
    if (reason.contains("Read-only file system")) {
      return new AgentException(ErrorCode.READ_ONLY, "read-only file system: " + path, context);
    }
    if (reason.contains("Too many levels of symbolic links")) {
      return new AgentException(ErrorCode.TOO_MANY_LINKS, "too many levels of symbolic links: " + path, context);
    }
    if (reason.contains("Permission denied") || reason.contains("Operation not permitted")) {
      return new AgentException(ErrorCode.PERMISSION_DENIED, "permission denied: " + path, context);
    }
    return new AgentException(ErrorCode.FILESYSTEM_ERROR, "file system error on " + path + ": " + reason, context);
  }
}
