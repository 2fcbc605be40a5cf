package dev.sandboxsdk.agent.watch;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Globs matched by stepping through the path once with the set of glob positions reached, in
 * time linear in the path's length for each glob. A regular expression would backtrack: a
 * glob of many stars (which a client may send) against a long name (which a command may make)
 * took exponential time, with the watch's thread stuck in it.
 */
public final class Globs {
  /** Patterns one list may hold. */
  public static final int MAX_PATTERNS = 32;
  /** Characters one pattern may have. */
  public static final int MAX_PATTERN_CHARS = 256;
  private static final int ANY = -1; // ** (crosses /)
  private static final int STAR = -2; // * (within a segment)
  private static final int ONE = -3; // ? (one character of a segment); else the character itself
  private final List<int[]> compiled = new ArrayList<>();

  /**
   * A list of globs, each matched against whole path segments anywhere in the path relative to
   * the watched directory: {@code *.log} matches {@code a/b.log}, {@code node_modules} matches
   * {@code node_modules/x/y}. Null for an empty list.
   */
  public static Globs of(List<String> globs) {
    return globs == null || globs.isEmpty() ? null : new Globs(globs);
  }

  private Globs(List<String> globs) {
    for (String g : globs) {
      int[] tokens = new int[g.length()];
      int n = 0;
      for (int i = 0; i < g.length(); i++) {
        char c = g.charAt(i);
        if (c == '*' && i + 1 < g.length() && g.charAt(i + 1) == '*') {
          tokens[n++] = ANY;
          i++;
        } else {
          tokens[n++] = c == '*' ? STAR : c == '?' ? ONE : c;
        }
      }
      compiled.add(Arrays.copyOf(tokens, n));
    }
  }

  /** Whether any glob matches a run of whole segments of {@code rel}. */
  public boolean matches(String rel) {
    for (int[] g : compiled) {
      if (matches(g, rel)) {
        return true;
      }
    }
    return false;
  }

  private static boolean matches(int[] g, String rel) {
    int m = g.length;
    boolean[] at = new boolean[m + 1];
    boolean[] next = new boolean[m + 1];
    for (int i = 0; ; i++) {
      if (i == 0 || rel.charAt(i - 1) == '/') {
        at[0] = true; // a match may start at every segment
      }
      for (int j = 0; j < m; j++) { // stars may match nothing
        if (at[j] && (g[j] == ANY || g[j] == STAR)) {
          at[j + 1] = true;
        }
      }
      if (at[m] && (i == rel.length() || rel.charAt(i) == '/')) {
        return true; // ... and must end with one
      }
      if (i == rel.length()) {
        return false;
      }
      char c = rel.charAt(i);
      Arrays.fill(next, false);
      boolean any = false;
      for (int j = 0; j < m; j++) {
        if (!at[j]) {
          continue;
        }
        int t = g[j];
        if (t == ANY || t == STAR && c != '/') {
          next[j] = true;
          any = true;
        } else if (t == ONE && c != '/' || t == c) {
          next[j + 1] = true;
          any = true;
        }
      }
      boolean[] swap = at;
      at = next;
      next = swap;
      if (!any && c != '/') {
        // Nothing alive and no segment starts next: skip to the next '/' (or the end).
        int slash = rel.indexOf('/', i + 1);
        if (slash < 0) {
          return false;
        }
        Arrays.fill(at, false);
        i = slash - 1;
      }
    }
  }
}
