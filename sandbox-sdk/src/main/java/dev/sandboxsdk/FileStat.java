package dev.sandboxsdk;

import java.time.Instant;
import java.util.Locale;
import java.util.Objects;

/**
 * What the sandbox's file system says about one path ({@link SandboxFiles#stat(String)}). A
 * symbolic link is described itself, not what it points to.
 *
 * @param path the path as it was asked for
 * @param absolutePath the absolute path as the agent sees it, e.g. {@code /workspace/notes.txt}
 * @param type file, directory, symbolic link or other
 * @param size the size in bytes
 * @param mode the mode bits including setuid, setgid and sticky, e.g. {@code 0644} (octal)
 * @param modifiedAt the last modification time
 * @param uid the owner's user id, or -1 if the agent did not say
 * @param gid the owner's group id, or -1 if the agent did not say
 * @param symlinkTarget where a symbolic link points (as written in the link), or null if this is no link
 */
public record FileStat(String path, String absolutePath, FileType type, long size, int mode, Instant modifiedAt,
    long uid, long gid, String symlinkTarget) {

  /** Validates. */
  public FileStat {
    Objects.requireNonNull(path, "path == null");
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

  /** Whether this is a symbolic link. */
  public boolean isSymlink() {
    return type == FileType.SYMLINK;
  }

  /** The mode as four octal digits, e.g. {@code "0644"}. */
  public String octalMode() {
    return String.format(Locale.ROOT, "%04o", mode & 07777);
  }

  /** The permission bits in {@code ls} style, e.g. {@code rw-r--r--}. */
  public String permissions() {
    return permissionString(mode);
  }

  static String permissionString(int mode) {
    char[] out = new char[9];
    String letters = "rwxrwxrwx";
    for (int i = 0; i < 9; i++) {
      out[i] = (mode & (1 << (8 - i))) != 0 ? letters.charAt(i) : '-';
    }
    return new String(out);
  }
}
