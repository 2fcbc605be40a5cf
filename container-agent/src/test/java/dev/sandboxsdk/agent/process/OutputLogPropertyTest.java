package dev.sandboxsdk.agent.process;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Properties of {@link OutputLog}: after any sequence of appends, a read at any offset returns
 * exactly the stream's bytes from there, and an offset before the window is refused, so the caller
 * reports {@code oldest() - offset} bytes as dropped. The cases come from a seed, random unless
 * {@code -Dproperty.seed=N} fixes it; a failure names the seed and the case, so it can be replayed.
 */
class OutputLogPropertyTest {
  private static final int CASES = 2000;

  /** The byte at absolute offset {@code o} of the stream: distinct enough to catch a shifted window. */
  private static byte at(long o) {
    return (byte) (o * 31 + (o >>> 8) + 7);
  }

  @Test
  void readsReturnExactlyTheWindowAndEverythingBeforeItIsDropped() {
    long seed = Long.getLong("property.seed", System.nanoTime());
    SplittableRandom random = new SplittableRandom(seed);
    for (int i = 0; i < CASES; i++) {
      // Small capacities and budgets half the time, so that windows wrap and the budget refuses.
      boolean small = random.nextBoolean();
      int capacity = 1 + random.nextInt(small ? 300 : 10_000);
      long budgetBytes = 1 + random.nextLong(small ? 1_000 : 40_000);
      int[] appends = new int[random.nextInt(31)];
      for (int a = 0; a < appends.length; a++) {
        appends[a] = random.nextInt(small ? 400 : 12_001);
      }
      int[] readPercents = new int[1 + random.nextInt(10)];
      for (int r = 0; r < readPercents.length; r++) {
        readPercents[r] = random.nextInt(101);
      }
      int maxRead = 1 + random.nextInt(small ? 500 : 12_000);
      try {
        check(capacity, budgetBytes, appends, readPercents, maxRead);
      } catch (AssertionError e) {
        throw new AssertionError("case " + i + " of seed " + seed + " (replay: -Dproperty.seed=" + seed
            + "), capacity " + capacity + ", budget " + budgetBytes + ", appends " + Arrays.toString(appends)
            + ", reads at " + Arrays.toString(readPercents) + "% of at most " + maxRead + ": "
            + e.getMessage(), e);
      }
    }
  }

  private static void check(int capacity, long budgetBytes, int[] appends, int[] readPercents, int maxRead) {
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
          if (dst[i + 1] != at(from + i)) {
            assertThat(dst[i + 1]).as("byte at offset %d", from + i).isEqualTo(at(from + i));
          }
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
