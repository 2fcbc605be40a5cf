package dev.sandboxsdk.agent.ports;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class ProxyForwarderTest {
  private static UpstreamResponses.UpstreamReader reader(String bytes) {
    return new UpstreamResponses.UpstreamReader(new ByteArrayInputStream(bytes.getBytes(StandardCharsets.ISO_8859_1)),
        new ProxyTimeouts.Watch(null, Long.MAX_VALUE));
  }

  @Test
  void redirectsOfTheServerStayBelowItsPrefix() {
    assertThat(ProxyForwarder.underPrefix("/login?next=%2F", 8080)).isEqualTo("/proxy/8080/login?next=%2F");
    assertThat(ProxyForwarder.underPrefix("http://localhost:8080/a", 8080)).isEqualTo("/proxy/8080/a");
    assertThat(ProxyForwarder.underPrefix("http://127.0.0.1:8080", 8080)).isEqualTo("/proxy/8080/");
    assertThat(ProxyForwarder.underPrefix("http://127.0.0.1:8080?q", 8080)).isEqualTo("/proxy/8080/?q");
    assertThat(ProxyForwarder.underPrefix("/proxy/8080/already", 8080)).isEqualTo("/proxy/8080/already");
    assertThat(ProxyForwarder.underPrefix("http://127.0.0.1:80801/x", 8080)).isEqualTo("http://127.0.0.1:80801/x");
    assertThat(ProxyForwarder.underPrefix("https://example.com/x", 8080)).isEqualTo("https://example.com/x");
    assertThat(ProxyForwarder.underPrefix("//evil.example/x", 8080)).isEqualTo("//evil.example/x");
    assertThat(ProxyForwarder.underPrefix("relative/x", 8080)).isEqualTo("relative/x");
  }

  @Test
  void previewCookiesOfEveryAgentAreRemovedAndTheAppsKept() {
    assertThat(ProxyForwarder.withoutPreviewCookies("a=1; sandbox-preview-0123abcd=t; b=2;sandbox-preview-x=y"))
        .isEqualTo("a=1; b=2");
    assertThat(ProxyForwarder.withoutPreviewCookies("sandbox-preview-0123abcd=t")).isEmpty();
  }

  @Test
  void aResponseHeadIsParsedWithInterimAnswersAndLfOnlyLines() throws IOException {
    UpstreamResponses.UpstreamReader in = reader("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-A:  b \nSet-Cookie: a=1\r\n"
        + "Set-Cookie: b=2\r\n\r\nbody");
    UpstreamResponses.Head head = UpstreamResponses.readHead(in);
    assertThat(head.status()).isEqualTo(200);
    assertThat(head.first("content-type")).isEqualTo("text/plain");
    assertThat(head.first("X-A")).isEqualTo("b");
    assertThat(head.headers()).hasSize(4);
    assertThat(new String(in.readAllBytes(), StandardCharsets.ISO_8859_1)).isEqualTo("body");
  }

  @Test
  void headsThatAreNotHttpAreRefused() {
    for (String bad : new String[] {"SSH-2.0-OpenSSH\r\n\r\n", "HTTP/1.1 20 OK\r\n\r\n", "HTTP/2 200\r\n\r\n",
        "HTTP/1.1 200 OK\r\n folded\r\n\r\n", "HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
        // A bare CR or a NUL in a header (RFC 9110 5.5): the JDK's server refused the CR with a 500.
        "HTTP/1.1 200 OK\r\nX-A: a\rb\r\n\r\n", "HTTP/1.1 200 OK\r\nX-A: a\u0000b\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX\rA: b\r\n\r\n"}) {
      assertThatThrownBy(() -> UpstreamResponses.readHead(reader(bad))).as(bad).isInstanceOf(IOException.class);
    }
    assertThatThrownBy(() -> UpstreamResponses.readHead(reader("HTTP/1.1 200 OK\r\nX: y\r\n"))).isInstanceOf(EOFException.class);
    String huge = "HTTP/1.1 200 OK\r\nX: " + "y".repeat(UpstreamResponses.MAX_HEAD_BYTES) + "\r\n\r\n";
    assertThatThrownBy(() -> UpstreamResponses.readHead(reader(huge))).hasMessageContaining("larger than");
  }

  @Test
  void chunkedBodiesAreDecodedWithExtensionsAndTrailers() throws IOException {
    UpstreamResponses.ChunkedReader body = new UpstreamResponses.ChunkedReader(
        reader("5;ext=1\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nTrailer: x\r\n\r\nNEXT"));
    assertThat(new String(body.readAllBytes(), StandardCharsets.ISO_8859_1)).isEqualTo("hello world");
    assertThat(body.read()).isEqualTo(-1);
  }

  @Test
  void brokenChunkedBodiesAreErrors() {
    for (String bad : new String[] {"zz\r\nhello\r\n0\r\n\r\n", "5\r\nhelloXX0\r\n\r\n", "5\r\nhel"}) {
      assertThatThrownBy(() -> new UpstreamResponses.ChunkedReader(reader(bad)).readAllBytes()).as(bad)
          .isInstanceOf(IOException.class);
    }
  }
}
