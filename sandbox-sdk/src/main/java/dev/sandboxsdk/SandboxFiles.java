package dev.sandboxsdk;

import dev.sandboxsdk.local.LocalSandbox;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Flow;

/**
 * The files of a sandbox: read, write, list, move and delete them ({@link Sandbox#files()}).
 *
 * <pre>{@code
 * SandboxFiles files = sandbox.files();
 * files.writeString("src/app.py", "print('hi')\n");
 * sandbox.exec("python3 src/app.py");                        // commands see the same files
 * for (FileEntry e : files.list("src", ListOptions.recursively())) {
 *   System.out.println(e.relativePath() + " " + e.size());
 * }
 * try (InputStream in = files.open("build/report.tar.gz")) { // streamed, any size
 *   Files.copy(in, Path.of("report.tar.gz"));
 * }
 * }</pre>
 *
 * <p><b>Paths.</b> A relative path is resolved against the sandbox's workspace (the default
 * working directory of commands, {@code /workspace} in a container); an absolute one must lie
 * inside the workspace. A path that leads out, also through a symbolic link, is refused with
 * {@link SandboxPermissionException}. Paths never reach a shell, so any character but NUL is
 * allowed in a name.
 *
 * <p><b>Bytes, not text.</b> Contents go over the agent's raw file routes byte for byte:
 * {@link #writeBytes} then {@link #readBytes} returns exactly what was written. The string
 * methods encode and decode UTF-8; invalid bytes read as text become U+FFFD.
 *
 * <p><b>Memory.</b> {@link #open}, {@link #write(String, InputStream)}, {@link #download} and
 * {@link #upload} stream with fixed-size buffers on both sides, whatever the file's size.
 * {@link #readBytes} and {@link #readString} hold the whole file (at most 2 GiB) and
 * {@link #writeBytes} and {@link #writeString} the data the caller passed: use the streaming
 * methods for large files.
 *
 * <p><b>Writes are atomic.</b> Every write sends the whole content to a temporary file next to the
 * target and renames it into place, so readers (and commands) see the old file or the complete new
 * one, never a part; missing parent directories are created, and an existing file keeps its mode
 * (a new one gets {@code 0644}). In a container, files the SDK creates belong to the user commands
 * run as.
 *
 * <p><b>Errors.</b> Every method throws unchecked exceptions: {@link SandboxFileNotFoundException}
 * if the path does not exist; {@link SandboxPermissionException} for a path outside the workspace
 * or one the file system refuses; {@link SandboxInvalidRequestException} for other refusals (a
 * directory where a file is expected, {@code IS_DIRECTORY}; a file where a directory is expected,
 * {@code NOT_DIRECTORY}; something in the way, {@code FILE_EXISTS}); {@link SandboxServerException}
 * when the agent fails, for example with {@code NO_SPACE} when the disk or quota is full; plus the
 * connection, timeout and auth exceptions of every {@link Sandbox} call. {@link SandboxException#code()}
 * has the agent's code and {@link SandboxException#context()} the {@code path}. Failures of the
 * local side (a {@link Path} that cannot be read or written, an {@link InputStream} that throws)
 * are {@link UncheckedIOException}s.
 *
 * <p><b>Threading.</b> Thread-safe: any number of threads may use the view at once. Each call
 * blocks the calling thread until the agent answered. A call in flight counts as activity, so the
 * idle timeout of a {@link LocalSandbox} does not stop the agent during a long transfer. After
 * the sandbox is closed every method throws {@link IllegalStateException}.
 */
public interface SandboxFiles {

  // ---- reading

  /**
   * Reads a whole file as UTF-8 text; bytes that are not UTF-8 become U+FFFD.
   *
   * @throws SandboxFileNotFoundException if there is no such file
   * @throws SandboxInvalidRequestException if the path is a directory ({@code IS_DIRECTORY})
   * @throws SandboxPermissionException if the path leads outside the workspace or may not be read
   * @throws SandboxException for other failures (see the type's documentation)
   */
  String readString(String path);

  /**
   * Reads a whole file, byte for byte. Holds the file in memory: for large files use
   * {@link #open(String)} or {@link #download(String, Path)}.
   *
   * @throws SandboxFileNotFoundException if there is no such file
   * @throws SandboxInvalidRequestException if the path is a directory, or the file has 2 GiB or more
   * @throws SandboxPermissionException if the path leads outside the workspace or may not be read
   * @throws SandboxException for other failures (see the type's documentation)
   */
  byte[] readBytes(String path);

