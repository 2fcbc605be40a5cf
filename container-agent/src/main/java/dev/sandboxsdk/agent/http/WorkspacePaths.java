package dev.sandboxsdk.agent.http;

import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Turns a caller's path into a path inside the workspace, or refuses it. A relative path is
 * resolved against the workspace; an absolute one must lie inside it after normalization. The
 * real path of the nearest existing ancestor must lie inside too, so a symbolic link cannot lead
 * out; whether the final component may be a link that is followed depends on the operation.
 *
 * <p>What this cannot prevent: a process in the sandbox that swaps a checked directory for a link
 * between the check and the use. Files are opened with {@code NOFOLLOW_LINKS} on the final
 * component, which narrows that window to the parent directories.
 */
final class WorkspacePaths {
  /** The workspace as configured (normalized, absolute). */
  private final Path configured;
  /** The workspace's real path: every path this class hands out starts with it. */
  private final Path root;

  WorkspacePaths(Path workspace) {
    this.configured = workspace.toAbsolutePath().normalize();
    Path real;
    try {
      real = configured.toRealPath();
    } catch (IOException e) {
      throw new UncheckedIOException("the workspace " + configured + " is not accessible", e);
    }
    this.root = real;
  }

  Path root() {
    return root;
  }

  /**
   * The path the caller means, inside the workspace, without following its final component.
   *
   * @param field the request field that holds it, named in errors
   */
  Path resolve(String field, String raw) {
    if (raw == null) {
      throw AgentException.invalid(field, "'" + field + "' is required");
    }
    if (raw.isEmpty()) {
      throw AgentException.invalid(field, "'" + field + "' is empty");
    }
    if (raw.indexOf('\0') >= 0) {
      throw AgentException.invalid(field, "'" + field + "' contains a NUL character");
    }
    Path given;
    try {
      given = Path.of(raw);
    } catch (InvalidPathException e) {
      throw AgentException.invalid(field, "'" + field + "' is not a valid path: " + e.getReason());
    }
    Path p;
    if (given.isAbsolute()) {
      p = given.normalize();
      if (!p.startsWith(root) && p.startsWith(configured)) {
        p = root.resolve(configured.relativize(p)); // the workspace named through a link of its own
      }
    } else {
      p = root.resolve(given).normalize();
    }
    if (!p.startsWith(root)) {
      throw outside(field, raw, "it is outside the workspace " + root);
    }
    checkAncestors(field, raw, p);
    return p;
  }

  /** The path with its final component followed if it is a link, still inside the workspace. */
  Path follow(String field, String raw, Path p) {
    if (!Files.isSymbolicLink(p)) {
      return p;
    }
    Path real;
    try {
      real = p.toRealPath();
    } catch (NoSuchFileException e) {
      return p; // a dangling link: the caller treats the path as missing
    } catch (IOException e) {
      throw failure(e, field, raw);
    }
    if (!real.startsWith(root)) {
      throw outside(field, raw, "it is a symbolic link to " + real + ", outside the workspace");
    }
    return real;
  }

  /** The real path of the nearest existing ancestor of {@code p} must be inside the workspace. */
  private void checkAncestors(String field, String raw, Path p) {
    Path parent = p.getParent();
    while (parent != null && parent.startsWith(root)) {
      if (Files.exists(parent, LinkOption.NOFOLLOW_LINKS)) {
        Path real;
        try {
          real = parent.toRealPath();
        } catch (IOException e) {
          if (e instanceof NoSuchFileException) {
            return; // a dangling link in the middle: the operation reports the missing file
          }
          throw failure(e, field, raw);
        }
        if (!real.startsWith(root)) {
          throw outside(field, raw, "its directory " + parent + " leads to " + real + " through a symbolic link,"
              + " outside the workspace");
        }
        return;
      }
      parent = parent.getParent();
    }
  }

  private static AgentException outside(String field, String raw, String why) {
    return new AgentException(ErrorCode.PERMISSION_DENIED, "path '" + shorten(raw) + "' is not allowed: " + why,
        Map.of("field", field, "path", shorten(raw)));
  }

  /** What the caller sees for a path in messages: what they sent. */
  static String shorten(String raw) {
    return raw.length() > 300 ? raw.substring(0, 300) + "..." : raw;
  }

  /** Maps a file system failure to the protocol's error, naming the caller's path. */
  static AgentException failure(IOException e, String field, String raw) {
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
