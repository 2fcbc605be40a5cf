package dev.sandboxsdk.mcp.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

/**
 * Properties of {@link Redactor}: a secret never shows, whatever text surrounds it and however a
 * stream of that text is cut into chunks. Secrets and text share a three-letter alphabet so that
 * secrets overlap each other and the text around them; the markers are upper case, so a marker
 * can never spell a secret.
 */
class RedactorPropertyTest {
  @Property(tries = 2000)
  void noSecretSurvivesRedactionOfAnyText(@ForAll("secrets") List<String> secrets, @ForAll("text") String before,
      @ForAll("text") String after, @ForAll @IntRange(min = 0, max = 3) int which) {
    Redactor redactor = redactor(secrets);
    String text = before + secrets.get(which % secrets.size()) + after;

    String redacted = redactor.redact(text);

    assertNoSecretIn(redacted, secrets);
    assertThat(redacted).contains("[REDACTED:");
  }

  @Property(tries = 2000)
  void aStreamCutAnywhereShowsNoSecretAndEndsAsTheWholeTextRedacted(@ForAll("secrets") List<String> secrets,
      @ForAll("text") String before, @ForAll("text") String after,
      @ForAll @Size(max = 6) List<@IntRange(min = 0, max = 40) Integer> cuts) {
    Redactor redactor = redactor(secrets);
    String text = before + secrets.get(0) + after + secrets.get(secrets.size() - 1);
    Redactor.Stream stream = redactor.stream();
    StringBuilder shown = new StringBuilder();
    int from = 0;
    for (int cut : new TreeSet<>(cuts)) {
      if (cut > text.length()) {
        break;
      }
      String out = stream.push(text.substring(from, cut));
      assertNoSecretIn(out, secrets); // each piece is handed out on its own
      shown.append(out);
      from = cut;
    }
    shown.append(stream.push(text.substring(from))).append(stream.flush());

    assertNoSecretIn(shown.toString(), secrets);
    assertThat(shown.toString()).isEqualTo(redactor.redact(text));
  }

  /** The shrunk counterexample of the property above, before safeCut checked again after moving the cut. */
  @Example
  void aStreamDoesNotSplitASecretThatEndsWhereAnotherCouldBegin() {
    Redactor.Stream stream = redactor(List.of("aaaa")).stream();

    String shown = stream.push("aaaabaaaa") + stream.flush();

    assertThat(shown).isEqualTo("[REDACTED:S0]b[REDACTED:S0]");
  }

  private static Redactor redactor(List<String> secrets) {
    Map<String, String> vars = new LinkedHashMap<>();
    for (int i = 0; i < secrets.size(); i++) {
      vars.put("S" + i, secrets.get(i));
    }
    return new Redactor(vars);
  }

  private static void assertNoSecretIn(String shown, List<String> secrets) {
    for (String s : secrets) {
      assertThat(shown).doesNotContain(s);
    }
  }

  @Provide
  Arbitrary<List<String>> secrets() {
    return Arbitraries.strings().withChars("abc").ofMinLength(Redactor.MIN_LENGTH).ofMaxLength(8)
        .list().ofMinSize(1).ofMaxSize(3).map(ArrayList::new);
  }

  @Provide
  Arbitrary<String> text() {
    return Arbitraries.strings().withChars("abc \n").ofMaxLength(16);
  }
}
