package dev.sandboxsdk.agent.exec;

import dev.sandboxsdk.agent.AgentConfig;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.http.Json;
import dev.sandboxsdk.agent.process.ExecSpec;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Validates the bodies of execute, execute/stream and process/start into an {@link ExecSpec}: the
 * request side of the exec routes and of the background process routes, which read the body with
 * the strict {@link Json} reader.
 */
public final class ExecRequests {
  static final long MAX_TIMEOUT_MS = 30L * 24 * 3600 * 1000;

  /** The three endpoints that run a command; each accepts a slightly different set of fields. */
  public enum Kind {
    EXECUTE(Set.of("command", "argv", "env", "cwd", "timeoutMs", "stdin", "maxOutputBytes", "encoding", "sessionId",
        "origin")),
    EXECUTE_STREAM(Set.of("command", "argv", "env", "cwd", "timeoutMs", "stdin", "encoding", "sessionId", "origin")),
    START(Set.of("command", "argv", "processId", "env", "cwd", "timeoutMs", "encoding", "autoCleanup", "stdin", "sessionId",
        "origin", "pty"));

    final Set<String> fields;

    Kind(Set<String> fields) {
      this.fields = fields;
    }
  }

  private ExecRequests() {}

  /**
   * The command {@code body} asks for, as {@code kind} accepts it.
   *
   * @throws AgentException VALIDATION_FAILED or INVALID_COMMAND naming the first field at fault
   */
  public static ExecSpec parse(Json body, Kind kind, AgentConfig config) {
    body.allowOnly(kind.fields);
    String command = body.string("command");
    List<String> argv = body.stringList("argv");
    if (command != null && argv != null) {
      throw new AgentException(ErrorCode.INVALID_COMMAND, "give either 'command' (a shell string) or 'argv' (an array), not both");
    }
    if (command == null && argv == null) {
      throw new AgentException(ErrorCode.INVALID_COMMAND, "missing command: give 'command' (a shell string) or 'argv' (an array of strings)");
    }
    if (command != null) {
      if (command.isBlank()) {
        throw new AgentException(ErrorCode.INVALID_COMMAND, "'command' is empty");
      }
      noNul("command", command);
      fitsKernel("command", command);
    } else {
      if (argv.isEmpty() || argv.get(0).isEmpty()) {
        throw new AgentException(ErrorCode.INVALID_COMMAND, "'argv' must be a non-empty array whose first element names the program");
      }
      argv.forEach(a -> noNul("argv", a));
      argv.forEach(a -> fitsKernel("argv", a));
    }
    Map<String, String> env = env(body);
    String cwd = body.string("cwd");
    if (cwd != null) {
      if (cwd.isEmpty()) {
        throw AgentException.invalid("cwd", "'cwd' is empty; omit it to use the workspace");
      }
      noNul("cwd", cwd);
    }
    Long timeoutMs = body.integer("timeoutMs", 1, MAX_TIMEOUT_MS);
    // exec and exec/stream run in the session named; process/start accepts the field (Cloudflare's
    // client sends it) and starts the process outside any session.
    String sessionId = body.string("sessionId");
    if (sessionId != null && sessionId.isEmpty()) {
      throw AgentException.invalid("sessionId", "'sessionId' is empty; omit it to run outside a session");
    }
    // Cloudflare's client tags the commands its Sandbox runs for itself "internal" (only its container's
    // log level depends on it); accepted and ignored, but only with the two values its API defines.
    String origin = body.string("origin");
    if (origin != null && !origin.equals("user") && !origin.equals("internal")) {
      throw AgentException.invalid("origin", "'origin' must be \"user\" or \"internal\", got '" + origin + "'");
    }
    String stdinData = null;
    boolean stdinPipe = false;
    if (kind == Kind.START) {
      String stdin = body.string("stdin");
      if (stdin != null && !stdin.equals("pipe")) {
        throw AgentException.invalid("stdin", "for process/start 'stdin' may only be \"pipe\" (then write with POST /api/process/{id}/stdin)");
      }
      stdinPipe = stdin != null;
    } else {
      stdinData = body.string("stdin");
    }
    int maxOutput = maxOutput(body, kind, config);
    ExecSpec.Encoding encoding = encoding(body.string("encoding"), "encoding");
    String processId = kind == Kind.START ? body.string("processId") : null;
    Boolean autoCleanup = kind == Kind.START ? body.bool("autoCleanup") : null;
    ExecSpec.Pty pty = kind == Kind.START ? pty(body.object("pty")) : null;
    if (pty != null) {
      stdinPipe = true; // a terminal always takes input
    }
    return new ExecSpec(command, argv, env, cwd, timeoutMs, stdinData, stdinPipe, maxOutput, encoding,
        processId, Boolean.TRUE.equals(autoCleanup), pty, kind == Kind.START ? null : sessionId, null);
  }