  /**
   * Opens a file for streaming: the bytes arrive as the caller reads them, with bounded memory
   * whatever the file's size. Errors the agent finds before sending (missing file, directory,
   * permission) are thrown here; a connection that breaks later, or a body shorter than announced,
   * is an {@link java.io.IOException} from {@code read}. The caller must close the stream (until
   * then it holds a connection and counts as activity); closing the sandbox breaks it.
   *
   * @throws SandboxFileNotFoundException if there is no such file
   * @throws SandboxInvalidRequestException if the path is a directory
   * @throws SandboxPermissionException if the path leads outside the workspace or may not be read
   * @throws SandboxException for other failures (see the type's documentation)
   */
  InputStream open(String path);

  /**
   * Copies a file of the sandbox to a local file, streaming. The bytes go to a temporary file
   * next to {@code target} that replaces {@code target} only once it is complete; if the transfer
   * fails, {@code target} is unchanged.
   *
   * @param path the file in the sandbox
   * @param target the local file to create or replace; its directory must exist
   * @throws SandboxFileNotFoundException if there is no such file in the sandbox
   * @throws UncheckedIOException if the local file cannot be written
   * @throws SandboxException for other failures (see the type's documentation)
   */
  void download(String path, Path target);

  // ---- writing

  /**
   * Writes text as UTF-8, replacing the file if it exists (atomically, see the type's
   * documentation) and creating missing parent directories.
   *
   * @throws SandboxInvalidRequestException if the path is a directory ({@code IS_DIRECTORY}) or a
   *     parent is a file ({@code NOT_DIRECTORY})
   * @throws SandboxPermissionException if the path leads outside the workspace or may not be written
   * @throws SandboxServerException with code {@code NO_SPACE} if the disk or quota is full
   * @throws SandboxException for other failures (see the type's documentation)
   */
  void writeString(String path, String content);

  /**
   * Writes bytes, replacing the file if it exists; see {@link #writeString(String, String)}.
   *
   * @throws SandboxException as {@link #writeString(String, String)}
   */
  void writeBytes(String path, byte[] data);

  /**
   * Writes everything {@code data} yields until its end, streaming: memory stays bounded whatever
   * the size. Does not close {@code data}. The file appears (atomically) only when all of it
   * arrived; if {@code data} throws or the connection breaks, the file is unchanged. The agent must
   * receive the whole body within its request timeout ({@code --request-timeout-seconds}, 30 s by
   * default), so a slow source needs an agent started with a larger one.
   *
   * @throws UncheckedIOException if reading {@code data} fails (nothing was written)
   * @throws SandboxException as {@link #writeString(String, String)}
   */
  void write(String path, InputStream data);

  /**
   * Copies a local file into the sandbox, streaming; see {@link #write(String, InputStream)}.
   *
   * @param source the local file
   * @param path where it goes in the sandbox
   * @throws UncheckedIOException if {@code source} is not a readable regular file
   * @throws SandboxException as {@link #writeString(String, String)}
   */
  void upload(Path source, String path);

  // ---- directories

  /**
   * The entries of a directory, without hidden ones, names sorted; see {@link #list(String, ListOptions)}.
   *
   * @throws SandboxException as {@link #list(String, ListOptions)}
   */
  List<FileEntry> list(String path);

  /**
   * The entries of a directory, or of its whole tree: in pre-order (a directory before what it
   * contains), names sorted. Symbolic links are listed, never followed. The agent answers at most
   * 10,000 entries; for a larger tree this throws rather than return part of it, and the caller
   * lists directory by directory.
   *
   * @throws SandboxFileNotFoundException if there is no such directory
   * @throws SandboxInvalidRequestException if the path is not a directory ({@code NOT_DIRECTORY})
   * @throws SandboxPermissionException if the path leads outside the workspace or may not be read
   * @throws SandboxException if the listing has more than 10,000 entries, and for other failures
   */
  List<FileEntry> list(String path, ListOptions options);

  /**
   * Creates a directory and any missing parents (as {@code mkdir -p}); nothing happens if it
   * exists already.
   *
   * @throws SandboxInvalidRequestException if the path or a parent is a file
   *     ({@code FILE_EXISTS}, {@code NOT_DIRECTORY})
   * @throws SandboxPermissionException if the path leads outside the workspace or may not be written
   * @throws SandboxException for other failures (see the type's documentation)
   */
  void mkdir(String path);

  // ---- changing

  /**
   * Deletes a file or a symbolic link (not what it points to). A directory, even an empty one, is
   * refused: use {@link #deleteRecursively(String)}.
   *
   * @throws SandboxFileNotFoundException if there is nothing at the path
   * @throws SandboxInvalidRequestException if the path is a directory ({@code IS_DIRECTORY})
   * @throws SandboxPermissionException if the path is the workspace itself or leads outside it
   * @throws SandboxException for other failures (see the type's documentation)
   */
  void delete(String path);

  /**
   * Deletes a file, a symbolic link (not what it points to), or a directory with everything in it
   * (as {@code rm -r}).
   *
   * @throws SandboxFileNotFoundException if there is nothing at the path
   * @throws SandboxPermissionException if the path is the workspace itself or leads outside it
   * @throws SandboxException for other failures (see the type's documentation)
   */
  void deleteRecursively(String path);

