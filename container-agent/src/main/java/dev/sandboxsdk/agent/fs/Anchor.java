package dev.sandboxsdk.agent.fs;

import java.nio.file.FileSystemException;
import java.nio.file.LinkOption;
import java.nio.file.Path;

/**
 * Where a caller's path landed inside the workspace: a directory held open by its descriptor, and
 * the name of the entry in it (or none, when the path means that directory itself). {@link #path()}
 * reaches the entry through {@code /proc/self/fd/N}, which the kernel resolves to the very directory
 * the descriptor holds, however a command renames or swaps things meanwhile; the entry's own name
 * is the only component looked up again, so every operation on it must not follow a link there
 * ({@code NOFOLLOW_LINKS}, or a call such as unlink, rename, mkdir or lstat that never does).
 *
 * <p>Close it to release the descriptor. Not thread-safe; one request uses one anchor.
 */
public final class Anchor implements AutoCloseable {
  private final int dirFd;
  private final boolean owned;
  private final String name;
  private final Path logical;
  private final boolean root;
  private boolean closed;

  Anchor(int dirFd, boolean owned, String name, Path logical, boolean root) {
    this.dirFd = dirFd;
    this.owned = owned;
    this.name = name;
    this.logical = logical;
    this.root = root;
  }

  /** The entry (or the directory itself when there is no name), for one file system call. */
  public Path path() {
    return name == null ? directory() : directory().resolve(name);
  }

  /**
   * The options for calls on {@link #path()}: the entry's own name is never followed, while the
   * directory itself is reached through its {@code /proc/self/fd} link, which must be.
   */
  public LinkOption[] linkOptions() {
    return name == null ? new LinkOption[0] : new LinkOption[] {LinkOption.NOFOLLOW_LINKS};
  }

  /** The directory that holds the entry, or the directory itself. */
  public Path directory() {
    return Path.of("/proc/self/fd/" + dirFd);
  }

  /** The entry's name in {@link #directory()}, or null when the anchor is a directory itself. */
  public String name() {
    return name;
  }

  /**
   * The path inside the workspace that the caller's path resolved to, for answers: the workspace's
   * path joined with the names walked (links inside the workspace followed where the operation
   * follows them).
   */
  public Path logical() {
    return logical;
  }

  /** Whether this is the workspace itself. */
  public boolean isWorkspace() {
    return root;
  }

  /**
   * The entry itself held by a descriptor of its own ({@code O_PATH}, not following a link), so
   * that checking its type and opening it act on one file, whatever is renamed meanwhile: opening
   * {@link #path()} of the result opens that file, and a link there fails instead of being
   * followed. The directory itself when there is no name (then sharing this anchor's descriptor).
   */
  public Anchor hold(String field, String raw) {
    if (name == null) {
      return new Anchor(dirFd, false, null, logical, root);
    }
    int fd = FsCalls.openat(dirFd, name, FsCalls.O_PATH | FsCalls.O_NOFOLLOW | FsCalls.O_CLOEXEC, 0);
    if (fd < 0) {
      throw PathErrors.failure(new FileSystemException(raw, null, Workspace.strerror(FsCalls.errno())), field, raw);
    }
    return new Anchor(fd, true, null, logical, root);
  }

  @Override
  public void close() {
    if (!closed && owned) {
      FsCalls.close(dirFd);
    }
    closed = true;
  }
}
