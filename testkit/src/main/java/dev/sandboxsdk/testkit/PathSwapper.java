package dev.sandboxsdk.testkit;

/**
 * The command side of a path-race attack: a program that exchanges pairs of names in its working
 * directory with {@code renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)} as fast as it can,
 * so that a directory and a symbolic link out of the workspace trade places between a server's
 * checks and its uses of a path. It first creates {@link #READY}, for the test to wait on.
 */
public final class PathSwapper {
  /** The file the swapper creates in its working directory once it runs. */
  public static final String READY = "swapper-ready";

  private PathSwapper() {}

  /**
   * A Python 3 program (through ctypes) that swaps each pair of names, given as
   * {@code a1, b1, a2, b2, ...}, in turn forever.
   */
  public static String python(String... pairs) {
    StringBuilder s = new StringBuilder("import ctypes, os\n")
        .append("libc = ctypes.CDLL(None, use_errno=True)\n")
        .append("open(\"").append(READY).append("\", \"w\").close()\n")
        .append("while True:\n");
    for (int i = 0; i < checked(pairs); i += 2) {
      s.append("    libc.renameat2(-100, b\"").append(pairs[i]).append("\", -100, b\"").append(pairs[i + 1])
          .append("\", 2)\n");
    }
    return s.toString();
  }

  /**
   * A shell command for images without Python: changes to {@code dir}, creates {@link #READY} and
   * execs perl, whose {@code syscall} swaps each pair in turn forever (renameat2 is 316 on x86-64
   * and 276 on aarch64) and dies if a swap fails.
   */
  public static String perl(String dir, String... pairs) {
    StringBuilder names = new StringBuilder();
    StringBuilder values = new StringBuilder();
    StringBuilder swaps = new StringBuilder();
    for (int i = 0; i < checked(pairs); i++) {
      names.append(i == 0 ? "" : ", ").append("$n").append(i);
      values.append(i == 0 ? "" : ", ").append('"').append(pairs[i]).append('"');
      if (i % 2 == 1) {
        swaps.append(" syscall($nr, -100, $n").append(i - 1).append(", -100, $n").append(i)
            .append(", 2) == 0 or die \"renameat2: $!\";");
      }
    }
    return "cd " + dir + " && touch " + READY + " && exec perl -e '"
        + "my $nr = (`uname -m` =~ /aarch64/) ? 276 : 316; my (" + names + ") = (" + values + ");"
        + " while (1) {" + swaps + " }'";
  }

  private static int checked(String[] pairs) {
    if (pairs.length == 0 || pairs.length % 2 != 0) {
      throw new IllegalArgumentException("names come in pairs: " + String.join(", ", pairs));
    }
    for (String name : pairs) {
      if (!name.matches("[A-Za-z0-9._-]+")) {
        throw new IllegalArgumentException("a plain file name, please: " + name);
      }
    }
    return pairs.length;
  }
}