  /**
   * Renames a file, link or directory; behaves exactly like {@link #move(String, String)} (the
   * agent's {@code rename} route, kept for Cloudflare's vocabulary).
   *
   * @throws SandboxException as {@link #move(String, String)}
   */
  void rename(String from, String to);

  /**
   * Moves a file, link or directory, like {@code mv}: if {@code to} is an existing directory,
   * {@code from} goes into it under its own name; otherwise {@code to} is replaced atomically (a
   * file by a file, a directory by a directory only if that one is empty).
   *
   * @throws SandboxFileNotFoundException if {@code from} or the directory of {@code to} does not exist
   * @throws SandboxInvalidRequestException if a file would replace a directory ({@code IS_DIRECTORY})
   *     or the reverse ({@code NOT_DIRECTORY}), the target directory is not empty ({@code FILE_EXISTS}),
   *     or a directory would move into itself
   * @throws SandboxPermissionException if either path leads outside the workspace, or {@code from}
   *     is the workspace itself
   * @throws SandboxException for other failures (see the type's documentation)
   */
  void move(String from, String to);

  // ---- asking

  /**
   * Whether something exists at the path (a final symbolic link is followed: a dangling link does
   * not exist).
   *
   * @throws SandboxPermissionException if the path leads outside the workspace
   * @throws SandboxException for other failures (see the type's documentation)
   */
  boolean exists(String path);

  /**
   * What the file system says about the path; a symbolic link is described itself, not followed.
   *
   * @throws SandboxFileNotFoundException if there is nothing at the path
   * @throws SandboxPermissionException if the path leads outside the workspace
   * @throws SandboxException for other failures (see the type's documentation)
   */
  FileStat stat(String path);

  // ---- watching

  /**
   * Watches a directory and everything below it (without {@code .git}, {@code node_modules} and
   * {@code .DS_Store}); see {@link #watch(String, WatchOptions)}.
   *
   * @throws SandboxException as {@link #watch(String, WatchOptions)}
   */
  default Flow.Publisher<FileEvent> watch(String path) {
    return watch(path, WatchOptions.defaults());
  }

  /**
   * Watches a directory for changes: an endless stream of {@link FileEvent}s that starts with
   * {@link FileEventType#WATCHING} once the agent watches every directory, then one event per
   * created, modified or deleted entry, as the agent's kernel reports them (inotify).
   *
   * <pre>{@code
   * files.watch("src").subscribe(new Flow.Subscriber<>() {
   *   Flow.Subscription s;
   *   public void onSubscribe(Flow.Subscription s) { this.s = s; s.request(Long.MAX_VALUE); }
   *   public void onNext(FileEvent e) { System.out.println(e.type() + " " + e.relativePath()); }
   *   public void onError(Throwable t) { t.printStackTrace(); }
   *   public void onComplete() { System.out.println("the directory is gone"); }
   * });
   * }</pre>
   *
   * <p>The publisher is lazy (nothing is sent before the first {@code request}), single-use (a
   * second subscriber gets {@code onError(IllegalStateException)}) and honours demand: events are
   * read only while the subscriber has asked for more. A subscriber that falls behind does not
   * make the agent buffer without bound: it receives {@link FileEventType#OVERFLOW} where events
   * were dropped. {@code cancel()} closes the connection, and the agent releases the watch.
   *
   * <p>What is reported: a move or rename is a {@code DELETE} of the old path and a {@code CREATE}
   * of the new one; a directory that appears (made, or moved in) is watched at once, and what it
   * already holds is reported as created, sometimes twice; a directory that disappears is one
   * {@code DELETE}, its contents get no events of their own. Changes inside a directory the agent
   * may not read are not seen. The stream completes ({@code onComplete}) when the watched
   * directory is deleted, moved or replaced, or the agent stops; it fails if the connection breaks.
   * A watch in progress counts as activity for the idle timeout of a {@link LocalSandbox}.
   *
   * @param path the directory to watch
   * @param options recursion and filters
   * @throws NullPointerException if {@code path} or {@code options} is null (at once); everything
   *     else is delivered to {@code onError}: {@link SandboxFileNotFoundException} if there is no
   *     such directory, {@link SandboxInvalidRequestException} if it is a file ({@code
   *     NOT_DIRECTORY}) or a pattern is refused, {@link SandboxPermissionException} if the path
   *     leads outside the workspace, {@link SandboxServerException} with code {@code
   *     TOO_MANY_WATCHES} if the agent's limits (16 watches at once, 8,192 directories per watch)
   *     or the system's inotify limits are reached, and the connection, timeout and auth
   *     exceptions of every call
   */
  Flow.Publisher<FileEvent> watch(String path, WatchOptions options);
}
