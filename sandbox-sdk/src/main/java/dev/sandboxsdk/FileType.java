package dev.sandboxsdk;

/** What a path in the sandbox is; symbolic links are reported as links, not followed. */
public enum FileType {
  /** A regular file. */
  FILE,
  /** A directory. */
  DIRECTORY,
  /** A symbolic link (listing and {@link SandboxFiles#stat(String)} describe the link itself). */
  SYMLINK,
  /** Anything else: a FIFO, a socket, a device. */
  OTHER
}
