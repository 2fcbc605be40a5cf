package dev.sandboxsdk.agent.egress;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import org.junit.jupiter.api.Test;

class EgressAuditTest {
  private static EgressEvent event(String host, boolean allowed) {
    return new EgressEvent(0, Instant.now(), host, 443, "93.184.216.34", allowed, allowed ? "allow x" : "no-rule",
        1, 2, Instant.now(), "closed", java.util.List.of());
  }

  @Test
  void numbersEventsAndKeepsTheNewestWithinItsCapacity() {
    EgressAudit audit = new EgressAudit(3);
    for (int i = 1; i <= 5; i++) {
      assertThat(audit.record(event("h" + i, i % 2 == 0)).sequence()).isEqualTo(i);
    }
    assertThat(audit.lastSequence()).isEqualTo(5);
    assertThat(audit.since(0)).extracting(EgressEvent::host).containsExactly("h3", "h4", "h5");
    assertThat(audit.since(4)).extracting(EgressEvent::sequence).containsExactly(5L);
    assertThat(audit.since(5)).isEmpty();
    assertThat(new EgressAudit().capacity()).isEqualTo(1_000);
  }
}
