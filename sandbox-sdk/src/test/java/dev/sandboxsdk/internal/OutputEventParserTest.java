package dev.sandboxsdk.internal;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.ExecEvent;
import dev.sandboxsdk.LogEvent;
import dev.sandboxsdk.StdStream;
import java.io.ByteArrayOutputStream;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The fast reader of output events must give exactly what the Jackson tree path gives, or step
 * aside: each case is checked against {@code Wire.execEvent(Wire.parse(...))}, the reference.
 */
class OutputEventParserTest {
  private static final ObjectMapper ESCAPING_NON_ASCII = JsonMapper.builder()
      .enable(JsonWriteFeature.ESCAPE_NON_ASCII).build();

  /** What the tree path gives: the event, or the exception as class and message. */
  private static Object reference(byte[] json, int from, int to) {
    try {
      return Wire.execEvent(Wire.parse(json, from, to, "event"));
    } catch (RuntimeException e) {
      return e.getClass().getName() + ": " + e.getMessage();
    }
  }

  private static Object viaReader(byte[] json, int from, int to) {
    try {
      return Wire.execEventReader().map(json, from, to);
    } catch (RuntimeException e) {
      return e.getClass().getName() + ": " + e.getMessage();
    }
  }

  /** Asserts the reader equals the reference; returns whether the fast path read it. */
  private static boolean check(byte[] json, int from, int to) {
    assertThat(viaReader(json, from, to)).as(new String(json, from, to - from, UTF_8))
        .isEqualTo(reference(json, from, to));
    return new OutputEventParser().parse(json, from, to);
  }

  private static boolean check(String json) {
    byte[] b = json.getBytes(UTF_8);
    return check(b, 0, b.length);
  }

  @Test
  void readsTheAgentsOutputEventsWithoutTheTree() {
    String[] fast = {
        "{\"type\":\"stdout\",\"data\":\"one\\n\",\"offset\":0,\"bytes\":4,\"timestamp\":\"2026-11-25T07:00:00Z\"}",
        "{\"type\":\"stderr\",\"data\":\"\",\"offset\":12,\"bytes\":0}",
        "{\"type\":\"stdout\",\"processId\":\"exec_7\",\"data\":\"tab\\there \\\"q\\\" back\\\\slash \\/ \\b\\f\\r\","
            + "\"offset\":9223372036854775,\"bytes\":1}",
        "{\"type\":\"stdout\",\"data\":\"ctl \\u0001\\u001f caf\\u00e9 \\u20ac \\u0000\",\"offset\":1,\"bytes\":2}",
        "{\"type\":\"stdout\",\"data\":\"grüße, 世界 ✓ \uD83D\uDE80 end\",\"offset\":5,\"bytes\":30}",
        " { \"bytes\" : 3 , \"offset\" : 4 , \"data\" : \"abc\" , \"type\" : \"stdout\" } \t\r\n",
        "{\"type\":\"stdout\",\"data\":\"first\",\"data\":\"last wins\",\"offset\":0,\"bytes\":9}",
    };
    for (String json : fast) {
      assertThat(check(json)).as(json).isTrue();
    }
    assertThat(Wire.execEventReader().map(fast[1].getBytes(UTF_8), 0, fast[1].length()))
        .isEqualTo(new ExecEvent.Stderr("", 12, 0));
    byte[] b = fast[4].getBytes(UTF_8);
    assertThat(Wire.execEventReader().map(b, 0, b.length))
        .isEqualTo(new ExecEvent.Stdout("grüße, 世界 ✓ \uD83D\uDE80 end", 5, 30));
  }

