package dev.sandboxsdk.agent.fs;

import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFileAttributes;
import java.util.Map;

/**
 * What the file routes do to the workspace: write, delete, make directories, move, and the checks
 * they share (the kind of file, the workspace itself), every path resolved through {@link
 * Workspace} so none leads outside it. {@code field} and {@code raw} name the request's field and
 * path in errors.
 */
public final class WorkspaceFiles {
  private final Workspace workspace;

  public WorkspaceFiles(Workspace workspace) {
    this.workspace = workspace;
  }

  /** Writes {@code bytes} as the whole file {@code raw}, made if missing; never a directory. */
  public void write(String raw, byte[] bytes) {
    try (Anchor a = workspace.resolve("path", raw, true, true)) {
      refuseDirectory(a, raw);
      try (FileChannel ch = FileChannel.open(a.path(), StandardOpenOption.WRITE, StandardOpenOption.CREATE,
          StandardOpenOption.TRUNCATE_EXISTING, LinkOption.NOFOLLOW_LINKS)) {
        ByteBuffer b = ByteBuffer.wrap(bytes);
        while (b.hasRemaining()) {
          ch.write(b);
        }
      } catch (IOException e) {
        throw PathErrors.failure(e, "path", raw);
      }
    }
  }

  /** Deletes {@code raw}, a directory only when {@code recursive}; a final link is deleted, never followed. */
  public void delete(String raw, boolean recursive) {
    try (Anchor a = workspace.resolve("path", raw, false, false)) { // a final link is deleted, never followed
      notTheWorkspace(a, "path", raw, "deleted");
      BasicFileAttributes attrs = attributes(a, "path", raw);
      if (attrs.isDirectory() && !recursive) {
        throw new AgentException(ErrorCode.IS_DIRECTORY, "'" + PathErrors.shorten(raw)
            + "' is a directory; pass \"recursive\": true to delete it with everything in it",
            Map.of("field", "path", "path", PathErrors.shorten(raw)));
      }
      try {
        if (attrs.isDirectory()) {
          Tree.delete(a, "path", raw);
        } else {
          Files.delete(a.path());
        }
      } catch (IOException e) {
        throw PathErrors.failure(e, "path", raw);
      }
    }
  }

  /** Makes the directory {@code raw}; with {@code recursive} its parents too, and an existing one is no error. */
  public void mkdir(String raw, boolean recursive) {
    try (Anchor a = resolveParentOf("path", raw, recursive)) {
      if (a.isWorkspace() || exists(a)) {
        if (!(recursive && isDirectoryFollowed("path", raw))) {
          throw new AgentException(ErrorCode.FILE_EXISTS, "'" + PathErrors.shorten(raw) + "' already exists"
              + (recursive ? " and is not a directory" : ""), Map.of("field", "path", "path", PathErrors.shorten(raw)));
        }
      } else {
        try {
          Files.createDirectory(a.path());
        } catch (FileAlreadyExistsException e) {
          if (!(recursive && isDirectoryFollowed("path", raw))) {
            throw PathErrors.failure(e, "path", raw);
          }
        } catch (IOException e) {
          throw PathErrors.failure(e, "path", raw);
        }
      }
    }
  }

  /** Whether {@code raw} exists; a missing directory on the way (or a file there) means it does not. */
  public boolean exists(String raw) {
    boolean exists;
    try (Anchor a = workspace.resolve("path", raw, true, false)) {
      exists = a.name() == null || exists(a);
    } catch (AgentException e) {
      if (e.code() != ErrorCode.FILE_NOT_FOUND && e.code() != ErrorCode.NOT_DIRECTORY) {
        throw e;
      }
      exists = false; // a directory on the way is missing, or is a file
    }
    return exists;
  }

  /** Moves {@code fromRaw} to {@code toRaw} as mv(1) would, in one rename where the file system allows. */
  public void move(String fromField, String fromRaw, String toField, String toRaw) {
    workspace.relative(toField, toRaw);
    try (Anchor from = workspace.resolve(fromField, fromRaw, false, false)) { // a link is moved itself, never its target
      notTheWorkspace(from, fromField, fromRaw, "moved");
      BasicFileAttributes a = attributes(from, fromField, fromRaw);
      Anchor to = workspace.resolve(toField, toRaw, false, false);
      try {
        // Like mv(1): into an existing directory (not a link to one) it goes under its own name.
        if (to.isWorkspace() || isDirectory(to)) {
          to.close();
          to = workspace.resolve(toField, toRaw + "/" + from.name(), false, false);
        }
        if (a.isDirectory() && to.logical().startsWith(from.logical()) && !to.logical().equals(from.logical())) {
          throw AgentException.invalid(toField, "cannot move the directory '" + PathErrors.shorten(fromRaw)
              + "' into itself");
        }
        checkReplaceable(to, a, toField, toRaw);
        try {
          moveAtomically(from.path(), to.path());
        } catch (IOException e) {
          throw PathErrors.failure(e, toField, toRaw);
        }
      } finally {
        to.close();
      }
    }
  }

