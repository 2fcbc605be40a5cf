package dev.sandboxsdk.mcp.internal;

import static dev.sandboxsdk.testkit.Property.forAll;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sandboxsdk.testkit.RandomText;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * Properties of {@link Redactor}: a secret never shows, whatever text surrounds it and however a
 * stream of that text is cut into chunks. Secrets and text share a three-letter alphabet so that
 * secrets overlap each other and the text around them; the markers are upper case, so a marker
 * can never spell a secret. Each property runs a few thousand generated cases from a seed, random
 * unless {@code -Dproperty.seed=N} fixes it; a failure names the seed and the case, so it can be
 * replayed.
 */
class RedactorPropertyTest {
  @Test
  void noSecretSurvivesRedactionOfAnyText() {
    forAll(3000, random -> {
      List<String> secrets = secrets(random);
      String text = text(random) + secrets.get(random.nextInt(4) % secrets.size()) + text(random);
      Redactor redactor = redactor(secrets);

      String redacted = redactor.redact(text);

      assertNoSecretIn(redacted, secrets, quoted(text));
      assertThat(redacted).as("secrets %s in %s", secrets, quoted(text)).contains("[REDACTED:");
    });
  }

  @Test
  void aStreamCutAnywhereShowsNoSecretAndEndsAsTheWholeTextRedacted() {
    forAll(3000, random -> {
      List<String> secrets = secrets(random);
      String text = text(random) + secrets.get(0) + text(random) + secrets.get(secrets.size() - 1);
      TreeSet<Integer> cuts = new TreeSet<>();
      for (int n = random.nextInt(7); n > 0; n--) {
        cuts.add(random.nextInt(41));
      }
      Redactor redactor = redactor(secrets);
      Redactor.Stream stream = redactor.stream();
      StringBuilder shown = new StringBuilder();
      int from = 0;
      for (int cut : cuts) {
        if (cut > text.length()) {
          break;
        }
        String out = stream.push(text.substring(from, cut));
        assertNoSecretIn(out, secrets, quoted(text) + " cut at " + cuts); // each piece is handed out on its own
        shown.append(out);
        from = cut;
      }
      shown.append(stream.push(text.substring(from))).append(stream.flush());

      assertNoSecretIn(shown.toString(), secrets, quoted(text) + " cut at " + cuts);
      assertThat(shown.toString()).as("secrets %s in %s cut at %s", secrets, quoted(text), cuts)
          .isEqualTo(redactor.redact(text));
    });
  }

  /** The shrunk counterexample of the property above, before safeCut checked again after moving the cut. */
  @Test
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

  private static void assertNoSecretIn(String shown, List<String> secrets, String input) {
    for (String s : secrets) {
      assertThat(shown).as("secrets %s in %s", secrets, input).doesNotContain(s);
    }
  }

  private static String quoted(String s) {
    return "\"" + s.replace("\n", "\\n") + "\"";
  }

  /** One to three secrets of {@link Redactor#MIN_LENGTH} to 8 letters from "abc". */
  private static List<String> secrets(SplittableRandom random) {
    List<String> secrets = new ArrayList<>();
    for (int n = 1 + random.nextInt(3); n > 0; n--) {
      secrets.add(RandomText.string(random, "abc", Redactor.MIN_LENGTH + random.nextInt(8 - Redactor.MIN_LENGTH + 1)));
    }
    return secrets;
  }

  /** Up to 16 characters from "abc \n". */
  private static String text(SplittableRandom random) {
    return RandomText.string(random, "abc \n", random.nextInt(17));
  }
}
