package dev.sandboxsdk.agent.exec;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sandboxsdk.agent.process.ExecSpec.Encoding;
import dev.sandboxsdk.agent.text.ByteBuf;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class OutputEventsTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String REPLACEMENT = "\uFFFD";

  private final ByteBuf frame = new ByteBuf(64);

  @Test
  void utf8EventCarriesTypeDataOffsetBytesAndTimestamp() throws IOException {
    OutputEvents events = new OutputEvents("stdout", null, Encoding.UTF8, 0);
    byte[] chunk = "héllo \"x\"\n".getBytes(UTF_8);

    assertThat(events.encode(chunk, 0, chunk.length, false, frame)).isTrue();

    JsonNode event = JSON.readTree(frame.toByteArray());
    assertThat(event.get("type").asText()).isEqualTo("stdout");
    assertThat(event.has("processId")).isFalse();
    assertThat(event.get("data").asText()).isEqualTo("héllo \"x\"\n");
    assertThat(event.get("offset").asLong()).isZero();
    assertThat(event.get("bytes").asLong()).isEqualTo(chunk.length);
    assertThat(Instant.parse(event.get("timestamp").asText())).isBeforeOrEqualTo(Instant.now());
    assertThat(events.position()).isEqualTo(chunk.length);
  }

  @Test
  void processIdIsIncludedWhenGiven() throws IOException {
    OutputEvents events = new OutputEvents("stderr", "build-1", Encoding.UTF8, 0);
    byte[] chunk = "oops".getBytes(UTF_8);

    events.encode(chunk, 0, chunk.length, false, frame);

    JsonNode event = JSON.readTree(frame.toByteArray());
    assertThat(event.get("type").asText()).isEqualTo("stderr");
    assertThat(event.get("processId").asText()).isEqualTo("build-1");
  }

  @Test
  void offsetsStartAtTheGivenStartOffset() throws IOException {
    OutputEvents events = new OutputEvents("stdout", "p", Encoding.UTF8, 1000);
    byte[] chunk = "abc".getBytes(UTF_8);

    events.encode(chunk, 0, chunk.length, false, frame);

    assertThat(JSON.readTree(frame.toByteArray()).get("offset").asLong()).isEqualTo(1000);
    assertThat(events.position()).isEqualTo(1003);
  }

  @Test
  void codePointSplitAcrossChunksGoesWhollyIntoTheLaterEvent() throws IOException {
    // "a😀b": the emoji's four bytes arrive as two in each chunk.
    byte[] all = "a😀b".getBytes(UTF_8);
    OutputEvents events = new OutputEvents("stdout", null, Encoding.UTF8, 0);

    assertThat(events.encode(all, 0, 3, false, frame)).isTrue();
    JsonNode first = JSON.readTree(frame.toByteArray());
    assertThat(events.position()).isEqualTo(3);
    assertThat(events.encode(all, 3, 3, false, frame)).isTrue();
    JsonNode second = JSON.readTree(frame.toByteArray());

    assertThat(first.get("data").asText()).isEqualTo("a");
    assertThat(first.get("offset").asLong()).isZero();
    assertThat(first.get("bytes").asLong()).as("excludes the held bytes").isEqualTo(1);
    assertThat(second.get("data").asText()).isEqualTo("😀b");
    assertThat(second.get("offset").asLong()).as("starts at the held bytes").isEqualTo(1);
    assertThat(second.get("bytes").asLong()).isEqualTo(5);
    assertThat(events.position()).isEqualTo(6);
  }

  @Test
  void chunkHoldingOnlyPartOfACodePointProducesNoEvent() throws IOException {
    byte[] all = "x€".getBytes(UTF_8);
    OutputEvents events = new OutputEvents("stdout", null, Encoding.UTF8, 0);
    events.encode(all, 0, 1, false, frame);

    assertThat(events.encode(all, 1, 1, false, frame)).isFalse();
    assertThat(events.encode(all, 2, 1, false, frame)).isFalse();
    assertThat(events.position()).as("held bytes count as consumed").isEqualTo(3);
    assertThat(events.encode(all, 3, 1, false, frame)).isTrue();

    JsonNode event = JSON.readTree(frame.toByteArray());
    assertThat(event.get("data").asText()).isEqualTo("€");
    assertThat(event.get("offset").asLong()).isEqualTo(1);
    assertThat(event.get("bytes").asLong()).isEqualTo(3);
  }

  @Test
  void flushEmitsHeldBytesAsOneReplacementCharacter() throws IOException {
    byte[] chunk = {'o', 'k', (byte) 0xF0, (byte) 0x9F};
    OutputEvents events = new OutputEvents("stdout", null, Encoding.UTF8, 10);
    events.encode(chunk, 0, chunk.length, false, frame);

    assertThat(events.flush(frame)).isTrue();

    JsonNode event = JSON.readTree(frame.toByteArray());
    assertThat(event.get("data").asText()).isEqualTo(REPLACEMENT);
    assertThat(event.get("offset").asLong()).isEqualTo(12);
    assertThat(event.get("bytes").asLong()).isEqualTo(2);
    assertThat(events.position()).isEqualTo(14);
    assertThat(events.flush(frame)).as("nothing left to flush").isFalse();
  }

  @Test
  void flushWithNothingHeldProducesNoEvent() {
    OutputEvents events = new OutputEvents("stdout", null, Encoding.UTF8, 0);
    byte[] chunk = "done\n".getBytes(UTF_8);
    events.encode(chunk, 0, chunk.length, false, frame);

    assertThat(events.flush(frame)).isFalse();
  }

  @Test
  void endOfInputChunkEmitsItsTrailingPartialSequenceAsReplacement() throws IOException {
    byte[] chunk = {'z', (byte) 0xE2, (byte) 0x82};
    OutputEvents events = new OutputEvents("stdout", null, Encoding.UTF8, 0);

    assertThat(events.encode(chunk, 0, chunk.length, true, frame)).isTrue();

    JsonNode event = JSON.readTree(frame.toByteArray());
    assertThat(event.get("data").asText()).isEqualTo("z" + REPLACEMENT);
    assertThat(event.get("bytes").asLong()).isEqualTo(3);
    assertThat(events.flush(frame)).isFalse();
  }

  @Test
  void invalidBytesBecomeReplacementCharactersButStillCountAsCovered() throws IOException {
    byte[] chunk = {'a', (byte) 0xFF, 'b', (byte) 0x80};
    OutputEvents events = new OutputEvents("stdout", null, Encoding.UTF8, 0);

    events.encode(chunk, 0, chunk.length, false, frame);

    JsonNode event = JSON.readTree(frame.toByteArray());
    assertThat(event.get("data").asText()).isEqualTo("a" + REPLACEMENT + "b" + REPLACEMENT);
    assertThat(event.get("bytes").asLong()).isEqualTo(4);
  }

  @Test
  void jumpToForgetsHeldBytesAndContinuesAtTheNewOffset() throws IOException {
    OutputEvents events = new OutputEvents("stdout", null, Encoding.UTF8, 0);
    byte[] partial = {(byte) 0xF0, (byte) 0x9F};
    events.encode(partial, 0, partial.length, false, frame);

    events.jumpTo(500);
    byte[] chunk = "after gap".getBytes(UTF_8);
    events.encode(chunk, 0, chunk.length, false, frame);

    JsonNode event = JSON.readTree(frame.toByteArray());
    assertThat(event.get("data").asText()).isEqualTo("after gap");
    assertThat(event.get("offset").asLong()).isEqualTo(500);
    assertThat(event.get("bytes").asLong()).isEqualTo(chunk.length);
    assertThat(events.flush(frame)).isFalse();
  }

  @Test
  void eachEncodeReplacesTheFramesPreviousContent() throws IOException {
    OutputEvents events = new OutputEvents("stdout", null, Encoding.UTF8, 0);
    byte[] chunk = "one".getBytes(UTF_8);
    events.encode(chunk, 0, chunk.length, false, frame);
    chunk = "two".getBytes(UTF_8);

    events.encode(chunk, 0, chunk.length, false, frame);

    assertThat(JSON.readTree(frame.toByteArray()).get("data").asText()).isEqualTo("two");
  }

  /**
   * The resume contract: events are contiguous ({@code offset} of one is {@code offset + bytes} of
   * the previous), and the raw bytes {@code [offset, offset + bytes)} are exactly what the event's
   * data says.
   */
  @Test
  void utf8EventsTileTheStreamForRandomTextSplitAnywhere() throws IOException {
    for (long seed = 0; seed < 300; seed++) {
      Random random = new Random(seed);
      String text = randomText(random, random.nextInt(30));
      byte[] all = text.getBytes(UTF_8);
      long start = random.nextInt(3) == 0 ? random.nextInt(10_000) : 0;
      OutputEvents events = new OutputEvents("stdout", "p", Encoding.UTF8, start);

      List<JsonNode> emitted = feedInRandomChunks(events, all, random);
      if (events.flush(frame)) {
        emitted.add(JSON.readTree(frame.toByteArray()));
      }

      String where = "seed " + seed + ", text " + text;
      long next = start;
      StringBuilder data = new StringBuilder();
      for (JsonNode event : emitted) {
        long offset = event.get("offset").asLong();
        long bytes = event.get("bytes").asLong();
        assertThat(offset).as(where + ": contiguous offsets").isEqualTo(next);
        assertThat(bytes).as(where + ": non-empty events").isPositive();
        byte[] covered = Arrays.copyOfRange(all, (int) (offset - start), (int) (offset - start + bytes));
        assertThat(event.get("data").asText()).as(where + ": data matches its byte range")
            .isEqualTo(new String(covered, UTF_8));
        data.append(event.get("data").asText());
        next = offset + bytes;
      }
      assertThat(next).as(where + ": all bytes covered").isEqualTo(start + all.length);
      assertThat(events.position()).isEqualTo(start + all.length);
      assertThat(data.toString()).as(where).isEqualTo(text);
    }
  }

  @Test
  void base64EventDecodesBackToTheRawChunk() throws IOException {
    byte[] chunk = {0, 1, (byte) 0xFF, (byte) 0xF0, (byte) 0x9F, '"', '\\', '\n'};
    OutputEvents events = new OutputEvents("stdout", "bin", Encoding.BASE64, 7);

    assertThat(events.encode(chunk, 0, chunk.length, false, frame)).isTrue();

    JsonNode event = JSON.readTree(frame.toByteArray());
    assertThat(event.get("type").asText()).isEqualTo("stdout");
    assertThat(event.get("processId").asText()).isEqualTo("bin");
    assertThat(Base64.getDecoder().decode(event.get("data").asText())).isEqualTo(chunk);
    assertThat(event.get("offset").asLong()).isEqualTo(7);
    assertThat(event.get("bytes").asLong()).isEqualTo(chunk.length);
    assertThat(events.position()).isEqualTo(7 + chunk.length);
  }

  @Test
  void base64NeverHoldsBytesBackSoSplitCodePointsAndFlushNeedNoSpecialCare() throws IOException {
    byte[] all = "a😀b".getBytes(UTF_8);
    OutputEvents events = new OutputEvents("stdout", null, Encoding.BASE64, 0);

    events.encode(all, 0, 3, false, frame);
    JsonNode first = JSON.readTree(frame.toByteArray());

    assertThat(first.get("bytes").asLong()).isEqualTo(3);
    assertThat(Base64.getDecoder().decode(first.get("data").asText())).isEqualTo(Arrays.copyOf(all, 3));
    assertThat(events.flush(frame)).isFalse();
  }

  @Test
  void base64EmptyChunkProducesNoEvent() {
    OutputEvents events = new OutputEvents("stdout", null, Encoding.BASE64, 0);

    assertThat(events.encode(new byte[4], 2, 0, true, frame)).isFalse();
    assertThat(events.position()).isZero();
  }

  @Test
  void base64EventsReassembleTheStreamForRandomBytesSplitAnywhere() throws IOException {
    for (long seed = 0; seed < 200; seed++) {
      Random random = new Random(seed);
      byte[] all = new byte[random.nextInt(200)];
      random.nextBytes(all);
      OutputEvents events = new OutputEvents("stderr", null, Encoding.BASE64, 0);

      List<JsonNode> emitted = feedInRandomChunks(events, all, random);

      ByteArrayOutputStream joined = new ByteArrayOutputStream();
      long next = 0;
      for (JsonNode event : emitted) {
        byte[] data = Base64.getDecoder().decode(event.get("data").asText());
        assertThat(event.get("offset").asLong()).as("seed %d", seed).isEqualTo(next);
        assertThat(event.get("bytes").asLong()).as("seed %d", seed).isEqualTo(data.length);
        joined.write(data);
        next += data.length;
      }
      assertThat(joined.toByteArray()).as("seed %d", seed).isEqualTo(all);
    }
  }

  private List<JsonNode> feedInRandomChunks(OutputEvents events, byte[] all, Random random)
      throws IOException {
    List<JsonNode> emitted = new ArrayList<>();
    int from = 0;
    while (from < all.length) {
      int len = Math.min(all.length - from, random.nextInt(6));
      // Reads land at an offset inside a larger array, as they do from a pump's buffer.
      byte[] read = new byte[len + 3];
      System.arraycopy(all, from, read, 2, len);
      if (events.encode(read, 2, len, false, frame)) {
        emitted.add(JSON.readTree(frame.toByteArray()));
      }
      from += len;
    }
    return emitted;
  }

  private static String randomText(Random random, int codePoints) {
    StringBuilder sb = new StringBuilder();
    String[] pool = {"a", "\"", "\\", "\n", "\u0001", "\u007F", "é", "€", "中", "😀", "👍🏽"};
    for (int i = 0; i < codePoints; i++) {
      sb.append(pool[random.nextInt(pool.length)]);
    }
    return sb.toString();
  }
}
