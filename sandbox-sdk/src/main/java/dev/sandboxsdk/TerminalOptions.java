package dev.sandboxsdk;

import dev.sandboxsdk.internal.Checks;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * Options of {@link SandboxTerminals#open(TerminalOptions)}. Immutable; build with
 * {@link #builder()}.
 *
 * @param command what runs on the terminal; {@link #LOGIN_SHELL} by default
 * @param cols the width in columns, 1 to 1000
 * @param rows the height in rows, 1 to 1000
 * @param term the program's {@code TERM}, which tells it which escape sequences to use
 * @param env variables set for the program; a null value unsets that variable
 * @param cwd working directory, relative to the workspace or absolute; null for the workspace
 * @param processId the id to address the terminal by; null lets the agent pick one
 */
public record TerminalOptions(
    Command command,
    int cols,
    int rows,
    String term,
    Map<String, String> env,
    String cwd,
    String processId) {

  /** A login shell: {@code bash -l}, or {@code sh -l} where bash is not installed. */
  public static final Command LOGIN_SHELL =
      Command.shell("if command -v bash >/dev/null 2>&1; then exec bash -l; else exec sh -l; fi");
  /** The largest number of columns or rows. */
  public static final int MAX_SIZE = 1000;
  private static final Pattern TERM = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._+-]{0,63}");
  private static final TerminalOptions DEFAULTS = builder().build();

  /** Validates and copies. */
  public TerminalOptions {
    Objects.requireNonNull(command, "command == null");
    Objects.requireNonNull(term, "term == null");
    Objects.requireNonNull(env, "env == null");
    Checks.terminalSize(cols, rows, MAX_SIZE);
    if (!TERM.matcher(term).matches()) {
      throw new IllegalArgumentException("term must be a terminal type name such as xterm-256color: '" + term + "'");
    }
    if (processId != null && !Checks.isProcessId(processId)) {
      throw new IllegalArgumentException("processId must match " + Checks.PROCESS_ID_RULE + ": '" + processId + "'");
    }
    Checks.cwd(cwd);
    env = Checks.copyEnv(env);
  }

  /** A login shell on an 80 x 24 {@code xterm-256color} terminal in the workspace. */
  public static TerminalOptions defaults() {
    return DEFAULTS;
  }

  /** A builder with the defaults of {@link #defaults()}. */
  public static Builder builder() {
    return new Builder();
  }

  /** A builder initialised from these options. */
  public Builder toBuilder() {
    Builder b = new Builder();
    b.command = command;
    b.cols = cols;
    b.rows = rows;
    b.term = term;
    b.env.putAll(env);
    b.cwd = cwd;
    b.processId = processId;
    return b;
  }

  /** Environment values are never printed. */
  @Override
  public String toString() {
    return "TerminalOptions{command=" + command + ", " + cols + "x" + rows + ", term=" + term + ", env=" + env.keySet()
        + ", cwd=" + cwd + ", processId=" + processId + "}";
  }

  /** Builds {@link TerminalOptions}. Not thread-safe. */
  public static final class Builder {
    private Command command = LOGIN_SHELL;
    private int cols = 80;
    private int rows = 24;
    private String term = "xterm-256color";
    private final Map<String, String> env = new LinkedHashMap<>();
    private String cwd;
    private String processId;

    private Builder() {}

    /** What runs on the terminal (a login shell if unset). */
    public Builder command(Command command) {
      this.command = Objects.requireNonNull(command, "command == null");
      return this;
    }

    /** The width in columns (80 if unset). */
    public Builder cols(int cols) {
      this.cols = cols;
      return this;
    }

    /** The height in rows (24 if unset). */
    public Builder rows(int rows) {
      this.rows = rows;
      return this;
    }

    /** The program's {@code TERM} ({@code xterm-256color} if unset). */
    public Builder term(String term) {
      this.term = Objects.requireNonNull(term, "term == null");
      return this;
    }

    /** Sets one environment variable. */
    public Builder env(String name, String value) {
      Checks.envName(name);
      env.put(name, Objects.requireNonNull(value, "value == null"));
      return this;
    }

    /** Sets environment variables (a null value unsets that variable). */
    public Builder env(Map<String, String> variables) {
      Objects.requireNonNull(variables, "variables == null");
      variables.forEach((k, v) -> {
        Checks.envName(k);
        env.put(k, v);
      });
      return this;
    }

    /** Working directory, relative to the workspace or absolute. */
    public Builder cwd(String cwd) {
      this.cwd = cwd;
      return this;
    }

    /** The id to address the terminal by (the agent picks one if unset). */
    public Builder processId(String processId) {
      this.processId = processId;
      return this;
    }

    /** The options. */
    public TerminalOptions build() {
      return new TerminalOptions(command, cols, rows, term, env, cwd, processId);
    }
  }
}
