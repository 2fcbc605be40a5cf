package dev.sandboxsdk.internal;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandboxsdk.SandboxException;
import java.io.EOFException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import okio.Buffer;
import okio.BufferedSource;
import okio.Okio;
import okio.Source;
import okio.Timeout;
import org.junit.jupiter.api.Test;

class SseReaderTest {

  /** A source that hands out at most {@code step} bytes per read, so lines and events span reads. */
  private static BufferedSource trickle(String text, int step) {
    Buffer all = new Buffer().writeUtf8(text);
    return Okio.buffer(new Source() {
      @Override
      public long read(Buffer sink, long byteCount) throws IOException {
        if (all.size() == 0) {
          return -1;
        }
        long n = Math.min(Math.min(byteCount, step), all.size());
        sink.write(all, n);
        return n;
      }

      @Override
      public Timeout timeout() {
        return Timeout.NONE;
      }

      @Override
      public void close() {}
    });
  }

  private static List<String> events(BufferedSource source, long max) throws IOException {
    SseReader reader = new SseReader(source, max, null);
    List<String> events = new ArrayList<>();
    while (reader.next()) {
      events.add(new String(reader.bytes(), reader.from(), reader.to() - reader.from(), UTF_8));
    }
    return events;
  }

  @Test
  void readsEventsWhateverTheReadBoundaries() throws IOException {
    String stream = ": keep-alive\n\ndata: {\"a\":1}\n\n"
        + "event: ignored\nid: 7\nretry: 5\ndata: {\"b\":\"ü\"}\r\n\r\n"
        + "data:{\"no\":\"space\"}\n\n"
        + "data: first\ndata\ndata:  third\n\n"
        + "\n\n: only a comment\n\n"
        + "data: {\"last\":true}\n\n";
    List<String> expected = List.of("{\"a\":1}", "{\"b\":\"ü\"}", "{\"no\":\"space\"}", "first\n\n third",
        "{\"last\":true}");
    for (int step : new int[] {1, 2, 3, 7, 8, 9, 64, 100_000}) {
      assertThat(events(trickle(stream, step), 1 << 20)).as("step " + step).isEqualTo(expected);
    }
  }

  @Test
  void linesLongerThanItsFirstBufferGrowItAndShrinkItBack() throws IOException {
    String big = "x".repeat(700_000);
    StringBuilder stream = new StringBuilder();
    for (int i = 0; i < 3; i++) {
      stream.append("data: ").append(big).append(i).append("\n\n").append("data: small").append(i).append("\n\n");
    }
    stream.append("data: ").append(big).append("\ndata: ").append(big).append("\n\n"); // joined lines
    stream.append("data: tail\n\n");
    for (int step : new int[] {8192, 5_001, 10_000_000}) {
      SseReader reader = new SseReader(trickle(stream.toString(), step), 4 << 20, null);
      for (int i = 0; i < 3; i++) {
        assertThat(reader.next()).isTrue();
        assertThat(new String(reader.bytes(), reader.from(), reader.to() - reader.from(), UTF_8)).isEqualTo(big + i);
        assertThat(reader.bufferSize()).isGreaterThan(700_000);
        assertThat(reader.next()).isTrue();
        assertThat(new String(reader.bytes(), reader.from(), reader.to() - reader.from(), UTF_8)).isEqualTo("small" + i);
      }
      assertThat(reader.next()).isTrue();
      assertThat(new String(reader.bytes(), reader.from(), reader.to() - reader.from(), UTF_8))
          .isEqualTo(big + "\n" + big);
      assertThat(reader.next()).isTrue();
      assertThat(new String(reader.bytes(), reader.from(), reader.to() - reader.from(), UTF_8)).isEqualTo("tail");
      assertThat(reader.next()).isFalse();
      assertThat(reader.bufferSize()).as("given back after the long lines, step " + step).isEqualTo(64 * 1024);
    }
  }

  @Test
  void aTooLongLineOrEventEndsTheStream() {
    String line = "data: " + "y".repeat(1000) + "\n\n";
    assertThatThrownBy(() -> events(trickle(line, 7), 999)).isInstanceOf(SandboxException.class)
        .hasMessageContaining("line longer than 999 bytes");
    assertThatThrownBy(() -> events(trickle(line, 100_000), 999)).isInstanceOf(SandboxException.class)
        .hasMessageContaining("line longer than 999 bytes");
    String noNewline = "data: " + "y".repeat(5000);
    assertThatThrownBy(() -> events(trickle(noNewline, 100), 999)).isInstanceOf(SandboxException.class);
    String lines = "data: " + "z".repeat(600) + "\ndata: " + "z".repeat(600) + "\n\n";
    assertThatThrownBy(() -> events(trickle(lines, 13), 999)).isInstanceOf(SandboxException.class)
        .hasMessageContaining("event longer than 999 bytes");
  }

  /**
   * Lines after an event's data line that are not data (comments, other fields) do not count
   * towards its length, so they must not be kept either: a stream that sends them without end
   * before the blank line would otherwise grow the buffer until memory runs out.
   */
  @Test
  void linesSkippedInsideAnEventAreNotKept() throws IOException {
    String stream = "data: {\"a\":1}\n" + ": keep-alive\nid: 7\n".repeat(300_000) + "data: more\n"
        + ": keep-alive\n".repeat(300_000) + "\ndata: {\"b\":2}\n" + ":\n".repeat(300_000) + "\n";
    for (int step : new int[] {1000, 64 * 1024, 10_000_000}) {
      SseReader reader = new SseReader(trickle(stream, step), 1024, null);
      assertThat(reader.next()).isTrue();
      assertThat(new String(reader.bytes(), reader.from(), reader.to() - reader.from(), UTF_8))
          .isEqualTo("{\"a\":1}\nmore");
      assertThat(reader.bufferSize()).as("step " + step).isLessThanOrEqualTo(128 * 1024);
      assertThat(reader.next()).isTrue();
      assertThat(new String(reader.bytes(), reader.from(), reader.to() - reader.from(), UTF_8)).isEqualTo("{\"b\":2}");
      assertThat(reader.bufferSize()).as("step " + step).isLessThanOrEqualTo(128 * 1024);
      assertThat(reader.next()).isFalse();
    }
  }

  @Test
  void anEndInsideALineOrAnEventIsAnError() throws IOException {
    assertThatThrownBy(() -> events(trickle("data: {\"a\":1}\n\ndata: {\"b\"", 3), 1 << 20))
        .isInstanceOf(EOFException.class).hasMessageContaining("inside a line");
    assertThatThrownBy(() -> events(trickle("data: {\"a\":1}\n", 3), 1 << 20))
        .isInstanceOf(EOFException.class).hasMessageContaining("inside an event");
    assertThat(events(trickle("", 3), 1 << 20)).isEmpty();
    assertThat(events(trickle(": bye\n\n", 3), 1 << 20)).isEmpty();
  }

  @Test
  void findsNewlinesAtEveryPositionOfTheEightByteSteps() {
    for (int length = 0; length < 40; length++) {
      for (int at = -1; at < length; at++) {
        byte[] b = new byte[length];
        java.util.Arrays.fill(b, (byte) 'a');
        if (at >= 0) {
          b[at] = '\n';
          if (at + 1 < length) {
            b[at + 1] = '\n'; // a second one after it must not win
          }
        }
        for (int from = 0; from <= Math.max(0, at); from++) {
          int expected = at >= from ? at : -1;
          assertThat(SseReader.newlineIndex(b, from, length)).as(length + "/" + at + "/" + from).isEqualTo(expected);
        }
      }
    }
  }
}
