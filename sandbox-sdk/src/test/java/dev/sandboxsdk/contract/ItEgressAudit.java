package dev.sandboxsdk.contract;

import dev.sandboxsdk.EgressEvent;
import dev.sandboxsdk.Sandbox;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * Reads a sandbox's egress audit once it shows what a test waits for. The proxy records a
 * connection when it ends, which can be just after the client has read its answer and the
 * command has returned, so a test that reads the audit straight away may miss the last event.
 */
public final class ItEgressAudit {
  private ItEgressAudit() {}

  /** The audit (the first 1,000 events) once {@code ready} holds for it, or as it is after 10 s. */
  public static List<EgressEvent> once(Sandbox sandbox, Predicate<List<EgressEvent>> ready) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    List<EgressEvent> events = sandbox.egress().events(0, 1000).events();
    while (!ready.test(events) && System.nanoTime() < deadline) {
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted", e);
      }
      events = sandbox.egress().events(0, 1000).events();
    }
    return events;
  }

  /** The audit once an event matches {@code awaited}, or as it is after 10 s. */
  public static List<EgressEvent> onceAny(Sandbox sandbox, Predicate<EgressEvent> awaited) {
    return once(sandbox, events -> events.stream().anyMatch(awaited));
  }
}
