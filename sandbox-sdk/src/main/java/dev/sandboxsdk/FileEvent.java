package dev.sandboxsdk;

import java.time.Instant;
import java.util.Objects;

/**
 * One change seen by {@link SandboxFiles#watch(String, WatchOptions)}.
 *
 * @param type what happened; {@link FileEventType#WATCHING} and {@link FileEventType#OVERFLOW}
 *     name the watched directory itself
 * @param relativePath the path relative to the watched directory, e.g. {@code src/app.py}; empty
 *     for the watched directory itself
 * @param absolutePath the absolute path as the agent sees it, e.g. {@code /workspace/src/app.py}
 *     (links on the way to the watched directory resolved)
 * @param isDirectory whether the entry is (or, for {@link FileEventType#DELETE}, was) a directory
 *     the agent knew of; a link to a directory is not one
 * @param timestamp when the agent sent the event
 */
public record FileEvent(FileEventType type, String relativePath, String absolutePath, boolean isDirectory,
    Instant timestamp) {

  /** Validates. */
  public FileEvent {
    Objects.requireNonNull(type, "type == null");
    Objects.requireNonNull(relativePath, "relativePath == null");
    Objects.requireNonNull(absolutePath, "absolutePath == null");
    Objects.requireNonNull(timestamp, "timestamp == null");
  }
}
