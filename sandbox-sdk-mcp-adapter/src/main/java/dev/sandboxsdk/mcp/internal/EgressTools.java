package dev.sandboxsdk.mcp.internal;

import dev.sandboxsdk.EgressEvent;
import dev.sandboxsdk.EgressEventPage;
import dev.sandboxsdk.EgressNotEnabledException;
import dev.sandboxsdk.EgressPolicy;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The egress tool group: {@code getEgressPolicy}, {@code updateEgressPolicy}, {@code
 * listEgressEvents}, over {@link dev.sandboxsdk.SandboxEgress}. A sandbox has an egress proxy only
 * if it was created with a policy (the server's {@code --egress-policy}); on any other each tool
 * answers an error result that says so. Thread-safe.
 */
final class EgressTools implements ToolGroup {
  /** Events per call unless {@code limit} says otherwise. */
  static final int DEFAULT_EVENTS = 100;

  private final Sandboxes sandboxes;

  EgressTools(Sandboxes sandboxes) {
    this.sandboxes = sandboxes;
  }

  @Override
  public void register(Map<String, ToolHandler> tools) {
    tools.put("getEgressPolicy", ToolHandler.blocking(EgressArgs.Get.class, this::getEgressPolicy));
    tools.put("updateEgressPolicy", ToolHandler.blocking(EgressArgs.Update.class, this::updateEgressPolicy));
    tools.put("listEgressEvents", ToolHandler.blocking(EgressArgs.Listing.class, this::listEgressEvents));
  }

  // ---- results, in the order their fields are written

  record Policy(String mode, List<String> rules, String sandboxId) {
    static Policy of(EgressPolicy p, String sandboxId) {
      return new Policy(p.mode().wireName(), p.rules(), sandboxId);
    }
  }

  /** An event as the results show it. */
  record Event(long sequence, String time, String host, int port, String address, boolean allowed, String rule,
      long bytesUp, long bytesDown, String closedAt, String outcome, List<String> secrets) {
    static Event of(EgressEvent e) {
      return new Event(e.sequence(), e.time().toString(), e.host(), e.port(), e.address(), e.allowed(), e.rule(),
          e.bytesUp(), e.bytesDown(), e.closedAt().toString(), e.outcome(), e.secrets());
    }
  }

  record Events(List<Event> events, int count, long lastSequence, boolean more, String sandboxId) {
  }

  ToolOutcome getEgressPolicy(EgressArgs.Get args) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    EgressPolicy p = enabled(sb, () -> sb.sandbox().egress().policy());
    return new ToolOutcome(SandboxTools.json(Policy.of(p, sb.id())), describe(sb, p), false);
  }

  ToolOutcome updateEgressPolicy(EgressArgs.Update args) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    EgressPolicy wanted;
    try {
      wanted = EgressPolicy.of(EgressPolicy.Mode.fromWire(args.mode()), args.rules() != null ? args.rules() : List.of());
    } catch (IllegalArgumentException e) {
      throw new ToolException("Not a valid egress policy: " + e.getMessage() + ". A rule is 'allow' or 'deny', one"
          + " space, and a destination: example.com, *.example.com, 10.0.0.0/8, each optionally with :443 or"
          + " :8000-8999. Nothing was changed.");
    }
    EgressPolicy p = enabled(sb, () -> sb.sandbox().egress().update(wanted));
    return new ToolOutcome(SandboxTools.json(Policy.of(p, sb.id())), describe(sb, p)
        + " New connections follow it; connections already open keep theirs.", false);
  }

  ToolOutcome listEgressEvents(EgressArgs.Listing args) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    long since = args.since() != null ? args.since() : 0;
    int limit = args.limit() != null ? args.limit() : DEFAULT_EVENTS;
    EgressEventPage page = enabled(sb, () -> sb.sandbox().egress().events(since, limit));
    List<Event> events = page.events().stream().map(Event::of).toList();
    long refused = page.events().stream().filter(e -> !e.allowed()).count();
    String text = events.isEmpty()
        ? "No connection attempts in sandbox '" + sb.id() + "' after " + since + "."
        : events.size() + " connection attempt(s) in sandbox '" + sb.id() + "', " + refused + " refused"
            + (page.more() ? "; more follow: call again with since " + page.lastSequence() : "") + ".";
    return new ToolOutcome(SandboxTools.json(new Events(events, events.size(), page.lastSequence(), page.more(),
        sb.id())), text, false);
  }

  private static String describe(Sandboxes.Entry sb, EgressPolicy p) {
    return "Egress of sandbox '" + sb.id() + "': " + p.mode().wireName()
        + (p.rules().isEmpty() ? " with no rules." : ", rules in order: " + String.join("; ", p.rules()) + ".");
  }

  private static <T> T enabled(Sandboxes.Entry sb, Supplier<T> call) {
    try {
      return call.get();
    } catch (EgressNotEnabledException e) {
      throw new ToolException("Sandbox '" + sb.id() + "' has no egress proxy: it was created without an egress"
          + " policy, so its commands' connections are neither filtered nor recorded. A server started with"
          + " --egress-policy FILE gives every local sandbox it creates that policy.");
    }
  }
}
