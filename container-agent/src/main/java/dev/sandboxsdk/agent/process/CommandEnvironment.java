package dev.sandboxsdk.agent.process;

import java.nio.file.Path;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The environment every command starts from. Nothing of the agent's own environment reaches a
 * command unless it is one of the {@link #BASE base names} or the operator named it with
 * {@code --inherit-env}; the agent's token variable never does.
 *
 * <p>A command's environment is, in this order (later wins): the base variables (the agent's
 * value, or the documented default), the inherited names the agent has a value for,
 * the egress proxy's variables when the agent has one, {@value #WORKSPACE_VAR}, what the request passes ({@code null} removes), and finally the
 * {@value #RUN_VAR} marker, which a request can neither set nor remove.
 */
public final class CommandEnvironment {
  /** Commands find the workspace here. */
  public static final String WORKSPACE_VAR = "SANDBOX_WORKSPACE";
  /**
   * Marks every process a command starts, {@code <run id>.<command number>}: the agent and its
   * watchdog find the processes that left their process group by it.
   */
  public static final String RUN_VAR = "SANDBOX_AGENT_RUN";
  /** Variables every command gets, with the default used when the agent itself has no value. */
  static final Map<String, String> BASE = base();
  /** Locale variables passed on only when the agent has them (no default). */
  static final List<String> LOCALE_IF_SET = List.of("LC_ALL", "LC_CTYPE");
  /** What a variable name given to {@code --inherit-env} must look like. */
  public static final Pattern NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

  private final Map<String, String> start;
  private final String runId;

  /**
   * @param agentEnv the agent's own environment
   * @param inherit names of the agent's variables commands also get
   * @param workspace the workspace, passed as {@value #WORKSPACE_VAR}
   * @param runId this agent run's id, the first part of {@value #RUN_VAR}
   * @param tokenVar the agent's token variable, which is never passed on
   */
  CommandEnvironment(Map<String, String> agentEnv, Collection<String> inherit, Path workspace, String runId,
      String tokenVar) {
    this(agentEnv, inherit, workspace, runId, tokenVar, null);
  }

  /**
   * @param home HOME of the command user, which replaces the agent's own (a later
   *     {@code --inherit-env HOME} still wins); null keeps the agent's
   */
  CommandEnvironment(Map<String, String> agentEnv, Collection<String> inherit, Path workspace, String runId,
      String tokenVar, String home) {
    this(agentEnv, inherit, workspace, runId, tokenVar, home, Map.of());
  }

  /**
   * @param egress the egress proxy's variables ({@code HTTP_PROXY} and the rest), which replace
   *     inherited ones (an agent's own proxy must not lead around the policy); a request's own
   *     variables still win
   */
  CommandEnvironment(Map<String, String> agentEnv, Collection<String> inherit, Path workspace, String runId,
      String tokenVar, String home, Map<String, String> egress) {
    Map<String, String> env = new LinkedHashMap<>();
    BASE.forEach((name, fallback) -> {
      String value = agentEnv.get(name);
      env.put(name, value == null || value.isEmpty() ? fallback : value);
    });
    if (home != null) {
      env.put("HOME", home);
    }
    for (String name : LOCALE_IF_SET) {
      String value = agentEnv.get(name);
      if (value != null) {
        env.put(name, value);
      }
    }
    for (String name : inherit) {
      String value = agentEnv.get(name);
      if (value != null && !name.equals(tokenVar) && !name.equals(RUN_VAR)) {
        env.put(name, value);
      }
    }
    env.putAll(egress);
    env.put(WORKSPACE_VAR, workspace.toString());
    this.start = Map.copyOf(env);
    this.runId = runId;
  }

  private static Map<String, String> base() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    m.put("HOME", System.getProperty("user.home", "/"));
    m.put("LANG", "C.UTF-8");
    m.put("TERM", "dumb");
    m.put("TMPDIR", "/tmp");
    return Map.copyOf(m);
  }

  /** This agent run's id. */
  String runId() {
    return runId;
  }

  /** The {@value #RUN_VAR} value of command number {@code serial}. */
  String mark(long serial) {
    return runId + "." + serial;
  }

  /** The variables every command starts with (before the request's own). */
  Map<String, String> start() {
    return start;
  }

  /**
   * Fills {@code target} (a {@link ProcessBuilder#environment()}, emptied first) with the
   * environment of a command: the start set, the request's variables, the marker.
   */
  void fill(Map<String, String> target, Map<String, String> requested, String mark) {
    target.clear();
    target.putAll(start);
    requested.forEach((k, v) -> {
      if (v == null) {
        target.remove(k);
      } else {
        target.put(k, v);
      }
    });
    target.put(RUN_VAR, mark);
  }

  /** Names that may not be inherited with {@code --inherit-env}, each with the reason. */
  public static String refusal(String name, String tokenVar) {
    if (!NAME.matcher(name).matches()) {
      return "'" + name + "' is not a variable name (letters, digits and _, not starting with a digit)";
    }
    if (name.equals(tokenVar)) {
      return name + " holds the agent's token and is never passed to commands";
    }
    if (Set.of(RUN_VAR, WORKSPACE_VAR).contains(name)) {
      return name + " is set by the agent itself";
    }
    return null;
  }
}
