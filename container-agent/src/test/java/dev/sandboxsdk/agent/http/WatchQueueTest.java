package dev.sandboxsdk.agent.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The bounded queue of one watch, and the globs of include/exclude. */
class WatchQueueTest {
  private static ObjectNode event(String kind, String path) {
    ObjectNode e = Json.object();
    e.put("type", "event");
    e.put("eventType", kind);
    e.put("path", path);
    return e;
  }

  private static ObjectNode overflow() {
    ObjectNode e = Json.object();
    e.put("type", "overflow");
    return e;
  }

  private static List<String> drain(WatchEndpoints.Queue q) throws InterruptedException {
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
    WatchEndpoints.Queue q = new WatchEndpoints.Queue(3, overflow());
    for (int i = 0; i < 10; i++) {
      q.offer(event("create", "/f" + i));
    }
    assertThat(drain(q)).containsExactly("create /f0", "create /f1", "create /f2", "overflow");
    q.offer(event("create", "/later"));
    assertThat(drain(q)).as("room again after the client caught up").containsExactly("create /later");
  }

  @Test
  void aBurstOfTheSameEventIsQueuedOnceButARepeatAfterOthersIsKept() throws Exception {
    WatchEndpoints.Queue q = new WatchEndpoints.Queue(100, overflow());
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
    WatchEndpoints.Queue q = new WatchEndpoints.Queue(100, overflow());
    q.offer(event("create", "/a"));
    q.overflow();
    q.overflow();
    ObjectNode stopped = Json.object();
    stopped.put("type", "stopped");
    q.end(stopped);
    q.offer(event("create", "/ignored"));
    assertThat(drain(q)).containsExactly("create /a", "overflow", "stopped");
    assertThat(q.take(0)).isSameAs(stopped);
  }

  @Test
  void anEmptyQueueWaitsAndThenAnswersNull() throws Exception {
    assertThat(new WatchEndpoints.Queue(1, overflow()).take(20)).isNull();
  }

  @Test
  void globsMatchWholeSegmentsAnywhereInTheRelativePath() {
    Pattern p = WatchEndpoints.regex(List.of("*.log", "node_modules", "src/**/gen", "a?c"));
    assertThat(p.matcher("x/y/z.log").find()).isTrue();
    assertThat(p.matcher("z.log.gz").find()).isFalse();
    assertThat(p.matcher("node_modules").find()).isTrue();
    assertThat(p.matcher("web/node_modules/x/y.js").find()).isTrue();
    assertThat(p.matcher("my_node_modules/x").find()).isFalse();
    assertThat(p.matcher("src/a/b/gen/x.java").find()).isTrue();
    assertThat(p.matcher("abc").find()).isTrue();
    assertThat(p.matcher("a/c").find()).isFalse();
    assertThat(WatchEndpoints.regex(List.of("a.b+c(d)")).matcher("a.b+c(d)").find()).as("regex characters are literal")
        .isTrue();
    assertThat(WatchEndpoints.regex(List.of("a.b")).matcher("axb").find()).isFalse();
    assertThat(WatchEndpoints.regex(List.of())).isNull();
  }
}
