package dev.sandboxsdk.agent.text;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;

class Utf8SanitizerTest {
  private static final String REPLACEMENT = "\uFFFD";

  @Test
  void validMultiByteTextPassesThroughUnchanged() {
    byte[] in = "plain ASCII, é, €, 😀 and 中文".getBytes(UTF_8);
    Utf8Sanitizer sanitizer = new Utf8Sanitizer();
    ByteBuf out = new ByteBuf(16);

    sanitizer.sanitize(in, 0, in.length, false, out);

    assertThat(out.toByteArray()).isEqualTo(in);
    assertThat(sanitizer.pending()).isZero();
  }

  @Test
  void sanitizesOnlyTheGivenRangeOfTheInput() {
    byte[] in = "xxé€yy".getBytes(UTF_8);
    ByteBuf out = new ByteBuf(16);

    new Utf8Sanitizer().sanitize(in, 2, in.length - 4, false, out);

    assertThat(out.toString()).isEqualTo("é€");
  }

  @Test
  void appendsAfterWhatTheOutputBufferAlreadyHolds() {
    ByteBuf out = new ByteBuf(16).ascii("head:");
    byte[] in = "é".getBytes(UTF_8);

    new Utf8Sanitizer().sanitize(in, 0, in.length, true, out);

    assertThat(out.toString()).isEqualTo("head:é");
  }

  /** Every split position inside each 2-, 3- and 4-byte sequence, with ASCII on both sides. */
  static Stream<Arguments> splitCodePoints() {
    return Stream.of("é", "€", "😀").flatMap(cp -> IntStream.range(1, cp.getBytes(UTF_8).length)
        .mapToObj(split -> Arguments.of(cp, split)));
  }

  @ParameterizedTest(name = "{0} split after byte {1}")
  @MethodSource("splitCodePoints")
  void codePointSplitAcrossTwoCallsIsEmittedWholeAndOnlyOnce(String codePoint, int split) {
    byte[] cp = codePoint.getBytes(UTF_8);
    byte[] first = concat("a".getBytes(UTF_8), slice(cp, 0, split));
    byte[] second = concat(slice(cp, split, cp.length), "b".getBytes(UTF_8));
    Utf8Sanitizer sanitizer = new Utf8Sanitizer();

    ByteBuf out1 = new ByteBuf(16);
    sanitizer.sanitize(first, 0, first.length, false, out1);
    assertThat(out1.toString()).isEqualTo("a");
    assertThat(sanitizer.pending()).isEqualTo(split);

    ByteBuf out2 = new ByteBuf(16);
    sanitizer.sanitize(second, 0, second.length, false, out2);
    assertThat(out2.toString()).isEqualTo(codePoint + "b");
    assertThat(sanitizer.pending()).isZero();
  }

  @Test
  void fourByteCodePointFedOneByteAtATimeIsHeldUntilComplete() {
    byte[] emoji = "😀".getBytes(UTF_8);
    Utf8Sanitizer sanitizer = new Utf8Sanitizer();
    ByteBuf out = new ByteBuf(16);

    for (int i = 0; i < 3; i++) {
      sanitizer.sanitize(emoji, i, 1, false, out);
      assertThat(out.size()).isZero();
      assertThat(sanitizer.pending()).isEqualTo(i + 1);
    }
    sanitizer.sanitize(emoji, 3, 1, false, out);

    assertThat(out.toString()).isEqualTo("😀");
    assertThat(sanitizer.pending()).isZero();
  }

  @Test
  void emptyChunkKeepsHeldBytesHeld() {
    Utf8Sanitizer sanitizer = new Utf8Sanitizer();
    ByteBuf out = new ByteBuf(16);
    sanitizer.sanitize(bytes(0xE2, 0x82), 0, 2, false, out);

    sanitizer.sanitize(new byte[0], 0, 0, false, out);

    assertThat(out.size()).isZero();
    assertThat(sanitizer.pending()).isEqualTo(2);
  }

