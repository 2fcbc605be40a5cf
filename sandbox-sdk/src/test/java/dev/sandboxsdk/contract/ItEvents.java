package dev.sandboxsdk.contract;

import dev.sandboxsdk.LogEvent;
import dev.sandboxsdk.StdStream;
import java.util.List;

/** Reads the output back out of recorded {@link LogEvent}s, checking that offsets are contiguous. */
public final class ItEvents {
  private ItEvents() {}

  /**
   * The text of one stream's {@link LogEvent.Output} events, in order.
   *
   * @throws AssertionError if an event does not start where the previous one of its stream ended
   */
  public static String logText(List<LogEvent> events, StdStream stream) {
    StringBuilder text = new StringBuilder();
    long next = -1;
    for (LogEvent e : events) {
      if (e instanceof LogEvent.Output && ((LogEvent.Output) e).stream() == stream) {
        LogEvent.Output out = (LogEvent.Output) e;
        if (next >= 0 && out.offset() != next) {
          throw new AssertionError("the " + stream + " event " + out + " starts at " + out.offset()
              + " but the previous one ended at " + next);
        }
        next = out.nextOffset();
        text.append(out.text());
      }
    }
    return text.toString();
  }
}
