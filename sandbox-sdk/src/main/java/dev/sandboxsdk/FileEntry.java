package dev.sandboxsdk;

import java.time.Instant;
import java.util.Objects;

/**
 * One entry of a directory listing ({@link SandboxFiles#list(String, ListOptions)}).
 *
 * @param name the entry's file name, e.g. {@code app.py}
 * @param relativePath the path relative to the listed directory, e.g. {@code src/app.py}
 * @param absolutePath the absolute path as the agent sees it, e.g. {@code /workspace/src/app.py}
 * @param type file, directory, symbolic link (not followed) or other
 * @param size the size in bytes (of the link itself for a link)
 * @param modifiedAt the last modification time
 * @param mode the permission bits, e.g. {@code 0755} (octal); {@link #permissions()} spells them out
 */
public record FileEntry(String name, String relativePath, String absolutePath, FileType type, long size,
    Instant modifiedAt, int mode) {

  /** Validates. */
  public FileEntry {
    Objects.requireNonNull(name, "name == null");
    Objects.requireNonNull(relativePath, "relativePath == null");
    Objects.requireNonNull(absolutePath, "absolutePath == null");
    Objects.requireNonNull(type, "type == null");
    Objects.requireNonNull(modifiedAt, "modifiedAt == null");
  }

  /** Whether this is a regular file. */
  public boolean isFile() {
    return type == FileType.FILE;
  }

  /** Whether this is a directory. */
  public boolean isDirectory() {
    return type == FileType.DIRECTORY;
  }

  /** The permission bits in {@code ls} style, e.g. {@code rwxr-xr-x}. */
  public String permissions() {
    return FileStat.permissionString(mode);
  }
}