  // Expected values are what new String(bytes, UTF_8) gives on JDK 17; the test also checks that
  // against the running JDK so the table cannot drift from the oracle the Javadoc names.
  @ParameterizedTest(name = "{0} -> {1}")
  @CsvSource({
      "ff,          \uFFFD",
      "80,          \uFFFD",
      "41ff42,      A\uFFFDB",
      "c0af,        \uFFFD\uFFFD",
      "e08080,      \uFFFD\uFFFD\uFFFD",
      "f0808080,    \uFFFD\uFFFD\uFFFD\uFFFD",
      "f4908080,    \uFFFD\uFFFD\uFFFD\uFFFD",
      "f5,          \uFFFD",
      "e28241,      \uFFFDA",
      "f09f9841,    \uFFFDA",
      "c241,        \uFFFDA",
      "e282ac80,    €\uFFFD",
      // JDK treats an encoded UTF-16 surrogate as one malformed sequence, not one per byte.
      "eda080,      \uFFFD",
      "edbfbf41,    \uFFFDA",
      "eda041,      \uFFFDA",
  })
  void invalidBytesBecomeReplacementCharactersAsTheJdkDecoderProduces(String hex, String expected) {
    byte[] in = HexFormat.of().parseHex(hex);
    assertThat(new String(in, UTF_8)).as("JDK oracle").isEqualTo(expected);

    assertThat(sanitizeAtOnce(in)).isEqualTo(expected);
    // The same bytes fed one at a time must not change how they are replaced.
    assertThat(sanitizeOneByteAtATime(in)).isEqualTo(expected);
  }

  @Test
  void heldBytesThatTurnOutInvalidBecomeOneReplacementAndTheRestSurvives() {
    Utf8Sanitizer sanitizer = new Utf8Sanitizer();
    ByteBuf out = new ByteBuf(16);

    sanitizer.sanitize(bytes(0xE2, 0x82), 0, 2, false, out);
    sanitizer.sanitize(bytes('A', 'B'), 0, 2, false, out);

    assertThat(out.toString()).isEqualTo(REPLACEMENT + "AB");
    assertThat(sanitizer.pending()).isZero();
  }

  @Test
  void endOfInputTurnsHeldPartialSequenceIntoOneReplacement() {
    Utf8Sanitizer sanitizer = new Utf8Sanitizer();
    ByteBuf out = new ByteBuf(16);
    sanitizer.sanitize(bytes('a', 0xF0, 0x9F, 0x98), 0, 4, false, out);
    assertThat(sanitizer.pending()).isEqualTo(3);

    sanitizer.sanitize(new byte[0], 0, 0, true, out);

    assertThat(out.toString()).isEqualTo("a" + REPLACEMENT);
    assertThat(sanitizer.pending()).isZero();
  }

  @Test
  void endOfInputHoldsNothingBackFromTheLastChunk() {
    Utf8Sanitizer sanitizer = new Utf8Sanitizer();
    ByteBuf out = new ByteBuf(16);

    sanitizer.sanitize(bytes('a', 0xE2, 0x82), 0, 3, true, out);

    assertThat(out.toString()).isEqualTo("a" + REPLACEMENT);
    assertThat(sanitizer.pending()).isZero();
  }

  @Test
  void resetDropsHeldBytes() {
    Utf8Sanitizer sanitizer = new Utf8Sanitizer();
    ByteBuf out = new ByteBuf(16);
    sanitizer.sanitize(bytes(0xF0, 0x9F), 0, 2, false, out);

    sanitizer.reset();
    sanitizer.sanitize(bytes('x'), 0, 1, true, out);

    assertThat(sanitizer.pending()).isZero();
    assertThat(out.toString()).isEqualTo("x");
  }

  /**
   * The property the agent relies on: however a stream is chunked, the concatenated output is what
   * the JDK decoder makes of the whole stream.
   */
  @Test
  void incrementalOutputMatchesJdkDecoderForRandomBytesAndRandomSplits() {
    for (long seed = 0; seed < 3000; seed++) {
      Random random = new Random(seed);
      byte[] input = randomUtf8ish(random, random.nextInt(40));
      List<Integer> splits = randomSplits(random, input.length);

      String actual = sanitizeInChunks(input, splits);

      // Hex, because runs of U+FFFD are hard to count by eye.
      assertThat(hex(actual))
          .as("seed %d, input %s, split at %s", seed, HexFormat.of().formatHex(input), splits)
          .isEqualTo(hex(new String(input, UTF_8)));
    }
  }

  /** Independent of the oracle: chunking never changes the result of sanitizing the same bytes. */
  @Test
  void chunkingNeverChangesTheOutput() {
    for (long seed = 0; seed < 3000; seed++) {
      Random random = new Random(seed);
      byte[] input = randomUtf8ish(random, random.nextInt(40));
      List<Integer> splits = randomSplits(random, input.length);

      String actual = sanitizeInChunks(input, splits);

      assertThat(actual)
          .as("seed %d, input %s, split at %s", seed, HexFormat.of().formatHex(input), splits)
          .isEqualTo(sanitizeAtOnce(input));
    }
  }

