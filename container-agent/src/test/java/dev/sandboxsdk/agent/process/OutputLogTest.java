package dev.sandboxsdk.agent.process;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.lang.reflect.Field;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

class OutputLogTest {
  @Test
  void emptyLogStartsAndEndsAtZero() {
    OutputLog log = new OutputLog(8, new OutputBudget(Long.MAX_VALUE));

    assertThat(log.end()).isZero();
    assertThat(log.oldest()).isZero();
    assertThat(log.read(0, new byte[4], 0, 4)).isZero();
  }

  @Test
  void retainsEverythingWhileWithinCapacity() {
    OutputLog log = new OutputLog(8, new OutputBudget(Long.MAX_VALUE));

    append(log, "abc");
    append(log, "def");

    assertThat(log.end()).isEqualTo(6);
    assertThat(log.oldest()).isZero();
    assertThat(readAll(log, 0)).isEqualTo("abcdef");
  }

  @Test
  void wrapsAroundAndKeepsTheLastCapacityBytes() {
    OutputLog log = new OutputLog(8, new OutputBudget(Long.MAX_VALUE));

    append(log, "abcde");
    append(log, "fghij");
    append(log, "klm");

    assertThat(log.end()).isEqualTo(13);
    assertThat(log.oldest()).isEqualTo(5);
    assertThat(readAll(log, 5)).isEqualTo("fghijklm");
    assertThat(readAll(log, 11)).isEqualTo("lm");
  }

  @Test
  void appendLargerThanCapacityKeepsItsLastCapacityBytes() {
    OutputLog log = new OutputLog(4, new OutputBudget(Long.MAX_VALUE));
    append(log, "ab");

    append(log, "0123456789");

    assertThat(log.end()).isEqualTo(12);
    assertThat(log.oldest()).isEqualTo(8);
    assertThat(readAll(log, 8)).isEqualTo("6789");
  }

  @Test
  void appendOfExactlyCapacityReplacesTheWholeWindow() {
    OutputLog log = new OutputLog(4, new OutputBudget(Long.MAX_VALUE));
    append(log, "xyz");

    append(log, "abcd");

    assertThat(log.oldest()).isEqualTo(3);
    assertThat(readAll(log, 3)).isEqualTo("abcd");
  }

  @Test
  void appendUsesOnlyTheGivenRangeOfTheSource() {
    OutputLog log = new OutputLog(8, new OutputBudget(Long.MAX_VALUE));
    byte[] src = "--abc--".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

    log.append(src, 2, 3);

    assertThat(readAll(log, 0)).isEqualTo("abc");
  }

  @Test
  void readCopiesAtMostMaxBytesToTheRequestedPlace() {
    OutputLog log = new OutputLog(8, new OutputBudget(Long.MAX_VALUE));
    append(log, "abcdefghij");
    byte[] dst = "..........".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

    int n = log.read(4, dst, 3, 2);

    assertThat(n).isEqualTo(2);
    assertThat(new String(dst, java.nio.charset.StandardCharsets.US_ASCII)).isEqualTo("...ef.....");
  }

  @Test
  void readAtTheEndReturnsNothing() {
    OutputLog log = new OutputLog(8, new OutputBudget(Long.MAX_VALUE));
    append(log, "abcdefghij");

    assertThat(log.read(log.end(), new byte[8], 0, 8)).isZero();
  }

  @Test
  void readOutsideTheWindowIsRejected() {
    OutputLog log = new OutputLog(4, new OutputBudget(Long.MAX_VALUE));
    append(log, "abcdefgh");

    assertThatThrownBy(() -> log.read(3, new byte[8], 0, 8))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("3");
    assertThatThrownBy(() -> log.read(9, new byte[8], 0, 8))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> log.read(-1, new byte[8], 0, 8))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void growsLazilySoAnIdleLogCostsLittleMemory() throws Exception {
    // The class promises lazy growth but exposes no size; the backing array is the only witness.
    OutputLog log = new OutputLog(1 << 20, new OutputBudget(Long.MAX_VALUE));
    assertThat(backingArray(log)).hasSizeLessThanOrEqualTo(4096);

    append(log, "a short line\n");
    assertThat(backingArray(log)).hasSizeLessThanOrEqualTo(4096);

    log.append(new byte[10_000], 0, 10_000);
    assertThat(backingArray(log).length).isBetween(10_000, 1 << 20);
  }

