package dev.sandboxsdk;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * How a new session starts ({@link SandboxSessions#create(SessionOptions)}).
 *
 * @param id the session's id (1 to 64 letters, digits, {@code _ . -}, not starting with {@code .}
 *     or {@code -}), or null for a generated one
 * @param cwd its first directory, relative to the workspace unless absolute, or null for the
 *     workspace
 * @param env variables exported in it (names must be shell names)
 */
public record SessionOptions(String id, String cwd, Map<String, String> env) {
  public SessionOptions {
    Objects.requireNonNull(env, "env == null");
    env.forEach((k, v) -> {
      Objects.requireNonNull(k, "env name == null");
      Objects.requireNonNull(v, "env value == null for " + k);
    });
    env = Map.copyOf(env);
  }

  /** A generated id, the workspace, no extra variables. */
  public static SessionOptions defaults() {
    return new SessionOptions(null, null, Map.of());
  }

  /** These options with the session's id. */
  public SessionOptions withId(String id) {
    return new SessionOptions(id, cwd, env);
  }

  /** These options with the session's first directory. */
  public SessionOptions withCwd(String cwd) {
    return new SessionOptions(id, cwd, env);
  }

  /** These options with one more exported variable. */
  public SessionOptions withEnv(String name, String value) {
    Map<String, String> copy = new LinkedHashMap<>(env);
    copy.put(name, value);
    return new SessionOptions(id, cwd, copy);
  }

  @Override
  public String toString() {
    return "SessionOptions{id=" + id + ", cwd=" + cwd + ", env=" + env.keySet() + "}"; // values redacted
  }
}
