package dev.sandboxsdk.agent.process;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * A validated request to run something: either a shell string (run by {@code /bin/sh -c}) or an
 * argv list that never passes through a shell.
 *
 * @param shellCommand the shell string, or null when {@code argv} is given
 * @param argv the argument vector, or null when {@code shellCommand} is given
 * @param env variables to set over the start environment of {@link CommandEnvironment} (a null value
 *     removes the variable)
 * @param cwd working directory, relative to the workspace unless absolute; null for the workspace
 * @param timeoutMs agent-enforced limit, or null for none
 * @param stdinData text fed to a synchronous exec's stdin, or null for an empty stdin
 * @param stdinPipe whether a background process keeps a stdin pipe open for the stdin endpoint
 * @param maxOutputBytes per-stream cap of a synchronous exec
 * @param processId the caller's id for a background process, or null for a generated one
 * @param autoCleanup whether a background process's record is dropped some time after it ends
 * @param pty the pseudo-terminal a background process runs on, or null for pipes
 * @param sessionId the session a synchronous exec runs in, or null for none
 * @param label what the command reads as in results and listings instead of {@link
 *     #displayCommand()}'s own rendering (a session's command, not its wrapper), or null
 */
public record ExecSpec(
    String shellCommand,
    List<String> argv,
    Map<String, String> env,
    String cwd,
    Long timeoutMs,
    String stdinData,
    boolean stdinPipe,
    int maxOutputBytes,
    Encoding encoding,
    String processId,
    boolean autoCleanup,
    Pty pty,
    String sessionId,
    String label) {

  private static final Pattern SAFE_WORD = Pattern.compile("[A-Za-z0-9_./=:@%+,-]+");

  public ExecSpec {
    if ((shellCommand == null) == (argv == null)) {
      throw new IllegalArgumentException("exactly one of shellCommand and argv");
    }
    argv = argv == null ? null : List.copyOf(argv);
    env = Collections.unmodifiableMap(new LinkedHashMap<>(env));
  }

  /** A spec outside any session. */
  public ExecSpec(String shellCommand, List<String> argv, Map<String, String> env, String cwd, Long timeoutMs,
      String stdinData, boolean stdinPipe, int maxOutputBytes, Encoding encoding, String processId,
      boolean autoCleanup, Pty pty) {
    this(shellCommand, argv, env, cwd, timeoutMs, stdinData, stdinPipe, maxOutputBytes, encoding, processId,
        autoCleanup, pty, null, null);
  }

  /** This spec in session {@code id} (null for none). */
  public ExecSpec withSessionId(String id) {
    return new ExecSpec(shellCommand, argv, env, cwd, timeoutMs, stdinData, stdinPipe, maxOutputBytes, encoding,
        processId, autoCleanup, pty, id, label);
  }

  /** This spec running {@code program} instead, still reading as this one's command. */
  public ExecSpec running(List<String> program) {
    return new ExecSpec(null, program, env, cwd, timeoutMs, stdinData, stdinPipe, maxOutputBytes, encoding,
        processId, autoCleanup, pty, sessionId, displayCommand());
  }

  /** How the command reads to a human: the shell string, or the argv quoted as a shell would. */
  public String displayCommand() {
    if (label != null) {
      return label;
    }
    if (shellCommand != null) {
      return shellCommand;
    }
    StringBuilder sb = new StringBuilder();
    for (String arg : argv) {
      if (sb.length() > 0) {
        sb.append(' ');
      }
      if (SAFE_WORD.matcher(arg).matches()) {
        sb.append(arg);
      } else {
        sb.append('\'').append(arg.replace("'", "'\\''")).append('\'');
      }
    }
    return sb.toString();
  }

  /**
   * A terminal's initial size and {@code TERM}.
   *
   * @param cols columns, 1 to {@link #MAX_SIZE}
   * @param rows rows, 1 to {@link #MAX_SIZE}
   * @param term the command's {@code TERM}
   */
  public record Pty(int cols, int rows, String term) {
    /** The largest number of columns or rows a terminal may have (the kernel's limit is 65535). */
    public static final int MAX_SIZE = 1000;
    public static final String DEFAULT_TERM = "xterm-256color";
  }

  /** How output bytes travel in JSON. */
  public enum Encoding {
    UTF8("utf-8"),
    BASE64("base64");

    private final String wireName;

    Encoding(String wireName) {
      this.wireName = wireName;
    }

    public String wireName() {
      return wireName;
    }
  }
}