  @Test
  void leavesEverythingUnusualToTheTreePathWithTheSameResult() {
    String[] slow = {
        "{\"type\":\"start\",\"command\":\"x\",\"pid\":1}",
        "{\"type\":\"complete\",\"exitCode\":0,\"timedOut\":false,\"duration\":3}",
        "{\"type\":\"error\",\"code\":\"INTERNAL_ERROR\",\"message\":\"boom\"}",
        "{\"type\":\"stdout\",\"data\":\"pair \\ud83d\\ude80\",\"offset\":0,\"bytes\":4}",
        "{\"type\":\"stdout\",\"data\":\"lone \\ud83d\",\"offset\":0,\"bytes\":4}",
        "{\"type\":\"stdout\",\"data\":\"replacement \uFFFD char\",\"offset\":0,\"bytes\":4}",
        "{\"type\":\"stdout\",\"data\":\"x\",\"offset\":0,\"bytes\":1,\"extra\":{\"nested\":[1,2]}}",
        "{\"type\":\"stdout\",\"data\":\"x\",\"offset\":0,\"bytes\":1,\"flag\":true}",
        "{\"type\":\"stdout\",\"data\":\"x\",\"offset\":00,\"bytes\":1}",
        "{\"type\":\"stdout\",\"data\":\"x\",\"offset\":-1,\"bytes\":1}",
        "{\"type\":\"stdout\",\"data\":\"x\",\"offset\":1.0,\"bytes\":1}",
        "{\"type\":\"stdout\",\"data\":\"x\",\"offset\":1e3,\"bytes\":1}",
        "{\"type\":\"stdout\",\"data\":\"x\",\"offset\":99999999999999999999,\"bytes\":1}",
        "{\"type\":\"stdout\",\"data\":\"x\",\"offset\":\"1\",\"bytes\":1}",
        "{\"type\":\"stdout\",\"data\":\"raw\ncontrol\",\"offset\":0,\"bytes\":1}",
        "{\"type\":\"stdout\",\"data\":\"bad \\x escape\",\"offset\":0,\"bytes\":1}",
        "{\"type\":\"stdout\",\"data\":\"short \\u12\",\"offset\":0,\"bytes\":1}",
        "{\"type\":\"stdout\",\"data\":\"unterminated,\"offset\":0,\"bytes\":1}",
        "{\"type\":\"stdout\",\"data\":42,\"offset\":0,\"bytes\":1}",
        "{\"type\":\"stdout\",\"offset\":0,\"bytes\":1}",
        "{\"type\":\"stdout\",\"data\":\"x\",\"bytes\":1}",
        "{\"type\":\"stdout\",\"data\":\"x\",\"offset\":0,\"bytes\":1,\"type\":\"start\"}",
        "{\"t\\u0079pe\":\"stdout\",\"data\":\"x\",\"offset\":0,\"bytes\":1}",
        "{\"type\":\"stdout\",\"data\":\"x\",\"offset\":0,\"bytes\":1} trailing",
        "{\"type\":\"stdout\",\"data\":\"x\",\"offset\":0,\"bytes\":1,}",
        "{\"type\":\"stdout\" \"data\":\"x\",\"offset\":0,\"bytes\":1}",
        "{\"type\":\"stdout\",\"data\":\"x\",\"offset\":0,\"bytes\":1",
        "{}",
        "[]",
        "",
        "null",
    };
    for (String json : slow) {
      assertThat(check(json)).as(json).isFalse();
    }
  }

  @Test
  void invalidUtf8IsAnErrorAsOnTheTreePath() {
    String text = "{\"type\":\"stdout\",\"data\":\"ab??\",\"offset\":0,\"bytes\":4}";
    byte[] json = text.getBytes(UTF_8);
    json[text.indexOf('?')] = (byte) 0xC3; // a lead byte followed by 0xFF, which is no continuation byte
    json[text.indexOf('?') + 1] = (byte) 0xFF;
    assertThat(check(json, 0, json.length)).isFalse();
    assertThat(viaReader(json, 0, json.length)).asString().contains("SandboxException").contains("malformed event");
  }

  /** Jackson decodes every string of the event, so bad bytes outside {@code data} are an error too. */
  @Test
  void invalidUtf8OutsideTheDataIsAnErrorAsOnTheTreePath() {
    String[] texts = {
        "{\"type\":\"stdout\",\"data\":\"ab\",\"offset\":0,\"bytes\":2,\"timestamp\":\"??\"}",
        "{\"type\":\"stdout\",\"data\":\"ab\",\"offset\":0,\"bytes\":2,\"??\":\"x\"}",
        "{\"type\":\"stdout\",\"processId\":\"p\\n??\",\"data\":\"ab\",\"offset\":0,\"bytes\":2}",
    };
    for (String text : texts) {
      byte[] json = text.getBytes(UTF_8);
      json[text.indexOf('?')] = (byte) 0xC3; // a lead byte followed by 0xFF, which is no continuation byte
      json[text.indexOf('?') + 1] = (byte) 0xFF;
      assertThat(check(json, 0, json.length)).as(text).isFalse();
      assertThat(viaReader(json, 0, json.length)).asString().contains("malformed event");
    }
    // Valid non-ASCII text in those places is read as the tree reads it.
    check("{\"type\":\"stdout\",\"data\":\"ab\",\"offset\":0,\"bytes\":2,\"t\u00e9\":\"gr\u00fc\u00dfe \u20ac\"}");
  }

