package dev.sandboxsdk.agent.process;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;
import net.jqwik.api.constraints.Size;

/**
 * Properties of {@link OutputLog}: after any sequence of appends, a read at any offset returns
 * exactly the stream's bytes from there, and an offset before the window is refused, so the caller
 * reports {@code oldest() - offset} bytes as dropped.
 */
class OutputLogPropertyTest {
  /** The byte at absolute offset {@code o} of the stream: distinct enough to catch a shifted window. */
  private static byte at(long o) {
    return (byte) (o * 31 + (o >>> 8) + 7);
  }

  @Property(tries = 500)
  void readsReturnExactlyTheWindowAndEverythingBeforeItIsDropped(
      @ForAll @IntRange(min = 1, max = 10_000) int capacity,
      @ForAll @LongRange(min = 1, max = 40_000) long budgetBytes,
      @ForAll @Size(max = 30) List<@IntRange(min = 0, max = 12_000) Integer> appends,
      @ForAll @Size(min = 1, max = 10) List<@IntRange(min = 0, max = 100) Integer> readPercents,
      @ForAll @IntRange(min = 1, max = 12_000) int maxRead) {
    // Budget too small for the floor: forceReserve still grants it (a process can always be read).
    OutputBudget budget = new OutputBudget(budgetBytes);
    OutputLog log = new OutputLog(capacity, budget);
    long total = 0;
    long retained = 0;
    for (int len : appends) {
      byte[] chunk = new byte[len + 3];
      for (int i = 0; i < len; i++) {
        chunk[i + 2] = at(total + i);
      }
      log.append(chunk, 2, len);
      total += len;

      assertThat(log.end()).isEqualTo(total);
      assertThat(log.allocated()).isLessThanOrEqualTo(capacity);
      // Only bytes that did not fit are dropped: the window keeps what it had plus the new bytes, up
      // to its buffer. (Not min(total, buffer): bytes dropped while the budget refused a growth
      // stay dropped when a later growth succeeds.)
      retained = Math.min(log.allocated(), retained + len);
      assertThat(log.end() - log.oldest()).isEqualTo(retained);
      if (budgetBytes >= 2L * capacity + OutputLog.INITIAL_BYTES) {
        assertThat(log.oldest()).isEqualTo(Math.max(0, total - capacity));
      }
      for (int percent : readPercents) {
        long from = log.oldest() + (log.end() - log.oldest()) * percent / 100;
        byte[] dst = new byte[maxRead + 1];
        int n = log.read(from, dst, 1, maxRead);
        assertThat(n).isEqualTo((int) Math.min(maxRead, total - from));
        for (int i = 0; i < n; i++) {
          assertThat(dst[i + 1]).as("byte at offset %d", from + i).isEqualTo(at(from + i));
        }
      }
      if (log.oldest() > 0) {
        long dropped = log.oldest();
        assertThatThrownBy(() -> log.read(0, new byte[1], 0, 1))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("outside [" + dropped + ", ");
      }
    }
    assertThat(budget.used()).isEqualTo(log.allocated());
  }
}
