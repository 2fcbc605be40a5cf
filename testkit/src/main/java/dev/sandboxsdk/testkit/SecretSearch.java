package dev.sandboxsdk.testkit;

import java.nio.charset.StandardCharsets;
import java.util.Base64;

/**
 * A {@code bash} script that looks for a secret's value everywhere a sandboxed command can read it:
 * the files under some directories, the environment and command line of every process it can see
 * ({@code /proc/PID/environ}, {@code /proc/PID/cmdline}), and, where python3 is installed, the
 * memory of every process whose {@code /proc/PID/mem} it may read. The value reaches the script in
 * base64 and is decoded into a pipe, so it is on no command line and in no environment of the
 * search's own processes (the python process that holds it is left out of its own scan).
 *
 * <p>The script prints {@code files: none} or {@code files: } and the files that hold the value,
 * then {@code memory: found none (scanned N)}, {@code memory: found in PIDS}, or {@code memory: no
 * python3}.
 */
public final class SecretSearch {
  private static final String SCAN = String.join("\n",
      "import base64, os, sys",
      "v = base64.b64decode(sys.argv[1]); me = os.getpid(); found = []; scanned = 0",
      "for pid in [p for p in os.listdir('/proc') if p.isdigit() and int(p) != me]:",
      "    try:",
      "        maps = open('/proc/%s/maps' % pid).read().splitlines(); mem = open('/proc/%s/mem' % pid, 'rb', 0)",
      "    except OSError:",
      "        continue",
      "    scanned += 1",
      "    for line in maps:",
      "        f = line.split()",
      "        if 'r' not in f[1]:",
      "            continue",
      "        a, b = (int(x, 16) for x in f[0].split('-'))",
      "        try:",
      "            mem.seek(a); data = mem.read(b - a)",
      "        except (OSError, ValueError, OverflowError):",
      "            continue",
      "        if data and v in data:",
      "            found.append(pid); break",
      "print('memory: found in ' + ' '.join(found) if found else 'memory: found none (scanned %d)' % scanned)");

  private SecretSearch() {
  }

  /** The script, searching the files under {@code dirs} (shell words: {@code "$HOME"} expands). */
  public static String script(String value, String... dirs) {
    String b64 = Base64.getEncoder().encodeToString(value.getBytes(StandardCharsets.UTF_8));
    return "f=$(grep -rlsF -f <(printf %s " + b64 + " | base64 -d) -- " + String.join(" ", dirs)
        + " /proc/[0-9]*/environ /proc/[0-9]*/cmdline); echo \"files: ${f:-none}\"; "
        + "if command -v python3 >/dev/null; then python3 -c \"$(cat <<'SCAN'\n" + SCAN + "\nSCAN\n)\" " + b64
        + "; else echo 'memory: no python3'; fi";
  }
}
