package dev.sandboxsdk.agent.text;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

class JsonTextTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  static Stream<String> awkwardStrings() {
    StringBuilder controls = new StringBuilder();
    for (char c = 0; c < 0x20; c++) {
      controls.append(c);
    }
    return Stream.of(
        "",
        "plain",
        "say \"hi\"",
        "C:\\path\\to\\file \\\" mixed",
        controls.toString(),
        "line\nbreak\r\ntab\tend",
        "nul\u0000in the middle",
        "del \u007F char",
        "é, €, 中文, ß",
        "emoji 😀 and 👍🏽 and 🇩🇪",
        "\"\\" + controls + "\u007Fé😀\"");
  }

  @ParameterizedTest
  @MethodSource("awkwardStrings")
  void quotedOutputParsesBackToTheOriginalString(String s) throws IOException {
    byte[] utf8 = s.getBytes(UTF_8);
    ByteBuf out = new ByteBuf(0);

    JsonText.appendQuoted(utf8, 0, utf8.length, out);

    assertThat(JSON.readValue(out.toByteArray(), String.class)).isEqualTo(s);
  }

  @Test
  void escapesQuotesBackslashesAndControlCharactersCompactly() {
    byte[] utf8 = "a\"b\\c\nd\re\tf\u0001g\u001f".getBytes(UTF_8);
    ByteBuf out = new ByteBuf(0);

    JsonText.appendQuoted(utf8, 0, utf8.length, out);

    assertThat(out.toString()).isEqualTo("\"a\\\"b\\\\c\\nd\\re\\tf\\u0001g\\u001f\"");
  }

  @Test
  void copiesNonAsciiAndDelBytesUnchanged() {
    // JSON allows these raw; copying them keeps the hot path free of per-character work.
    byte[] utf8 = "é€😀\u007F".getBytes(UTF_8);
    ByteBuf out = new ByteBuf(0);

    JsonText.appendQuoted(utf8, 0, utf8.length, out);

    assertThat(out.toByteArray()).isEqualTo(("\"" + "é€😀\u007F" + "\"").getBytes(UTF_8));
  }

  @Test
  void quotesOnlyTheGivenRangeAndAppendsToExistingContent() throws IOException {
    byte[] utf8 = "xx\"é\"yy".getBytes(UTF_8);
    ByteBuf out = new ByteBuf(0).ascii("[");

    JsonText.appendQuoted(utf8, 2, utf8.length - 4, out);
    out.ascii("]");

    assertThat(JSON.readValue(out.toByteArray(), String[].class)).containsExactly("\"é\"");
  }

  @Test
  void appendQuotedAsciiWritesAJsonStringLiteral() throws IOException {
    ByteBuf out = new ByteBuf(0);

    JsonText.appendQuotedAscii("proc-1 \"x\"", out);

    assertThat(JSON.readValue(out.toByteArray(), String.class)).isEqualTo("proc-1 \"x\"");
  }
}
