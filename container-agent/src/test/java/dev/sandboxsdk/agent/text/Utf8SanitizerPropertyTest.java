package dev.sandboxsdk.agent.text;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.TreeSet;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

/** Properties of {@link Utf8Sanitizer}: where a stream is cut into chunks never changes its text. */
class Utf8SanitizerPropertyTest {
  @Property(tries = 2000)
  void anySplitOfAnyBytesDecodesLikeTheJdkDecodesTheWhole(@ForAll("utf8ish") byte[] bytes,
      @ForAll @Size(max = 8) List<@IntRange(min = 0, max = 64) Integer> cuts) {
    Utf8Sanitizer sanitizer = new Utf8Sanitizer();
    ByteBuf out = new ByteBuf(16);
    int from = 0;
    for (int cut : new TreeSet<>(cuts)) {
      if (cut > bytes.length) {
        break;
      }
      sanitizer.sanitize(bytes, from, cut - from, false, out);
      from = cut;
    }
    sanitizer.sanitize(bytes, from, bytes.length - from, true, out);

    // The JDK's decoder replaces malformed input the same way a buffered exec does.
    assertThat(out.toString()).isEqualTo(new String(bytes, UTF_8));
    assertThat(sanitizer.pending()).isZero();
  }

  @Property(tries = 1000)
  void withoutEndOfInputOnlyAnIncompleteCodePointIsHeldBack(@ForAll("utf8ish") byte[] bytes) {
    Utf8Sanitizer sanitizer = new Utf8Sanitizer();
    ByteBuf out = new ByteBuf(16);

    sanitizer.sanitize(bytes, 0, bytes.length, false, out);

    assertThat(sanitizer.pending()).isBetween(0, 3);
    ByteBuf rest = new ByteBuf(4);
    sanitizer.sanitize(new byte[0], 0, 0, true, rest);
    assertThat(out + rest.toString()).isEqualTo(new String(bytes, UTF_8));
  }

  /** Bytes that are mostly the interesting ones: lead bytes, continuation bytes, their edges, ASCII. */
  @Provide
  Arbitrary<byte[]> utf8ish() {
    Arbitrary<Byte> edges = Arbitraries.of(0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF,
        0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF).map(Integer::byteValue);
    Arbitrary<Byte> any = Arbitraries.bytes();
    return Arbitraries.frequencyOf(
        net.jqwik.api.Tuple.of(4, edges), net.jqwik.api.Tuple.of(1, any))
        .array(byte[].class).ofMaxSize(64);
  }
}
