package dev.sandboxsdk;

/** A language a {@link CodeContext} runs, and the interpreter the sandbox needs for it. */
public enum CodeLanguage {
  /** Python 3, run by {@code python3}. */
  PYTHON("python"),
  /** JavaScript, run by {@code node}. */
  JAVASCRIPT("javascript");

  private final String wireName;

  CodeLanguage(String wireName) {
    this.wireName = wireName;
  }

  /** The name on the wire and in the MCP tools: {@code python} or {@code javascript}. */
  public String wireName() {
    return wireName;
  }

  /**
   * Parses {@code python} or {@code javascript} (also {@code py}, {@code python3}, {@code js},
   * {@code node}), ignoring case.
   *
   * @throws IllegalArgumentException for any other name
   */
  public static CodeLanguage of(String name) {
    switch (name.toLowerCase(java.util.Locale.ROOT)) {
      case "python": case "python3": case "py":
        return PYTHON;
      case "javascript": case "js": case "node":
        return JAVASCRIPT;
      default:
        throw new IllegalArgumentException("language must be python or javascript: " + name);
    }
  }
}