  @Test
  void neverGrowsBeyondCapacity() throws Exception {
    OutputLog log = new OutputLog(5000, new OutputBudget(Long.MAX_VALUE));

    for (int i = 0; i < 10; i++) {
      log.append(new byte[3000], 0, 3000);
    }

    assertThat(backingArray(log)).hasSize(5000);
  }

  @Test
  void keepsContentIntactWhileGrowingPastTheInitialAllocation() {
    OutputLog log = new OutputLog(10_000, new OutputBudget(Long.MAX_VALUE));
    ByteArrayOutputStream all = new ByteArrayOutputStream();
    byte[] chunk = new byte[1500];
    for (int i = 0; i < 20; i++) {
      Arrays.fill(chunk, (byte) i);
      chunk[0] = (byte) (100 + i);
      log.append(chunk, 0, chunk.length);
      all.write(chunk, 0, chunk.length);

      assertWindowMatches(log, all.toByteArray(), 10_000, "after chunk " + i);
    }
  }

  /** Reference model: the window is always the last {@code capacity} bytes ever appended. */
  @Test
  void readFromAnyOffsetInTheWindowMatchesAReferenceOfAllAppendedBytes() {
    for (long seed = 0; seed < 300; seed++) {
      Random random = new Random(seed);
      int capacity = random.nextBoolean() ? 1 + random.nextInt(64) : 1 + random.nextInt(12_000);
      OutputLog log = new OutputLog(capacity, new OutputBudget(Long.MAX_VALUE));
      ByteArrayOutputStream all = new ByteArrayOutputStream();

      int appends = random.nextInt(40);
      for (int a = 0; a < appends; a++) {
        int len = random.nextInt(10) == 0 ? random.nextInt(3 * capacity + 1)
            : random.nextInt(Math.max(1, capacity / 3));
        byte[] src = new byte[len + 4];
        random.nextBytes(src);
        int off = random.nextInt(5);
        len = Math.min(len, src.length - off);
        log.append(src, off, len);
        all.write(src, off, len);

        String where = "seed " + seed + ", capacity " + capacity + ", append " + a;
        assertWindowMatches(log, all.toByteArray(), capacity, where);
        // A few reads of random length from random offsets, as a resuming client does.
        for (int r = 0; r < 3; r++) {
          long from = log.oldest() + (long) (random.nextDouble() * (log.end() - log.oldest() + 1));
          from = Math.min(from, log.end());
          int max = random.nextInt(capacity + 2);
          byte[] dst = new byte[max + 1];
          int n = log.read(from, dst, 1, max);
          int expectedN = (int) Math.min(max, log.end() - from);
          assertThat(n).as(where + ", read from " + from).isEqualTo(expectedN);
          assertThat(Arrays.copyOfRange(dst, 1, 1 + n)).as(where + ", read from " + from)
              .isEqualTo(Arrays.copyOfRange(all.toByteArray(), (int) from, (int) from + n));
        }
      }
    }
  }

  private static void assertWindowMatches(OutputLog log, byte[] all, int capacity, String where) {
    assertThat(log.end()).as(where + ": end").isEqualTo(all.length);
    assertThat(log.oldest()).as(where + ": oldest").isEqualTo(Math.max(0, all.length - capacity));
    for (long from = log.oldest(); from <= log.end(); from += Math.max(1, capacity / 7)) {
      byte[] dst = new byte[capacity];
      int n = log.read(from, dst, 0, capacity);
      assertThat(n).as(where + ": bytes read from " + from).isEqualTo((int) (log.end() - from));
      assertThat(Arrays.copyOf(dst, n)).as(where + ": read from " + from)
          .isEqualTo(Arrays.copyOfRange(all, (int) from, all.length));
    }
  }

  private static void append(OutputLog log, String ascii) {
    byte[] b = ascii.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    log.append(b, 0, b.length);
  }

  private static String readAll(OutputLog log, long from) {
    byte[] dst = new byte[(int) (log.end() - from)];
    int n = log.read(from, dst, 0, dst.length);
    return new String(dst, 0, n, java.nio.charset.StandardCharsets.US_ASCII);
  }

  private static byte[] backingArray(OutputLog log) throws ReflectiveOperationException {
    Field buf = OutputLog.class.getDeclaredField("buf");
    buf.setAccessible(true);
    return (byte[]) buf.get(log);
  }
}
