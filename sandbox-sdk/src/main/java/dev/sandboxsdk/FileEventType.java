package dev.sandboxsdk;

/**
 * What a {@link FileEvent} of {@link SandboxFiles#watch(String, WatchOptions)} says happened.
 *
 * <p>A move or rename is not a type of its own: the kernel interface the agent reads (inotify,
 * through the JDK's {@code WatchService}) does not pair the two names, so a move is a
 * {@link #DELETE} of the old path and a {@link #CREATE} of the new one. New types may be added.
 */
public enum FileEventType {
  /**
   * The first event of every watch: the agent now watches the directory (and, recursively, its
   * subdirectories), so every change after this event is reported. Its path is the watched directory.
   */
  WATCHING,
  /** A file, directory or link appeared (created, or moved or renamed to this path). */
  CREATE,
  /** A file's contents or any entry's attributes (mode, owner, times) changed. */
  MODIFY,
  /** An entry disappeared (deleted, or moved or renamed away from this path). */
  DELETE,
  /**
   * Events were lost: the kernel's queue overflowed, or the subscriber read more slowly than the
   * files changed and the agent's bounded queue for this watch filled up. The path is the watched
   * directory; list it again ({@link SandboxFiles#list(String, ListOptions)}) to learn its state.
   */
  OVERFLOW
}
