package dev.sandboxsdk.agent.session;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The bash program that runs one command of a session: {@code bash --noprofile --norc -c SCRIPT
 * bash STATE_FILE COMMAND CD [NAME=VALUE | -NAME]...}. It restores the session's state from
 * {@code STATE_FILE} (working directory, variables, functions, aliases, shell options), or while
 * no command has saved one from {@code STATE_FILE.init}, the state the session was created with
 * (written by the agent, which the command user may not be able to replace), applies
 * the request's own {@code cwd} (when {@code CD} is 1: the directory the command was started in)
 * and environment, runs {@code COMMAND} with {@code eval}, and on exit writes the new state
 * atomically (a temporary file renamed over the old one) before exiting with the command's
 * status. A command ended by SIGTERM, SIGINT or SIGHUP saves nothing and dies by that signal; one
 * ended by SIGKILL cannot save: either way the state stays as it was before the command.
 *
 * <p>What is saved: every variable {@code compgen -v} names except bash's own ({@link #keeps}),
 * as {@code declare -p} prints it (attributes, arrays and exported-ness included); every function
 * ({@code declare -f}); {@code alias -p}; {@code set +o} and {@code shopt -p}; the directory. A
 * state larger than the limit is not written (the previous one stays) and a line on stderr says
 * so. Stateless and thread-safe.
 */
public final class SessionScript {
  /** Names of bash's own variables, which a new shell sets itself; some are read-only. */
  private static final Pattern BASH_OWN = Pattern.compile("BASH.*|__sbx_.*|COMP_.*|_|PWD|OLDPWD|SHELLOPTS|EUID|UID"
      + "|PPID|SHLVL|RANDOM|SRANDOM|SECONDS|LINENO|FUNCNAME|GROUPS|HISTCMD|PIPESTATUS|DIRSTACK|EPOCHREALTIME"
      + "|EPOCHSECONDS|HOSTNAME|HOSTTYPE|MACHTYPE|OSTYPE|OPTERR|OPTIND|OPTARG|COLUMNS|LINES");
  /** The same names as a bash {@code case} pattern. */
  static final String BASH_OWN_CASE = "BASH*|__sbx_*|COMP_*|_|PWD|OLDPWD|SHELLOPTS|EUID|UID|PPID|SHLVL|RANDOM"
      + "|SRANDOM|SECONDS|LINENO|FUNCNAME|GROUPS|HISTCMD|PIPESTATUS|DIRSTACK|EPOCHREALTIME|EPOCHSECONDS|HOSTNAME"
      + "|HOSTTYPE|MACHTYPE|OSTYPE|OPTERR|OPTIND|OPTARG|COLUMNS|LINES";
  private static final Pattern NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

  private final long maxStateBytes;

  /** {@code maxStateBytes}: the largest state file a command may leave. */
  public SessionScript(long maxStateBytes) {
    this.maxStateBytes = maxStateBytes;
  }

  /** Whether a variable of this name is part of a session's state (bash's own variables are not). */
  public static boolean keeps(String name) {
    return NAME.matcher(name).matches() && !BASH_OWN.matcher(name).matches();
  }

  /** Whether {@code name} can be exported by a shell (a session's environment variables must). */
  public static boolean isShellName(String name) {
    return NAME.matcher(name).matches();
  }

  /** The bash program (the {@code -c} argument). */
  public String program() {
    return String.join("\n",
        "__sbx_f=$1; __sbx_c=$2; __sbx_cd=$3; shift 3; __sbx_a=(\"$@\"); set --; __sbx_here=$PWD",
        "shopt -s expand_aliases",
        "if [ -r \"$__sbx_f\" ]; then . \"$__sbx_f\"; elif [ -r \"$__sbx_f.init\" ]; then . \"$__sbx_f.init\"; fi",
        "if [ \"$__sbx_cd\" = 1 ]; then cd -- \"$__sbx_here\"; fi",
        "for __sbx_n in \"${__sbx_a[@]}\"; do case $__sbx_n in",
        "  -*) unset -v -- \"${__sbx_n#-}\" ;;",
        "  *) export -- \"$__sbx_n\" ;;",
        "esac; done",
        "__sbx_save() {",
        "  mapfile -t __sbx_vs < <(compgen -v); mapfile -t __sbx_fs < <(compgen -A function)",
        "  [ -d \"${__sbx_f%/*}\" ] || mkdir -p -- \"${__sbx_f%/*}\" # gone if a command emptied /tmp",
        "  { printf 'cd -- %q || true\\n' \"$PWD\"",
        "    for __sbx_n in \"${__sbx_vs[@]}\"; do case $__sbx_n in " + BASH_OWN_CASE + ") ;;",
        "      *) declare -p -- \"$__sbx_n\" ;; esac; done",
        "    for __sbx_n in \"${__sbx_fs[@]}\"; do case $__sbx_n in __sbx_*) ;; *) declare -f -- \"$__sbx_n\" ;; esac; done",
        "    alias -p; printf '%s\\n' \"$__sbx_o\" \"$__sbx_s\"",
        "    case $__sbx_e in *e*) echo 'set -o errexit' ;; esac # $(set +o) runs without it",
        "  } > \"$__sbx_f.tmp\" 2>/dev/null",
        "  __sbx_z=$(wc -c < \"$__sbx_f.tmp\" 2>/dev/null)",
        "  if [ \"${__sbx_z:-0}\" -gt " + maxStateBytes + " ]; then",
        "    rm -f -- \"$__sbx_f.tmp\"",
        "    printf 'session: state of %s bytes is over the limit of " + maxStateBytes
            + " bytes; not saved\\n' \"$__sbx_z\" >&2",
        "  else mv -f -- \"$__sbx_f.tmp\" \"$__sbx_f\"; fi",
        "}",
        "for __sbx_g in TERM INT HUP; do trap \"trap - EXIT $__sbx_g; kill -$__sbx_g \\$\\$\" $__sbx_g; done",
        "trap '{ __sbx_r=$?; __sbx_e=$-; __sbx_o=$(set +o); __sbx_s=$(shopt -p); set +xveu; } 2>/dev/null; __sbx_save;"
            + " exit $__sbx_r' EXIT",
        "eval \"$__sbx_c\"");
  }

  /**
   * The argv that runs {@code command} in the session whose state is {@code stateFile} (as
   * commands see it).
   *
   * @param cd whether the command was started in a directory of the request's own, which then
   *     replaces the session's
   * @param env the request's variables (a null value unsets), applied after the state
   */
  public List<String> argv(String stateFile, String command, boolean cd, Map<String, String> env) {
    List<String> argv = new ArrayList<>(List.of("bash", "--noprofile", "--norc", "-c", program(), "bash",
        stateFile, command, cd ? "1" : "0"));
    env.forEach((k, v) -> argv.add(v == null ? "-" + k : k + "=" + v));
    return argv;
  }

  /** The state a new session starts with: its directory (if given) and exported variables. */
  public static String initialState(String cwd, Map<String, String> env) {
    StringBuilder sb = new StringBuilder();
    if (cwd != null) {
      sb.append("cd -- ").append(quote(cwd)).append(" || true\n");
    }
    env.forEach((k, v) -> sb.append("export ").append(k).append('=').append(quote(v)).append('\n'));
    return sb.toString();
  }

  /** {@code s} as one single-quoted shell word. */
  static String quote(String s) {
    return "'" + s.replace("'", "'\\''") + "'";
  }
}
