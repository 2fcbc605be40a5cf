package dev.sandboxsdk.mcp.internal;

import dev.sandboxsdk.EgressSecret;
import dev.sandboxsdk.SandboxSpec;
import dev.sandboxsdk.mcp.internal.AdapterConfig.UsageException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The {@code --egress-secret NAME[=ENV]@HOST[,HOST...][#HEADER]} options: secrets whose values
 * come from the server's own environment (variable {@code ENV}, by default {@code NAME}), so that
 * no value is ever on a command line. Each is checked as the agent checks its secrets; the values
 * never appear in a message.
 */
final class EgressSecretOptions {
  static final String OPTION = "--egress-secret";
  private static final Pattern VARIABLE = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

  /** The secrets so far, and the variable each one's value came from. */
  private final List<EgressSecret> secrets = new ArrayList<>();
  private final Map<String, String> sources = new LinkedHashMap<>();
  /** Checks the count, and unique names and values, as a sandbox's spec does. */
  private final SandboxSpec.Builder check = SandboxSpec.builder();

  /** Reads one option's value against the server's environment. */
  void add(String text, Map<String, String> env) {
    int at = text.indexOf('@');
    if (at <= 0 || at == text.length() - 1) {
      throw usage(text, "expected NAME[=ENV]@HOST[,HOST...][#HEADER], e.g. ANTHROPIC_API_KEY@api.anthropic.com#x-api-key");
    }
    String left = text.substring(0, at);
    String right = text.substring(at + 1);
    int eq = left.indexOf('=');
    String name = eq < 0 ? left : left.substring(0, eq);
    String variable = eq < 0 ? left : left.substring(eq + 1);
    if (!VARIABLE.matcher(variable).matches()) {
      throw usage(text, "'" + variable + "' is not an environment variable name");
    }
    if (AdapterConfig.OWN_SECRETS.contains(variable)) {
      throw usage(text, "the server's own token is never a secret of its sandboxes");
    }
    int hash = right.indexOf('#');
    String header = hash < 0 ? null : right.substring(hash + 1);
    List<String> hosts = Arrays.asList((hash < 0 ? right : right.substring(0, hash)).split(",", -1));
    String value = env.get(variable);
    if (value == null) {
      throw usage(text, "the variable " + variable + " is not set in the server's environment");
    }
    try {
      EgressSecret secret = new EgressSecret(name, value, hosts, header);
      check.egressSecret(secret);
      secrets.add(secret);
      sources.put(name, variable);
    } catch (IllegalArgumentException | NullPointerException e) {
      throw usage(text, e.getMessage());
    }
  }

  boolean isEmpty() {
    return secrets.isEmpty();
  }

  /** The first option given, for messages. */
  String first() {
    return secrets.isEmpty() ? OPTION : OPTION + " " + secrets.get(0).name() + "@...";
  }

  /**
   * Refuses a {@code --pass-env} variable that would put a secret's value, or something in place
   * of its placeholder, into every command's environment.
   */
  void checkPassEnv(Map<String, String> passEnv) {
    sources.forEach((name, variable) -> {
      if (passEnv.containsKey(name) || passEnv.containsKey(variable)) {
        String passed = passEnv.containsKey(name) ? name : variable;
        throw new UsageException("--pass-env " + passed + " conflicts with " + OPTION + " " + name + ": it would give"
            + " every command " + (passed.equals(variable) ? "the value the secret keeps out of the sandbox"
            : "a value in place of the secret's placeholder"));
      }
    });
  }

  List<EgressSecret> secrets() {
    return List.copyOf(secrets);
  }

  private static UsageException usage(String text, String why) {
    return new UsageException(OPTION + " " + text + ": " + why);
  }
}
