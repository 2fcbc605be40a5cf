package dev.sandboxsdk;

import java.util.List;
import java.util.Objects;

/**
 * A page of a sandbox's egress audit ({@link SandboxEgress#events(long, int)}).
 *
 * @param events the events, oldest first
 * @param lastSequence what to pass as {@code since} next: the last event here when {@link #more()},
 *     else the latest the agent recorded, so a reader that passes it misses none and sees none twice
 * @param more whether the limit left events out (ask again at once with {@code lastSequence})
 */
public record EgressEventPage(List<EgressEvent> events, long lastSequence, boolean more) {

  /** Copies. */
  public EgressEventPage {
    events = List.copyOf(Objects.requireNonNull(events, "events == null"));
  }
}
