package dev.sandboxsdk;

import java.util.List;
import java.util.Objects;

/**
 * The output line that satisfied {@link SandboxProcess#waitForLog}.
 *
 * @param stream which stream the line came from
 * @param line the whole line, without its line terminator
 * @param groups the pattern's match: group 0 is the matched text, then each capturing group
 *     (null elements for groups that did not participate)
 */
public record LogMatch(StdStream stream, String line, List<String> groups) {

  /** Checks and copies. */
  public LogMatch {
    Objects.requireNonNull(stream, "stream == null");
    Objects.requireNonNull(line, "line == null");
    groups = java.util.Collections.unmodifiableList(new java.util.ArrayList<>(groups));
  }

  /** The text the pattern matched. */
  public String match() {
    return groups.get(0);
  }
}