  @Test
  void outputIsAlwaysValidUtf8AndHeldBytesNeverExceedThree() {
    for (long seed = 0; seed < 1000; seed++) {
      Random random = new Random(seed);
      byte[] input = new byte[random.nextInt(64)];
      random.nextBytes(input);
      Utf8Sanitizer sanitizer = new Utf8Sanitizer();
      ByteBuf out = new ByteBuf(16);
      for (int i = 0; i < input.length; i++) {
        sanitizer.sanitize(input, i, 1, false, out);
        assertThat(sanitizer.pending()).isBetween(0, 3);
      }
      sanitizer.sanitize(input, 0, 0, true, out);

      byte[] produced = out.toByteArray();
      assertThat(new String(produced, UTF_8).getBytes(UTF_8))
          .as("seed %d produced well-formed UTF-8", seed)
          .isEqualTo(produced);
    }
  }

  // --- helpers ---

  private static String sanitizeAtOnce(byte[] in) {
    ByteBuf out = new ByteBuf(16);
    new Utf8Sanitizer().sanitize(in, 0, in.length, true, out);
    return out.toString();
  }

  private static String sanitizeOneByteAtATime(byte[] in) {
    List<Integer> everyByte = new ArrayList<>();
    for (int i = 1; i < in.length; i++) {
      everyByte.add(i);
    }
    return sanitizeInChunks(in, everyByte);
  }

  /** Sanitizes {@code in} in chunks ending at each (sorted) split point, with endOfInput on the last. */
  private static String sanitizeInChunks(byte[] in, List<Integer> splits) {
    Utf8Sanitizer sanitizer = new Utf8Sanitizer();
    ByteBuf out = new ByteBuf(16);
    int from = 0;
    for (int split : splits) {
      sanitizer.sanitize(in, from, split - from, false, out);
      from = split;
    }
    sanitizer.sanitize(in, from, in.length - from, true, out);
    return out.toString();
  }

  private static List<Integer> randomSplits(Random random, int length) {
    List<Integer> splits = new ArrayList<>();
    for (int i = 1; i < length; i++) {
      if (random.nextInt(3) == 0) {
        splits.add(i);
      }
    }
    return splits;
  }

  /**
   * Bytes that are mostly near-UTF-8: whole code points, truncated ones, lead and continuation
   * bytes, and uniformly random bytes, so that every kind of boundary turns up often.
   */
  static byte[] randomUtf8ish(Random random, int pieces) {
    ByteBuf buf = new ByteBuf(16);
    for (int p = 0; p < pieces; p++) {
      switch (random.nextInt(6)) {
        case 0:
          buf.append((byte) random.nextInt(0x80));
          break;
        case 1:
          buf.append(randomCodePoint(random));
          break;
        case 2: {
          byte[] cp = randomCodePoint(random);
          buf.append(cp, 0, random.nextInt(cp.length) + 1);
          break;
        }
        case 3:
          buf.append((byte) (0xC0 + random.nextInt(0x40)));
          break;
        case 4:
          buf.append((byte) (0x80 + random.nextInt(0x40)));
          break;
        default:
          buf.append((byte) random.nextInt(256));
      }
    }
    return buf.toByteArray();
  }

  private static byte[] randomCodePoint(Random random) {
    int cp;
    switch (random.nextInt(4)) {
      case 0: cp = 0x80 + random.nextInt(0x800 - 0x80); break;
      case 1: cp = 0x800 + random.nextInt(0x10000 - 0x800); break;
      case 2: cp = 0x10000 + random.nextInt(0x110000 - 0x10000); break;
      default: cp = random.nextInt(0x80);
    }
    if (cp >= 0xD800 && cp <= 0xDFFF) {
      cp = 0xE000; // surrogates have no UTF-8 form of their own
    }
    return new String(Character.toChars(cp)).getBytes(UTF_8);
  }

  private static String hex(String s) {
    return HexFormat.of().formatHex(s.getBytes(UTF_8));
  }

  static byte[] bytes(int... values) {
    byte[] b = new byte[values.length];
    for (int i = 0; i < values.length; i++) {
      b[i] = (byte) values[i];
    }
    return b;
  }

  private static byte[] slice(byte[] b, int from, int to) {
    return java.util.Arrays.copyOfRange(b, from, to);
  }

  private static byte[] concat(byte[] a, byte[] b) {
    return new ByteBuf(16).append(a).append(b).toByteArray();
  }
}
