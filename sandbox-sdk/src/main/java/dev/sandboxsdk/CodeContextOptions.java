package dev.sandboxsdk;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * How to create a {@link CodeContext}: its language, working directory and environment.
 *
 * <pre>{@code
 * CodeContext py = sandbox.code().createContext(CodeContextOptions.of(CodeLanguage.PYTHON)
 *     .withCwd("analysis").withEnv("MPLBACKEND", "Agg"));
 * }</pre>
 *
 * @param language the interpreter's language
 * @param cwd the working directory, relative to the workspace unless absolute; null for the workspace
 * @param env variables set over the sandbox's environment for this context's interpreter (values
 *     are never printed by {@link #toString()})
 */
public record CodeContextOptions(CodeLanguage language, String cwd, Map<String, String> env) {
  public CodeContextOptions {
    Objects.requireNonNull(language, "language == null");
    Objects.requireNonNull(env, "env == null");
    env = Collections.unmodifiableMap(new LinkedHashMap<>(env));
  }

  /** A context for {@code language} in the workspace with the sandbox's environment. */
  public static CodeContextOptions of(CodeLanguage language) {
    return new CodeContextOptions(language, null, Map.of());
  }

  public CodeContextOptions withCwd(String cwd) {
    return new CodeContextOptions(language, cwd, env);
  }

  public CodeContextOptions withEnv(String name, String value) {
    Objects.requireNonNull(name, "name == null");
    Objects.requireNonNull(value, "value == null");
    Map<String, String> next = new LinkedHashMap<>(env);
    next.put(name, value);
    return new CodeContextOptions(language, cwd, next);
  }

  @Override
  public String toString() {
    return "CodeContextOptions{" + language + (cwd == null ? "" : ", cwd=" + cwd) + ", env=" + env.keySet() + "}";
  }
}
