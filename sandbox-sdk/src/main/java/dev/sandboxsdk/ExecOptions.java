package dev.sandboxsdk;

import dev.sandboxsdk.internal.Checks;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * Per-call options of {@link Sandbox#exec}, {@link Sandbox#execAsync} and
 * {@link Sandbox#execStream}. Immutable; build with {@link #builder()}.
 *
 * <pre>{@code
 * ExecOptions opts = ExecOptions.builder()
 *     .timeout(Duration.ofMinutes(2))
 *     .env("CI", "true")
 *     .cwd("app")
 *     .onOutput((stream, text) -> System.out.print(text))
 *     .build();
 * }</pre>
 *
 * @param timeout how long the command may run before the agent kills its process group and
 *     reports {@code timedOut}; null means the sandbox's default ({@link Sandbox.Builder#execTimeout})
 * @param env variables set for the command (merged over the agent's environment); a null value
 *     unsets that variable
 * @param cwd working directory, relative to the sandbox workspace or absolute; null for the workspace
 * @param stdin text written to the command's standard input, which is then closed; null for none
 * @param onOutput receives output while {@code exec} runs; null for none. Ignored by
 *     {@code execStream}, whose events carry the output
 * @param maxOutputBytes bytes kept per stream in the {@link ExecResult}; beyond it output is
 *     discarded and {@link ExecResult#truncated()} is set; 0 means the agent's default (16 MiB)
 */
public record ExecOptions(
    Duration timeout,
    Map<String, String> env,
    String cwd,
    String stdin,
    OutputListener onOutput,
    int maxOutputBytes) {

  private static final ExecOptions DEFAULTS = new ExecOptions(null, Map.of(), null, null, null, 0);

  /** Validates and copies. */
  public ExecOptions {
    Objects.requireNonNull(env, "env == null");
    Checks.positiveOrNull(timeout, "timeout");
    if (maxOutputBytes < 0) {
      throw new IllegalArgumentException("maxOutputBytes < 0: " + maxOutputBytes);
    }
    Checks.cwd(cwd);
    env = Checks.copyEnv(env);
  }

  /** No timeout beyond the sandbox default, no extra environment, the workspace as cwd. */
  public static ExecOptions defaults() {
    return DEFAULTS;
  }

  /** A builder with every option unset. */
  public static Builder builder() {
    return new Builder();
  }

  /** A builder initialised from these options. */
  public Builder toBuilder() {
    Builder b = new Builder();
    b.timeout = timeout;
    b.env.putAll(env);
    b.cwd = cwd;
    b.stdin = stdin;
    b.onOutput = onOutput;
    b.maxOutputBytes = maxOutputBytes;
    return b;
  }

  /** Environment values and stdin are never printed. */
  @Override
  public String toString() {
    return "ExecOptions{timeout=" + timeout + ", env=" + env.keySet() + ", cwd=" + cwd
        + ", stdin=" + (stdin == null ? "none" : stdin.length() + " chars")
        + ", onOutput=" + (onOutput != null) + ", maxOutputBytes=" + maxOutputBytes + "}";
  }

  /** Builds {@link ExecOptions}. Not thread-safe. */
  public static final class Builder {
    private Duration timeout;
    private final Map<String, String> env = new LinkedHashMap<>();
    private String cwd;
    private String stdin;
    private OutputListener onOutput;
    private int maxOutputBytes;

    private Builder() {}

    /** Kill the command after this long; it then reports {@code timedOut} and exit code 124. */
    public Builder timeout(Duration timeout) {
      this.timeout = timeout;
      return this;
    }

    /** Sets one environment variable for the command. */
    public Builder env(String name, String value) {
      Checks.envName(name);
      env.put(name, Objects.requireNonNull(value, "value == null"));
      return this;
    }

    /** Sets environment variables for the command (a null value unsets that variable). */
    public Builder env(Map<String, String> variables) {
      Objects.requireNonNull(variables, "variables == null");
      variables.forEach((k, v) -> {
        Checks.envName(k);
        env.put(k, v);
      });
      return this;
    }

    /** Removes a variable from the command's environment. */
    public Builder unsetEnv(String name) {
      Checks.envName(name);
      env.put(name, null);
      return this;
    }

    /** Working directory, relative to the sandbox workspace or absolute. */
    public Builder cwd(String cwd) {
      this.cwd = cwd;
      return this;
    }

    /** Text written to the command's standard input, which is then closed. */
    public Builder stdin(String stdin) {
      this.stdin = stdin;
      return this;
    }

    /** Receives output as it arrives while {@link Sandbox#exec} runs. */
    public Builder onOutput(OutputListener onOutput) {
      this.onOutput = onOutput;
      return this;
    }

    /** Bytes kept per stream in the result; 0 for the agent's default. */
    public Builder maxOutputBytes(int maxOutputBytes) {
      this.maxOutputBytes = maxOutputBytes;
      return this;
    }

    /** The options. */
    public ExecOptions build() {
      return new ExecOptions(timeout, env, cwd, stdin, onOutput, maxOutputBytes);
    }
  }
}
