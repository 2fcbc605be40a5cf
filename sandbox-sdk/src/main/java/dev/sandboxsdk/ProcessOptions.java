package dev.sandboxsdk;

import dev.sandboxsdk.internal.Checks;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * Options of {@link Sandbox#startProcess}. Immutable; build with {@link #builder()}.
 *
 * @param processId the id to address the process by; null lets the agent pick one. 1–128
 *     characters {@code [A-Za-z0-9._-]}, starting with a letter or digit
 * @param env variables set for the process; a null value unsets that variable
 * @param cwd working directory, relative to the workspace or absolute; null for the workspace
 * @param timeout kill the process after this long (status {@code KILLED}, exit code 124); null for none
 * @param autoCleanup whether the agent forgets the process's record a while after it ends
 * @param stdinPipe whether to keep standard input open for {@link SandboxProcess#writeStdin}
 */
public record ProcessOptions(
    String processId,
    Map<String, String> env,
    String cwd,
    Duration timeout,
    boolean autoCleanup,
    boolean stdinPipe) {

  private static final ProcessOptions DEFAULTS = new ProcessOptions(null, Map.of(), null, null, false, false);

  /** Validates and copies. */
  public ProcessOptions {
    Objects.requireNonNull(env, "env == null");
    if (processId != null && !Checks.isProcessId(processId)) {
      throw new IllegalArgumentException("processId must match " + Checks.PROCESS_ID_RULE + ": '" + processId + "'");
    }
    Checks.positiveOrNull(timeout, "timeout");
    Checks.cwd(cwd);
    env = Checks.copyEnv(env);
  }

  /** An agent-chosen id, no extra environment, the workspace as cwd, no timeout. */
  public static ProcessOptions defaults() {
    return DEFAULTS;
  }

  /** A builder with every option unset. */
  public static Builder builder() {
    return new Builder();
  }

  /** A builder initialised from these options. */
  public Builder toBuilder() {
    Builder b = new Builder();
    b.processId = processId;
    b.env.putAll(env);
    b.cwd = cwd;
    b.timeout = timeout;
    b.autoCleanup = autoCleanup;
    b.stdinPipe = stdinPipe;
    return b;
  }

  /** Environment values are never printed. */
  @Override
  public String toString() {
    return "ProcessOptions{processId=" + processId + ", env=" + env.keySet() + ", cwd=" + cwd
        + ", timeout=" + timeout + ", autoCleanup=" + autoCleanup + ", stdinPipe=" + stdinPipe + "}";
  }

  /** Builds {@link ProcessOptions}. Not thread-safe. */
  public static final class Builder {
    private String processId;
    private final Map<String, String> env = new LinkedHashMap<>();
    private String cwd;
    private Duration timeout;
    private boolean autoCleanup;
    private boolean stdinPipe;

    private Builder() {}

    /** The id to address the process by (the agent picks one if unset). */
    public Builder processId(String processId) {
      this.processId = processId;
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

    /** Kill the process after this long. */
    public Builder timeout(Duration timeout) {
      this.timeout = timeout;
      return this;
    }

    /** Let the agent forget the record a while (60 s by default) after the process ends. */
    public Builder autoCleanup(boolean autoCleanup) {
      this.autoCleanup = autoCleanup;
      return this;
    }

    /** Keep standard input open so {@link SandboxProcess#writeStdin} can feed it. */
    public Builder stdinPipe(boolean stdinPipe) {
      this.stdinPipe = stdinPipe;
      return this;
    }

    /** The options. */
    public ProcessOptions build() {
      return new ProcessOptions(processId, env, cwd, timeout, autoCleanup, stdinPipe);
    }
  }
}