  /** The {@code env} object: names non-empty without '=' or NUL, values without NUL, each within the kernel's limit. */
  private static Map<String, String> env(Json body) {
    Map<String, String> env = body.stringMap("env");
    for (Map.Entry<String, String> e : env.entrySet()) {
      String k = e.getKey();
      if (k.isEmpty() || k.indexOf('=') >= 0 || k.indexOf('\0') >= 0) {
        throw AgentException.invalid("env", "environment variable names must be non-empty and contain no '=' or NUL: '" + k + "'");
      }
      if (e.getValue() != null) {
        noNul("env", e.getValue());
        fitsKernel("env", k + "=" + e.getValue());
      }
    }
    return env;
  }

  /** The request's {@code maxOutputBytes} (execute only, within this agent's limit), else the default. */
  private static int maxOutput(Json body, Kind kind, AgentConfig config) {
    int maxOutput = config.effectiveDefaultMaxOutputBytes();
    if (kind == Kind.EXECUTE) {
      Long m = body.integer("maxOutputBytes", 1, AgentConfig.MAX_OUTPUT_BYTES_LIMIT);
      if (m != null && m > config.maxOutputBytesLimit()) {
        // Both streams of one exec must fit in the agent's output budget.
        throw AgentException.invalid("maxOutputBytes", "'maxOutputBytes' is " + m + ", but this agent keeps at most "
            + config.maxOutputBytesLimit() + " bytes per stream: half its output budget of " + config.outputBudget()
            + " bytes (see limits in GET /api/version; use POST /api/execute/stream for more)");
      }
      if (m != null) {
        maxOutput = m.intValue();
      }
    }
    return maxOutput;
  }

  private static final java.util.regex.Pattern TERM = java.util.regex.Pattern.compile("[A-Za-z0-9][A-Za-z0-9._+-]{0,63}");

  /** The {@code pty} object of process/start: {@code cols}, {@code rows} (1 to 1000) and an optional {@code term}. */
  private static ExecSpec.Pty pty(Json pty) {
    if (pty == null) {
      return null;
    }
    pty.allowOnly(Set.of("cols", "rows", "term"));
    int[] size = size(pty, "pty.");
    String term = pty.string("term");
    if (term != null && !TERM.matcher(term).matches()) {
      throw AgentException.invalid("pty.term", "'pty.term' must be a terminal type name such as \"xterm-256color\""
          + " (letters, digits, '.', '_', '+', '-'; at most 64), got '" + (term.length() > 80 ? term.substring(0, 80) + "..." : term) + "'");
    }
    return new ExecSpec.Pty(size[0], size[1], term != null ? term : ExecSpec.Pty.DEFAULT_TERM);
  }

  /**
   * The required {@code cols} and {@code rows} of a terminal size, each 1 to {@link ExecSpec.Pty#MAX_SIZE}
   * ({@code prefix} names the enclosing field in messages).
   */
  public static int[] size(Json body, String prefix) {
    int[] out = new int[2];
    String[] names = {"cols", "rows"};
    for (int i = 0; i < 2; i++) {
      Long v = body.integer(names[i], 1, ExecSpec.Pty.MAX_SIZE, prefix + names[i]);
      if (v == null) {
        throw AgentException.invalid(prefix + names[i], "'" + prefix + names[i] + "' is required: the terminal's "
            + (i == 0 ? "width in columns" : "height in rows") + ", 1 to " + ExecSpec.Pty.MAX_SIZE);
      }
      out[i] = v.intValue();
    }
    return out;
  }

  /**
   * {@code utf-8} (also when null) or {@code base64}.
   *
   * @throws AgentException VALIDATION_FAILED naming {@code field} for anything else
   */
  public static ExecSpec.Encoding encoding(String value, String field) {
    if (value == null) {
      return ExecSpec.Encoding.UTF8;
    }
    switch (value.toLowerCase(Locale.ROOT)) {
      case "utf-8":
      case "utf8":
        return ExecSpec.Encoding.UTF8;
      case "base64":
        return ExecSpec.Encoding.BASE64;
      default:
        throw AgentException.invalid(field, "'" + field + "' must be \"utf-8\" or \"base64\", got '" + value + "'");
    }
  }

  /** Linux refuses any single argument or environment string of 128 KiB or more (MAX_ARG_STRLEN). */
  static final int MAX_ARG_BYTES = 128 * 1024 - 1;

  private static void fitsKernel(String field, String value) {
    // UTF-8 length is at most 3 bytes per char; only measure when it could matter.
    if (value.length() * 3L > MAX_ARG_BYTES && value.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > MAX_ARG_BYTES) {
      throw new AgentException(ErrorCode.INVALID_COMMAND, "'" + field + "' has a string of "
          + value.getBytes(java.nio.charset.StandardCharsets.UTF_8).length + " bytes; the kernel accepts at most "
          + MAX_ARG_BYTES + " per argument or variable: pass big inputs through stdin or a file instead",
          Map.of("field", field));
    }
  }

  private static void noNul(String field, String value) {
    if (value.indexOf('\0') >= 0) {
      throw AgentException.invalid(field, "'" + field + "' contains a NUL character, which no process can receive");
    }
  }
}
