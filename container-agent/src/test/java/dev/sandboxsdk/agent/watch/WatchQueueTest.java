package dev.sandboxsdk.agent.watch;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The bounded queue of one watch, and the globs of include/exclude. */
class WatchQueueTest {
  private static ObjectNode event(String kind, String path) {
    ObjectNode e = JsonNodeFactory.instance.objectNode();
    e.put("type", "event");
    e.put("eventType", kind);
    e.put("path", path);
    return e;
  }

  private static ObjectNode overflow() {
    ObjectNode e = JsonNodeFactory.instance.objectNode();
    e.put("type", "overflow");
    return e;
  }

  private static List<String> drain(WatchQueue q) throws InterruptedException {
    List<String> out = new ArrayList<>();
    for (ObjectNode e = q.take(0); e != null; e = q.take(0)) {
      out.add(e.path("type").asText().equals("event") ? e.path("eventType").asText() + " " + e.path("path").asText()
          : e.path("type").asText());
      if (!e.path("type").asText().matches("event|overflow")) {
        break; // a final event is returned on every take from then on
      }
    }
    return out;
  }

  @Test
  void aFullQueueDropsEventsAndMarksThePlaceOnce() throws Exception {
    WatchQueue q = new WatchQueue(3, overflow());
    for (int i = 0; i < 10; i++) {
      q.offer(event("create", "/f" + i));
    }
    assertThat(drain(q)).containsExactly("create /f0", "create /f1", "create /f2", "overflow");
    q.offer(event("create", "/later"));
    assertThat(drain(q)).as("room again after the client caught up").containsExactly("create /later");
  }

  @Test
  void aBurstOfTheSameEventIsQueuedOnceButARepeatAfterOthersIsKept() throws Exception {
    WatchQueue q = new WatchQueue(100, overflow());
    for (int i = 0; i < 50; i++) {
      q.offer(event("modify", "/log"));
    }
    q.offer(event("delete", "/log"));
    q.offer(event("create", "/log"));
    q.offer(event("modify", "/log"));
    assertThat(drain(q)).containsExactly("modify /log", "delete /log", "create /log", "modify /log");
    q.offer(event("modify", "/log"));
    assertThat(drain(q)).as("once sent, the same event is news again").containsExactly("modify /log");
  }

  @Test
  void kernelOverflowsInARowAreOneEventAndTheEndComesAfterWhatIsQueued() throws Exception {
    WatchQueue q = new WatchQueue(100, overflow());
    q.offer(event("create", "/a"));
    q.overflow();
    q.overflow();
    ObjectNode stopped = JsonNodeFactory.instance.objectNode();
    stopped.put("type", "stopped");
    q.end(stopped);
    q.offer(event("create", "/ignored"));
    assertThat(drain(q)).containsExactly("create /a", "overflow", "stopped");
    assertThat(q.take(0)).isSameAs(stopped);
  }

  @Test
  void anEmptyQueueWaitsAndThenAnswersNull() throws Exception {
    assertThat(new WatchQueue(1, overflow()).take(20)).isNull();
  }

  @Test
  void globsMatchWholeSegmentsAnywhereInTheRelativePath() {
    Globs p = Globs.of(List.of("*.log", "node_modules", "src/**/gen", "a?c"));
    assertThat(p.matches("x/y/z.log")).isTrue();
    assertThat(p.matches("z.log.gz")).isFalse();
    assertThat(p.matches("node_modules")).isTrue();
    assertThat(p.matches("web/node_modules/x/y.js")).isTrue();
    assertThat(p.matches("my_node_modules/x")).isFalse();
    assertThat(p.matches("src/a/b/gen/x.java")).isTrue();
    assertThat(p.matches("abc")).isTrue();
    assertThat(p.matches("a/c")).isFalse();
    assertThat(Globs.of(List.of("a.b+c(d)")).matches("a.b+c(d)")).as("regex characters are literal")
        .isTrue();
    assertThat(Globs.of(List.of("a.b")).matches("axb")).isFalse();
    assertThat(Globs.of(List.of())).isNull();
  }

  /** The meaning the globs had as regular expressions: (?:^|/)(?:glob)(?:/|$), ** = .*, * = [^/]*, ? = [^/]. */
  private static boolean reference(String glob, String rel) {
    StringBuilder re = new StringBuilder("(?:^|/)(?:");
    for (int i = 0; i < glob.length(); i++) {
      char c = glob.charAt(i);
      if (c == '*' && i + 1 < glob.length() && glob.charAt(i + 1) == '*') {
        re.append(".*");
        i++;
      } else {
        re.append(c == '*' ? "[^/]*" : c == '?' ? "[^/]" : Pattern.quote(String.valueOf(c)));
      }
    }
    return Pattern.compile(re.append(")(?:/|$)").toString()).matcher(rel).find();
  }

  @Test
  void globsMeanWhatTheirRegularExpressionsMeantOnRandomGlobsAndPaths() {
    Random random = new Random(1);
    String globChars = "ab/*?.";
    String pathChars = "ab/.";
    int matched = 0;
    for (int n = 0; n < 20_000; n++) {
      StringBuilder g = new StringBuilder();
      for (int i = random.nextInt(6) + 1; i > 0; i--) {
        g.append(globChars.charAt(random.nextInt(globChars.length())));
      }
      StringBuilder rel = new StringBuilder();
      for (int i = random.nextInt(10); i > 0; i--) {
        rel.append(pathChars.charAt(random.nextInt(pathChars.length())));
      }
      boolean expected = reference(g.toString(), rel.toString());
      assertThat(Globs.of(List.of(g.toString())).matches(rel.toString())).as("'%s' on '%s'", g, rel)
          .isEqualTo(expected);
      matched += expected ? 1 : 0;
    }
    assertThat(matched).as("both outcomes are covered").isBetween(1_000, 19_000);
  }

  /**
   * The largest globs a request may hold (32 of 256 characters, all stars) against a 255-character
   * name that almost matches: as regular expressions these backtracked for longer than any test
   * waits (6 stars on 100 characters took 12 s), with the watch's thread stuck.
   */
  @Test
  // A separate thread: a matcher stuck in backtracking never sees an interrupt.
  @Timeout(value = 20, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void theLargestGlobsAgainstTheLongestNamesTakeNoTimeToMatch() {
    List<String> globs = new ArrayList<>();
    for (int i = 0; i < Globs.MAX_PATTERNS; i++) {
      globs.add("*a".repeat(Globs.MAX_PATTERN_CHARS / 2 - 1) + "*b");
    }
    Globs stars = Globs.of(globs);
    String name = "a".repeat(255);
    assertThat(stars.matches(name)).isFalse();
    assertThat(stars.matches((name + "/").repeat(15) + name)).isFalse();
    assertThat(stars.matches(name.substring(1) + "b")).isTrue();
    Globs anywhere = Globs.of(List.of("**a".repeat(84) + "**b"));
    assertThat(anywhere.matches((name + "/").repeat(15) + name)).isFalse();
    assertThat(anywhere.matches((name + "/").repeat(15) + "b")).isTrue();
  }
}
