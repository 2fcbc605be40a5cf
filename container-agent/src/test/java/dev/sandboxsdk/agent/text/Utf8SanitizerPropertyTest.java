package dev.sandboxsdk.agent.text;

import static dev.sandboxsdk.testkit.Property.forAll;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sandboxsdk.testkit.RandomText;
import java.util.SplittableRandom;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * Properties of {@link Utf8Sanitizer}: where a stream is cut into chunks never changes its text.
 * Each property runs a few thousand generated cases from a seed, random unless {@code
 * -Dproperty.seed=N} fixes it; a failure names the seed and the case, so it can be replayed.
 */
class Utf8SanitizerPropertyTest {
  /** Lead bytes, continuation bytes and their edges, and ASCII: the bytes a split can go wrong on. */
  private static final int[] EDGES = {0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF,
      0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF};

  @Test
  void anySplitOfAnyBytesDecodesLikeTheJdkDecodesTheWhole() {
    forAll(3000, random -> {
      byte[] bytes = utf8ish(random);
      TreeSet<Integer> cuts = new TreeSet<>();
      for (int n = random.nextInt(9); n > 0; n--) {
        cuts.add(random.nextInt(65));
      }
      Utf8Sanitizer sanitizer = new Utf8Sanitizer();
      ByteBuf out = new ByteBuf(16);
      int from = 0;
      for (int cut : cuts) {
        if (cut > bytes.length) {
          break;
        }
        sanitizer.sanitize(bytes, from, cut - from, false, out);
        from = cut;
      }
      sanitizer.sanitize(bytes, from, bytes.length - from, true, out);

      // The JDK's decoder replaces malformed input the same way a buffered exec does.
      assertThat(out.toString()).as("bytes %s cut at %s", hex(bytes), cuts).isEqualTo(new String(bytes, UTF_8));
      assertThat(sanitizer.pending()).isZero();
    });
  }

  @Test
  void withoutEndOfInputOnlyAnIncompleteCodePointIsHeldBack() {
    forAll(2000, random -> {
      byte[] bytes = utf8ish(random);
      Utf8Sanitizer sanitizer = new Utf8Sanitizer();
      ByteBuf out = new ByteBuf(16);

      sanitizer.sanitize(bytes, 0, bytes.length, false, out);

      assertThat(sanitizer.pending()).as("bytes %s", hex(bytes)).isBetween(0, 3);
      ByteBuf rest = new ByteBuf(4);
      sanitizer.sanitize(new byte[0], 0, 0, true, rest);
      assertThat(out + rest.toString()).as("bytes %s", hex(bytes)).isEqualTo(new String(bytes, UTF_8));
    });
  }

  /** Up to 64 bytes, four in five of them from {@link #EDGES}, the rest any byte. */
  private static byte[] utf8ish(SplittableRandom random) {
    return RandomText.bytes(random, 64, EDGES);
  }

  private static String hex(byte[] bytes) {
    StringBuilder s = new StringBuilder();
    for (byte b : bytes) {
      s.append(String.format("%02X", b & 0xFF));
    }
    return s.toString();
  }
}
