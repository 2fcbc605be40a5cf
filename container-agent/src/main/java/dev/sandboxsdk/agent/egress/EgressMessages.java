package dev.sandboxsdk.agent.egress;

import java.util.List;

/** Wire records of the egress routes ({@link EgressRoutes}); every component is always written. */
final class EgressMessages {
  private EgressMessages() {
  }

  /**
   * The policy in force: its mode ({@code off}, {@code allow-list}, {@code open}), its rules as
   * text in order, and the proxy's URL as commands see it.
   */
  record Policy(String mode, List<String> rules, String proxyUrl) {
  }

  /** One connection attempt ({@link EgressEvent}); {@code address} is null when refused before one was known. */
  record Event(long sequence, String time, String host, int port, String address, boolean allowed, String rule,
      long bytesUp, long bytesDown, String closedAt, String outcome, List<String> secrets) {

    static Event of(EgressEvent e) {
      return new Event(e.sequence(), e.time().toString(), e.host(), e.port(), e.address(), e.allowed(), e.rule(),
          e.bytesUp(), e.bytesDown(), e.closedAt().toString(), e.outcome(), e.secrets());
    }
  }

  /**
   * Events after the sequence asked for, oldest first; {@code lastSequence} is the latest event
   * recorded (ask with it next), {@code more} whether the limit left some out.
   */
  record Events(List<Event> events, long lastSequence, boolean more) {
  }
}
