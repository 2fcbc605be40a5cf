package dev.sandboxsdk;

/**
 * The egress proxy of a sandbox ({@link Sandbox#egress()}): the policy its commands' outbound
 * connections go through, and the audit of what they tried.
 *
 * <pre>{@code
 * sandbox.egress().update(EgressPolicy.allowList("pypi.org:443", "files.pythonhosted.org:443"));
 * sandbox.exec("pip install requests");
 * for (EgressEvent e : sandbox.egress().events(0, 100).events()) {
 *   System.out.println(e.host() + ":" + e.port() + (e.allowed() ? " allowed by " : " refused by ") + e.rule());
 * }
 * }</pre>
 *
 * <p>A sandbox has an egress proxy only if it was created with a policy
 * ({@link SandboxSpec.Builder#egressPolicy(EgressPolicy)}, {@code LocalSandbox.Builder.egressPolicy});
 * on any other every method throws {@link EgressNotEnabledException}. What the policy enforces
 * depends on the sandbox: isolated without network, the proxy is the commands' only way out;
 * without isolation (or with network on) it is advisory, followed by the programs that honour
 * the proxy variables (see docs/user-guide.md, "Network egress").
 *
 * <p><b>Errors.</b> Every method throws unchecked exceptions: the ones each method names, plus
 * the connection, timeout and auth exceptions of every {@link Sandbox} call.
 *
 * <p><b>Threading.</b> Thread-safe and stateless: each call is one request, which blocks the
 * calling thread until the agent answered. The view costs nothing to get. After the sandbox is
 * closed every method throws {@link IllegalStateException}.
 */
public interface SandboxEgress {

  /**
   * The policy in force, its rules in the agent's canonical form.
   *
   * @throws EgressNotEnabledException if the sandbox has no egress proxy
   */
  EgressPolicy policy();

  /**
   * Replaces the policy. Every connection that starts after this returns is decided by the new
   * policy; one already decided (an open tunnel) keeps its decision.
   *
   * @return the policy in force now, its rules in the agent's canonical form
   * @throws SandboxInvalidRequestException ({@code VALIDATION_FAILED}) if the agent refuses a rule;
   *     {@code context()} then has {@code field} ({@code rules[i]}) and {@code rule}, and the old
   *     policy stands
   * @throws EgressNotEnabledException if the sandbox has no egress proxy
   */
  EgressPolicy update(EgressPolicy policy);

  /**
   * The connection attempts recorded after {@code since}, oldest first, at most {@code limit}. The
   * agent keeps the latest 1,000; a larger limit is lowered to that.
   *
   * <pre>{@code
   * long seen = 0;
   * EgressEventPage page;
   * do {
   *   page = sandbox.egress().events(seen, 1000);
   *   page.events().forEach(System.out::println);
   *   seen = page.lastSequence();
   * } while (page.more());
   * }</pre>
   *
   * @param since the sequence number after which to start (0 for the oldest kept)
   * @param limit at most this many events, at least 1
   * @throws IllegalArgumentException if {@code since} is negative or {@code limit} below 1
   * @throws EgressNotEnabledException if the sandbox has no egress proxy
   */
  EgressEventPage events(long since, int limit);
}
