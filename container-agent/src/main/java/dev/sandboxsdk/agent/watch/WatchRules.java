package dev.sandboxsdk.agent.watch;

import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.fs.Anchor;
import dev.sandboxsdk.agent.fs.PathErrors;
import dev.sandboxsdk.agent.fs.Workspace;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * What a watch may be asked for, checked without HTTP: a directory of the workspace, glob patterns
 * this agent supports, and the kinds of change it reports. Each check names the request's field.
 */
final class WatchRules {
  /** Cloudflare's default exclusions, used when the request names neither {@code include} nor {@code exclude}. */
  static final List<String> DEFAULT_EXCLUDES = List.of(".git", "node_modules", ".DS_Store");
  static final Set<String> EVENT_TYPES = Set.of("create", "modify", "delete");
  /** Brackets and braces are not glob syntax here (as in Cloudflare's agent): refused, not taken literally. */
  private static final Pattern UNSUPPORTED_GLOB = Pattern.compile("[\\[\\]{}]");

  private WatchRules() {}

  /**
   * The directory {@code raw} names, as a path inside the workspace (whatever links inside it led
   * there), so that events name paths a client knows.
   *
   * @throws AgentException NOT_DIRECTORY, or the path's error
   */
  static Path root(Workspace workspace, String raw) {
    try (Anchor a = workspace.resolve("path", raw, true, false)) {
      if (a.name() != null) { // the walk ended at something that is not a directory (or nothing)
        try {
          Files.readAttributes(a.path(), BasicFileAttributes.class, a.linkOptions());
        } catch (IOException e) {
          throw PathErrors.failure(e, "path", raw);
        }
        throw new AgentException(ErrorCode.NOT_DIRECTORY, "'" + PathErrors.shorten(raw) + "' is not a directory;"
            + " watch the directory that holds it, with include: [\"" + a.name() + "\"]",
            Map.of("field", "path", "path", PathErrors.shorten(raw)));
      }
      return a.logical();
    }
  }

  /** {@code list} (the patterns of {@code field}, may be null) if every pattern is supported. */
  static List<String> patterns(String field, List<String> list) {
    if (list == null) {
      return null;
    }
    if (list.size() > Globs.MAX_PATTERNS) {
      throw AgentException.invalid(field, "'" + field + "' may hold at most " + Globs.MAX_PATTERNS + " patterns, got "
          + list.size());
    }
    for (String g : list) {
      if (g.isBlank() || g.indexOf('\0') >= 0 || g.length() > Globs.MAX_PATTERN_CHARS
          || UNSUPPORTED_GLOB.matcher(g).find()) {
        throw AgentException.invalid(field, "'" + field + "' has an unsupported pattern '" + PathErrors.shorten(g)
            + "': use *, **, ? and / (no brackets or braces), non-empty, at most " + Globs.MAX_PATTERN_CHARS
            + " characters");
      }
    }
    return list;
  }

  /** The kinds of change to report: {@code events} if given and valid, else every kind. */
  static Set<String> kinds(List<String> events) {
    Set<String> kinds = EVENT_TYPES;
    if (events != null && !events.isEmpty()) {
      kinds = new LinkedHashSet<>();
      for (String e : events) {
        if (!EVENT_TYPES.contains(e)) {
          throw AgentException.invalid("events", "'events' may hold 'create', 'modify' and 'delete', got '"
              + PathErrors.shorten(e) + "'" + (e.startsWith("move") ? " (a move is reported as delete and create)"
              : e.equals("attrib") ? " (attribute changes are reported as modify)" : ""));
        }
        kinds.add(e);
      }
    }
    return Set.copyOf(kinds);
  }
}
