package dev.sandboxsdk;

import java.util.List;
import java.util.Objects;

/**
 * What {@link SandboxFiles#watch(String, WatchOptions)} watches and reports.
 *
 * <p>Patterns are globs matched against whole path segments anywhere in the path relative to
 * the watched directory: {@code *} matches within a segment, {@code **} across segments, {@code ?}
 * one character; {@code *.log} matches {@code a/b/c.log}, and {@code build} matches
 * {@code build/x/y.o}. Brackets and braces are refused. At most 32 patterns.
 *
 * @param recursive whether subdirectories are watched too, including those made later (links to
 *     directories are reported, never followed)
 * @param include if not empty, only paths matching one of these are reported (every directory is
 *     still watched)
 * @param exclude paths matching one of these are neither reported nor watched; null means the
 *     agent's defaults ({@code .git}, {@code node_modules}, {@code .DS_Store}) when {@code include}
 *     is empty too, an empty list excludes nothing
 */
public record WatchOptions(boolean recursive, List<String> include, List<String> exclude) {

  private static final WatchOptions DEFAULTS = new WatchOptions(true, List.of(), null);

  /** Copies and validates; include and exclude cannot both be non-empty. */
  public WatchOptions {
    include = List.copyOf(Objects.requireNonNull(include, "include == null"));
    exclude = exclude == null ? null : List.copyOf(exclude);
    if (!include.isEmpty() && exclude != null && !exclude.isEmpty()) {
      throw new IllegalArgumentException("include and exclude cannot be used together");
    }
  }

  /** The whole tree, without {@code .git}, {@code node_modules} and {@code .DS_Store}. */
  public static WatchOptions defaults() {
    return DEFAULTS;
  }

  /** The same options, with subdirectories or without. */
  public WatchOptions withRecursive(boolean recursive) {
    return new WatchOptions(recursive, include, exclude);
  }

  /** Reports only paths that match one of {@code patterns}; clears {@code exclude}. */
  public WatchOptions withInclude(String... patterns) {
    return new WatchOptions(recursive, List.of(patterns), null);
  }

  /** Leaves out (and does not watch) paths that match one of {@code patterns}; clears {@code include}. */
  public WatchOptions withExclude(String... patterns) {
    return new WatchOptions(recursive, List.of(), List.of(patterns));
  }
}
