package dev.sandboxsdk;

/**
 * What {@link SandboxFiles#list(String, ListOptions)} lists.
 *
 * @param recursive whether to descend into subdirectories (symbolic links to directories are
 *     listed, never followed)
 * @param includeHidden whether to include entries whose name starts with a dot
 */
public record ListOptions(boolean recursive, boolean includeHidden) {

  private static final ListOptions DEFAULTS = new ListOptions(false, false);

  /** The directory's own entries, without hidden ones. */
  public static ListOptions defaults() {
    return DEFAULTS;
  }

  /** The whole tree under the directory, without hidden entries. */
  public static ListOptions recursively() {
    return new ListOptions(true, false);
  }

  /** The same options, descending into subdirectories or not. */
  public ListOptions withRecursive(boolean recursive) {
    return new ListOptions(recursive, includeHidden);
  }

  /** The same options, with or without entries whose name starts with a dot. */
  public ListOptions withIncludeHidden(boolean includeHidden) {
    return new ListOptions(recursive, includeHidden);
  }
}
