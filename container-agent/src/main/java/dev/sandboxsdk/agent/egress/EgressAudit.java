package dev.sandboxsdk.agent.egress;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The proxy's record of connection attempts: a bounded ring (the oldest events drop out), each
 * event numbered so a reader can ask for what came after the last one it saw. An event is recorded
 * when its connection ends, with its byte counts final; a refusal ends at once. Refusals are logged
 * at INFO, allowed connections at DEBUG. Thread-safe.
 */
public final class EgressAudit {
  private static final Logger log = LoggerFactory.getLogger(EgressAudit.class);
  /** Events kept per proxy unless told otherwise. */
  public static final int DEFAULT_CAPACITY = 1_000;

  private final int capacity;
  private final ArrayDeque<EgressEvent> events = new ArrayDeque<>();
  private long next = 1;

  public EgressAudit() {
    this(DEFAULT_CAPACITY);
  }

  public EgressAudit(int capacity) {
    if (capacity < 1) {
      throw new IllegalArgumentException("capacity < 1");
    }
    this.capacity = capacity;
  }

  /** Numbers the event, keeps it (dropping the oldest if full) and logs it; returns it numbered. */
  EgressEvent record(EgressEvent event) {
    EgressEvent numbered = recordQuietly(event);
    if (numbered.allowed()) {
      log.debug("egress allowed {}:{} -> {} by '{}' ({}; up {} B, down {} B{})", numbered.host(), numbered.port(),
          numbered.address(), numbered.rule(), numbered.outcome(), numbered.bytesUp(), numbered.bytesDown(),
          numbered.secrets().isEmpty() ? "" : "; secrets " + numbered.secrets());
    } else {
      log.info("egress denied {}:{} ({}) by '{}'{}", numbered.host(), numbered.port(), numbered.address(),
          numbered.rule(), numbered.secrets().isEmpty() ? "" : " (secrets " + numbered.secrets() + ")");
    }
    return numbered;
  }

  /** Numbers and keeps the event without logging it (the caller logs a flood of them in summary). */
  synchronized EgressEvent recordQuietly(EgressEvent event) {
    EgressEvent numbered = event.withSequence(next++);
    if (events.size() == capacity) {
      events.removeFirst();
    }
    events.addLast(numbered);
    return numbered;
  }

  /** The events kept with a sequence number above {@code sequence}, oldest first (0 for all). */
  public synchronized List<EgressEvent> since(long sequence) {
    List<EgressEvent> out = new ArrayList<>();
    for (EgressEvent e : events) {
      if (e.sequence() > sequence) {
        out.add(e);
      }
    }
    return out;
  }

  /** The number of the latest event recorded, 0 if none. */
  public synchronized long lastSequence() {
    return next - 1;
  }

  public int capacity() {
    return capacity;
  }
}
