package dev.sandboxsdk.spi;

import dev.sandboxsdk.SandboxSpec;
import dev.sandboxsdk.internal.AgentEgressFiles;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The agent image's contract for a sandbox's network, for providers that run that image (its
 * entry script {@code image/start.sh} reads these variables as root before the agent starts; see
 * docs/containers.md, "The default security policy"). Three modes:
 *
 * <ul>
 *   <li>no network ({@code network(false)}, no egress policy): {@code SANDBOX_NETWORK=off}, a
 *       firewall that leaves commands nothing but loopback;
 *   <li>an egress policy: {@code SANDBOX_NETWORK=egress} and the policy's JSON in {@code
 *       SANDBOX_EGRESS_POLICY}: the same firewall, except that the agent (root) connects out, so
 *       the agent's egress proxy is the commands' only way out, whatever {@code network} says;
 *   <li>otherwise {@code SANDBOX_NETWORK=on}.
 * </ul>
 *
 * The first two need {@code NET_ADMIN} for the entry script, which drops it before the agent starts.
 * Stateless; thread-safe.
 */
public final class AgentImage {
  /** The network mode: {@code on}, {@code off} or {@code egress}. */
  public static final String NETWORK_ENV = "SANDBOX_NETWORK";
  /** The egress policy's JSON (what {@code PUT /api/egress/policy} takes), with {@code egress}. */
  public static final String EGRESS_POLICY_ENV = "SANDBOX_EGRESS_POLICY";
  /** The egress secrets' JSON (what {@code --egress-secrets} reads), with {@code egress}. */
  public static final String EGRESS_SECRETS_ENV = "SANDBOX_EGRESS_SECRETS";

  private AgentImage() {
  }

  /** The variables that set up {@code spec}'s network, in the order to pass them. */
  public static Map<String, String> networkEnvironment(SandboxSpec spec) {
    Map<String, String> env = new LinkedHashMap<>();
    if (spec.egressPolicy() != null) {
      env.put(NETWORK_ENV, "egress");
      env.put(EGRESS_POLICY_ENV, AgentEgressFiles.policyJson(spec.egressPolicy()));
    } else {
      env.put(NETWORK_ENV, spec.network() ? "on" : "off");
    }
    return env;
  }

  /**
   * The spec's egress secrets as the agent reads them ({@code --egress-secrets}), or null for none.
   * The values are in it: hand it to the agent where only the agent (root) can read it, as
   * {@link #EGRESS_SECRETS_ENV} in the container's environment or in a root-only file, and never
   * log it.
   */
  public static String egressSecretsJson(SandboxSpec spec) {
    return spec.egressSecrets().isEmpty() ? null : AgentEgressFiles.secretsJson(spec.egressSecrets());
  }

  /** Whether the entry script needs {@code NET_ADMIN} to install its firewall for {@code spec}. */
  public static boolean needsNetAdmin(SandboxSpec spec) {
    return !spec.network() || spec.egressPolicy() != null;
  }

  /**
   * Whether nothing in the sandbox may connect out, the agent included: no network and no egress
   * policy. A provider that can also cut the network outside the sandbox (a Kubernetes
   * NetworkPolicy) does it only then; with a policy the agent's proxy must reach the destinations
   * it allows.
   */
  public static boolean noEgressAtAll(SandboxSpec spec) {
    return !spec.network() && spec.egressPolicy() == null;
  }
}