  /** rename(2) replaces a file with a file and an empty directory with a directory; say so when neither. */
  private static void checkReplaceable(Anchor to, BasicFileAttributes from, String toField, String toRaw) {
    try {
      BasicFileAttributes target = Files.readAttributes(to.path(), BasicFileAttributes.class, to.linkOptions());
      if (target.isDirectory() && !from.isDirectory()) {
        throw new AgentException(ErrorCode.IS_DIRECTORY, "cannot replace the directory '" + PathErrors.shorten(toRaw)
            + "' with a file", Map.of("field", toField, "path", PathErrors.shorten(toRaw)));
      }
      if (!target.isDirectory() && from.isDirectory()) {
        throw new AgentException(ErrorCode.NOT_DIRECTORY, "cannot replace the file '" + PathErrors.shorten(toRaw)
            + "' with a directory", Map.of("field", toField, "path", PathErrors.shorten(toRaw)));
      }
    } catch (NoSuchFileException e) {
      // the usual case
    } catch (IOException e) {
      throw PathErrors.failure(e, toField, toRaw);
    }
  }

  private static void moveAtomically(Path from, Path to) throws IOException {
    try {
      Files.move(from, to, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    } catch (AtomicMoveNotSupportedException e) {
      Files.move(from, to, StandardCopyOption.REPLACE_EXISTING, LinkOption.NOFOLLOW_LINKS); // another file system
    }
  }

  /** mkdir's target: its directories are made on the way when recursive; otherwise they must exist. */
  private Anchor resolveParentOf(String field, String raw, boolean recursive) {
    try {
      return workspace.resolve(field, raw, false, recursive);
    } catch (AgentException e) {
      if (recursive || e.code() != ErrorCode.FILE_NOT_FOUND) {
        throw e;
      }
      throw new AgentException(ErrorCode.FILE_NOT_FOUND, "the parent of '" + PathErrors.shorten(raw) + "' does not"
          + " exist; pass \"recursive\": true to create it too", Map.of("field", field, "path", PathErrors.shorten(raw)));
    }
  }

  /** Whether the path, its final link followed inside the workspace, is a directory. */
  private boolean isDirectoryFollowed(String field, String raw) {
    try (Anchor a = workspace.resolve(field, raw, true, false)) {
      return a.name() == null;
    }
  }

  private static boolean exists(Anchor a) {
    return Files.exists(a.path(), a.linkOptions());
  }

  private static boolean isDirectory(Anchor a) {
    return Files.isDirectory(a.path(), a.linkOptions());
  }

  private static void notTheWorkspace(Anchor a, String field, String raw, String verb) {
    if (a.isWorkspace()) {
      throw new AgentException(ErrorCode.PERMISSION_DENIED, "the workspace itself cannot be " + verb,
          Map.of("field", field, "path", PathErrors.shorten(raw)));
    }
  }

  public static BasicFileAttributes attributes(Anchor a, String field, String raw) {
    return posix(a, field, raw);
  }

  public static PosixFileAttributes posix(Anchor a, String field, String raw) {
    try {
      return Files.readAttributes(a.path(), PosixFileAttributes.class, a.linkOptions());
    } catch (IOException e) {
      throw PathErrors.failure(e, field, raw);
    }
  }

  /** A regular file, or the matching error (a FIFO or device would block or never end). */
  public static BasicFileAttributes regularFile(Anchor a, String raw) {
    BasicFileAttributes attrs = attributes(a, "path", raw);
    if (attrs.isDirectory()) {
      throw new AgentException(ErrorCode.IS_DIRECTORY, "'" + PathErrors.shorten(raw) + "' is a directory, not a file",
          Map.of("field", "path", "path", PathErrors.shorten(raw)));
    }
    if (attrs.isSymbolicLink()) {
      throw new AgentException(ErrorCode.FILE_NOT_FOUND, "'" + PathErrors.shorten(raw)
          + "' is a symbolic link to nothing", Map.of("field", "path", "path", PathErrors.shorten(raw)));
    }
    if (!attrs.isRegularFile()) {
      throw AgentException.invalid("path", "'" + PathErrors.shorten(raw) + "' is not a regular file"
          + " (a device, FIFO or socket)");
    }
    return attrs;
  }

  public static void refuseDirectory(Anchor a, String raw) {
    if (a.name() == null || Files.isDirectory(a.path(), LinkOption.NOFOLLOW_LINKS)) {
      throw new AgentException(ErrorCode.IS_DIRECTORY, "'" + PathErrors.shorten(raw) + "' is a directory",
          Map.of("field", "path", "path", PathErrors.shorten(raw)));
    }
  }

  /**
   * Opens a held file for reading once it is known to be a regular file (a FIFO a command put there
   * would hang the open); the descriptor fixes which file both the check and the open see.
   */
  public static FileChannel openForReading(Anchor file, String raw) {
    regularFile(file, raw);
    try {
      return FileChannel.open(file.path(), StandardOpenOption.READ);
    } catch (IOException e) {
      throw PathErrors.failure(e, "path", raw);
    }
  }
}
