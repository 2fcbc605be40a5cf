package dev.sandboxsdk;

import java.util.concurrent.Flow;

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
 * <p><b>Threading.</b> Thread-safe and stateless: each call but {@link #watch} is one request,
 * which blocks the calling thread until the agent answered. The view costs nothing to get. After
 * the sandbox is closed every method throws {@link IllegalStateException} ({@link #watch}'s
 * publisher signals it to its subscriber).
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

  /**
   * Follows the audit: every connection attempt recorded after {@code since}, oldest first, and
   * then each new one as the agent records it (when its connection ends), until cancelled.
   *
   * <pre>{@code
   * sandbox.egress().watch(0).subscribe(new Flow.Subscriber<>() {
   *   Flow.Subscription s;
   *   public void onSubscribe(Flow.Subscription s) { this.s = s; s.request(16); }
   *   public void onNext(EgressEvent e) {
   *     if (!e.allowed()) log.warn("refused {}:{} by {}", e.host(), e.port(), e.rule());
   *     s.request(1);
   *   }
   *   public void onError(Throwable t) { }
   *   public void onComplete() { }
   * });
   * }</pre>
   *
   * <p>The agent has no stream of its audit, so the publisher polls {@link #events(long, int)}:
   * at once again while events are waiting, and every half second when there were none. Like the
   * SDK's other publishers it is lazy (nothing is asked before the first {@code request}),
   * single-subscriber (a second subscriber gets {@code onError(IllegalStateException)}) and
   * demand-driven: it polls only while the subscriber has requested more than it got, and it
   * holds at most one page (1,000 events) that was not yet delivered. {@code cancel()} stops the
   * polling and cancels a poll in flight. An open watch counts as an open stream, so the
   * sandbox's idle timeout does not end it. Signals come on an SDK thread, never on the caller's.
   *
   * <p>It never completes: it ends with {@code onError} when the sandbox is closed
   * ({@link SandboxConnectionException}; {@link IllegalStateException} if it was closed before
   * the first request), when the sandbox has no egress proxy
   * ({@link EgressNotEnabledException}, at the first poll), or when a poll fails (the connection,
   * auth and server exceptions of every call). The agent keeps the latest 1,000 events; a
   * subscriber that falls further behind than that sees a gap in the {@link EgressEvent#sequence()
   * sequence} numbers where events were dropped.
   *
   * @param since the sequence number after which to start (0 for the oldest kept; the
   *     {@link EgressEventPage#lastSequence()} of a page to go on from it)
   * @throws IllegalArgumentException if {@code since} is negative
   */
  Flow.Publisher<EgressEvent> watch(long since);
}