  @Test
  void readsOnlyItsRangeOfALargerArray() {
    byte[] event = "{\"type\":\"stdout\",\"data\":\"mid\\\\dle\",\"offset\":3,\"bytes\":7}".getBytes(UTF_8);
    byte[] around = new byte[event.length + 20];
    Arrays.fill(around, (byte) '"');
    System.arraycopy(event, 0, around, 10, event.length);
    assertThat(check(around, 10, 10 + event.length)).isTrue();
    assertThat(Wire.execEventReader().map(around, 10, 10 + event.length))
        .isEqualTo(new ExecEvent.Stdout("mid\\dle", 3, 7));
  }

  @Test
  void processStreamOutputEventsComeOutAsOnTheTreePath() {
    byte[] json = "{\"type\":\"stderr\",\"processId\":\"p\",\"data\":\"a\\nb\",\"offset\":2,\"bytes\":3}".getBytes(UTF_8);
    assertThat(Wire.logEventReader().map(json, 0, json.length))
        .isEqualTo(new LogEvent.Output(StdStream.STDERR, "a\nb", 2, 3))
        .isEqualTo(Wire.logEvent(Wire.parse(json, "event")));
  }

  /** Random text as Jackson writes it, plain and with every non-ASCII char escaped, around the eight-byte steps. */
  @Test
  void randomTextGivesWhatTheTreeGives() throws Exception {
    Random random = new Random(13);
    int[] pool = {'a', 'Z', '0', ' ', '"', '\\', '/', '\n', '\r', '\t', 0, 1, 0x1f, 0x7f, 0xe9, 0x7ff, 0x800, 0x20ac,
        0xfeff, 0xfffd, 0x1f680, 0x10ffff};
    int fastOnes = 0;
    for (int round = 0; round < 3000; round++) {
      StringBuilder text = new StringBuilder();
      int length = random.nextInt(round % 10 == 0 ? 300 : 40);
      for (int i = 0; i < length; i++) {
        text.appendCodePoint(random.nextInt(3) == 0 ? pool[random.nextInt(pool.length)] : 'a' + random.nextInt(26));
      }
      ObjectNode event = Wire.MAPPER.createObjectNode().put("type", random.nextBoolean() ? "stdout" : "stderr")
          .put("data", text.toString()).put("offset", random.nextInt(1 << 20)).put("bytes", length);
      if (random.nextBoolean()) {
        event.put("timestamp", "2026-11-25T07:00:00.123Z");
      }
      ObjectMapper writer = random.nextBoolean() ? Wire.MAPPER : ESCAPING_NON_ASCII;
      byte[] json = writer.writeValueAsBytes(event);
      if (check(json, 0, json.length)) {
        fastOnes++;
        assertThat(((ExecEvent) Wire.execEventReader().map(json, 0, json.length)).toString())
            .contains(text.toString());
      }
    }
    assertThat(fastOnes).as("most random events take the fast path").isGreaterThan(1000);
  }

  /** Jackson writes escapes with upper-case hex digits; the agent with lower-case ones. */
  @Test
  void asciiEscapesOfTheWriterAreUnderstood() throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (JsonGenerator g = ESCAPING_NON_ASCII.createGenerator(out)) {
      g.writeStartObject();
      g.writeStringField("type", "stdout");
      g.writeStringField("data", "é€");
      g.writeNumberField("offset", 0);
      g.writeNumberField("bytes", 5);
      g.writeEndObject();
    }
    byte[] json = out.toByteArray();
    assertThat(new String(json, UTF_8)).contains("\\u00E9");
    assertThat(check(json, 0, json.length)).isTrue();
  }
}
