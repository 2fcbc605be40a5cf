package dev.sandboxsdk.internal;

import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Pattern;

/** Argument checks shared by the public option types and the client. Not API. */
public final class Checks {
  /** The ids the agent accepts and gives out (docs/protocol/processes.md, process/start). */
  private static final Pattern PROCESS_ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");
  private static final Set<String> RESERVED_IDS = Set.of("list", "start", "kill-all", "cleanup");

  private static final Pattern SANDBOX_NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,62}");

  /** Checks a sandbox name: 1 to 63 of {@code [A-Za-z0-9._-]}, starting with a letter or digit. */
  public static String sandboxName(String name) {
    Objects.requireNonNull(name, "name == null");
    if (!isSandboxName(name)) {
      throw new IllegalArgumentException("a sandbox name is 1 to 63 of [A-Za-z0-9._-], starting with a letter or digit: '"
          + name + "'");
    }
    return name;
  }

  /** Whether {@code name} is a valid sandbox name (see {@link #sandboxName(String)}). */
  public static boolean isSandboxName(String name) {
    return SANDBOX_NAME.matcher(name).matches();
  }

  /** What a valid process id looks like, for messages. */
  public static final String PROCESS_ID_RULE = PROCESS_ID.pattern() + " and not list, start, kill-all or cleanup";

  private Checks() {}

  /** Whether the agent could have given out this id (so it addresses exactly one process). */
  public static boolean isProcessId(String id) {
    return PROCESS_ID.matcher(id).matches() && !RESERVED_IDS.contains(id);
  }

  /** Checkpoint names (docs/protocol/checkpoints.md). */
  private static final Pattern CHECKPOINT_NAME = Pattern.compile("[A-Za-z0-9._-]{1,64}");

  /** Whether the agent accepts this checkpoint name. */
  public static boolean isCheckpointName(String name) {
    return CHECKPOINT_NAME.matcher(name).matches();
  }

  /**
   * Whether this id is safe in a URL path (one segment, not {@code .} or {@code ..}); the agent
   * says whether a checkpoint has it.
   */
  public static boolean isCheckpointId(String id) {
    return PROCESS_ID.matcher(id).matches();
  }

  /**
   * Returns {@code d} if it is positive.
   *
   * @throws NullPointerException if it is null
   * @throws IllegalArgumentException if it is zero or negative
   */
  public static Duration positive(Duration d, String name) {
    Objects.requireNonNull(d, name + " == null");
    return positiveOrNull(d, name);
  }

  /** Checks an environment variable name: not empty, no '=' and no NUL. */
  public static void envName(String name) {
    Objects.requireNonNull(name, "env name == null");
    if (name.isEmpty() || name.indexOf('=') >= 0 || name.indexOf('\0') >= 0) {
      throw new IllegalArgumentException("invalid environment variable name '" + name + "'");
    }
  }

  /**
   * Checks the name of a variable a sandbox's commands get from outside the request (inherited,
   * or set on a container): a portable shell name, and none the sandbox sets itself.
   */
  public static void inheritableEnvName(String name) {
    Objects.requireNonNull(name, "env name == null");
    if (!name.matches("[A-Za-z_][A-Za-z0-9_]*")) {
      throw new IllegalArgumentException("not an environment variable name: '" + name + "'");
    }
    if (name.equals("SANDBOX_AGENT_TOKEN") || name.equals("SANDBOX_AGENT_RUN") || name.equals("SANDBOX_WORKSPACE")) {
      throw new IllegalArgumentException(name + " is set by the sandbox itself and cannot be given to commands");
    }
  }

  /** An unmodifiable copy with checked names; null values (meaning "unset") are kept, which Map.copyOf rejects. */
  public static Map<String, String> copyEnv(Map<String, String> env) {
    Map<String, String> copy = new LinkedHashMap<>();
    env.forEach((k, v) -> {
      envName(k);
      copy.put(k, v);
    });
    return Collections.unmodifiableMap(copy);
  }

  /** A terminal size: {@code cols} and {@code rows} 1 to {@code max}. */
  public static void terminalSize(int cols, int rows, int max) {
    if (cols < 1 || cols > max || rows < 1 || rows > max) {
      throw new IllegalArgumentException("a terminal's cols and rows must be 1 to " + max + ", got " + cols + " x "
          + rows);
    }
  }

  /** Whether every char is printable ASCII other than a space (0x21 to 0x7e): a URL path, a git ref. */
  public static boolean isVisibleAscii(String s) {
    return s.chars().allMatch(c -> c > 0x20 && c < 0x7f);
  }

  /** A working directory may be absent (null) but not empty. */
  public static void cwd(String cwd) {
    if (cwd != null && cwd.isEmpty()) {
      throw new IllegalArgumentException("cwd is empty");
    }
  }

  /** Like {@link #positive}, but null (meaning "not set") passes. */
  public static Duration positiveOrNull(Duration d, String name) {
    if (d != null && (d.isNegative() || d.isZero())) {
      throw new IllegalArgumentException(name + " must be positive: " + d);
    }
    return d;
  }
  /**
   * Adds {@code secret} to the secrets of one sandbox: at most {@link EgressSecret#MAX_SECRETS},
   * unique names and unique values, as the agent demands. Messages name secrets, never values.
   */
  public static void addEgressSecret(java.util.List<dev.sandboxsdk.EgressSecret> secrets,
      dev.sandboxsdk.EgressSecret secret) {
    Objects.requireNonNull(secret, "secret == null");
    if (secrets.size() >= dev.sandboxsdk.EgressSecret.MAX_SECRETS) {
      throw new IllegalArgumentException("a sandbox holds at most " + dev.sandboxsdk.EgressSecret.MAX_SECRETS
          + " egress secrets");
    }
    for (dev.sandboxsdk.EgressSecret s : secrets) {
      if (s.name().equals(secret.name())) {
        throw new IllegalArgumentException("egress secret " + secret.name() + " is given twice");
      }
      if (s.value().equals(secret.value())) {
        throw new IllegalArgumentException("egress secret " + secret.name() + " has the same value as egress secret "
            + s.name());
      }
    }
    secrets.add(secret);
  }

  /**
   * Checks that secrets come with a policy, and that no variable of the sandbox's own environment
   * would override a placeholder with a value.
   *
   * @throws IllegalStateException saying which
   */
  public static void egressSecretsUsable(java.util.List<dev.sandboxsdk.EgressSecret> secrets, boolean hasPolicy,
      java.util.Collection<String> envNames) {
    if (secrets.isEmpty()) {
      return;
    }
    if (!hasPolicy) {
      throw new IllegalStateException("egress secrets need an egress policy: the proxy that puts them into requests"
          + " runs only with one (egressPolicy(EgressPolicy.allowList(...)))");
    }
    for (dev.sandboxsdk.EgressSecret s : secrets) {
      if (envNames.contains(s.name())) {
        throw new IllegalStateException("env " + s.name() + " would give commands a value where egress secret "
            + s.name() + " gives them a placeholder: drop one of them");
      }
    }
  }
}
