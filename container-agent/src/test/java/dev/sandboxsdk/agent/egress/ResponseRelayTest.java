package dev.sandboxsdk.agent.egress;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.ReadableByteChannel;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The intercepted answer's relay: every framing HTTP/1.1 has, what the client receives (the bytes
 * as the server sent them, the head with {@code Connection: close}), and when the server's
 * connection may carry another request. Each case is read in one piece and a byte at a time.
 */
class ResponseRelayTest {
  private static final String NEXT = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext";

  record Relayed(boolean reusable, String client, long counted, String left) {}

  static Relayed relay(String method, String server, int readSize) throws IOException {
    Source from = new Source(server.getBytes(StandardCharsets.ISO_8859_1), readSize);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    AtomicLong counted = new AtomicLong();
    boolean reusable = new ResponseRelay(from, Channels.newChannel(out), counted::addAndGet, () -> { }).relay(method);
    return new Relayed(reusable, out.toString(StandardCharsets.ISO_8859_1), counted.get(), from.rest());
  }

  /** The server's bytes, {@code readSize} at most per read. */
  static final class Source implements ReadableByteChannel {
    private final ByteBuffer bytes;
    private final int readSize;

    Source(byte[] bytes, int readSize) {
      this.bytes = ByteBuffer.wrap(bytes);
      this.readSize = readSize;
    }

    @Override
    public int read(ByteBuffer dst) {
      if (!bytes.hasRemaining()) {
        return -1;
      }
      int n = Math.min(readSize, Math.min(dst.remaining(), bytes.remaining()));
      ByteBuffer slice = bytes.slice();
      slice.limit(n);
      dst.put(slice);
      bytes.position(bytes.position() + n);
      return n;
    }

    String rest() {
      return StandardCharsets.ISO_8859_1.decode(bytes.duplicate()).toString();
    }

    @Override
    public boolean isOpen() {
      return true;
    }

    @Override
    public void close() {
    }
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 1 << 20})
  void aLengthEndsTheAnswerAndTheClientIsToldTheConnectionCloses(int readSize) throws IOException {
    Relayed r = relay("GET", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n"
        + "X-A: 1\r\n\r\nhello", readSize);
    assertThat(r.client()).isEqualTo("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: 1\r\nConnection: close\r\n\r\nhello");
    assertThat(r.reusable()).isTrue();
    assertThat(r.counted()).isEqualTo(r.client().length());
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 7, 1 << 20})
  void aChunkedBodyGoesOnVerbatimToItsTrailers(int readSize) throws IOException {
    String body = "5;ext=1\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n";
    Relayed r = relay("POST", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n" + body, readSize);
    assertThat(r.client()).isEqualTo("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n" + body);
    assertThat(r.reusable()).isTrue();
  }

  @Test
  void interimAnswersGoFirstAndNoBodyAnswersEndAtTheirHead() throws IOException {
    Relayed r = relay("PUT", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
        + "HTTP/1.1 204 No Content\r\n\r\n", 3);
    assertThat(r.client()).isEqualTo("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
        + "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
    assertThat(r.reusable()).isTrue();
    assertThat(relay("HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", 1).reusable()).isTrue();
    Relayed notModified = relay("GET", "HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n", 1);
    assertThat(notModified.reusable()).isTrue();
    assertThat(notModified.client()).endsWith("Connection: close\r\n\r\n");
  }

  @Test
  void aServerThatClosesOrCannotBeFramedIsRelayedToItsEndAndNotKept() throws IOException {
    String[] cases = {
      "HTTP/1.1 200 OK\r\n\r\nuntil the close",                                       // no length
      "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",        // asked to close
      "HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello",                            // HTTP/1.0
      "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",     // two lengths
      "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\nbody",                            // not a length
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n3\r\nabc\r\n0\r\n\r\n", // both
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nraw",                        // not chunked last
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nnot hex",            // bad chunk size
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXX0\r\n\r\n",      // no CRLF after data
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\nraw frames",             // an upgrade
      "SSH-2.0-not-http\r\n\r\nbytes",                                                 // not HTTP
    };
    for (String server : cases) {
      for (int size : new int[] {1, 1 << 20}) {
        Relayed r = relay("GET", server, size);
        assertThat(r.reusable()).as(server).isFalse();
        assertThat(r.client().replace("Connection: close\r\n", "").replace("Connection: close", ""))
            .as(server).isEqualTo(server.replace("Connection: close\r\n", ""));
        assertThat(r.left()).as("relayed to the end: %s", server).isEmpty();
      }
    }
  }

  @Test
  void theNextAnswerOnTheConnectionIsNotRead() throws IOException {
    // The server's connection carries nothing more here, but what a relay reads must end with its answer.
    Relayed r = relay("GET", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 1);
    assertThat(r.reusable()).isTrue();
    assertThat(r.left()).isEmpty();
    Relayed chunked = relay("GET", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + NEXT, 1);
    assertThat(chunked.left()).as("read a byte at a time: nothing past the answer").isEqualTo(NEXT);
    Relayed more = relay("GET", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA", 1 << 20);
    assertThat(more.reusable()).as("bytes past the answer arrived with it").isFalse();
    assertThat(more.client()).as("and are not the client's").endsWith("\r\n\r\nok");
  }

  @Test
  void anOversizedHeadIsRelayedRawAndAnEarlyCloseIsAnError() throws IOException {
    String big = "HTTP/1.1 200 OK\r\nX-Big: " + "a".repeat(ResponseRelay.MAX_HEAD) + "\r\n\r\nbody";
    Relayed r = relay("GET", big, 1 << 20);
    assertThat(r.reusable()).isFalse();
    assertThat(r.client()).isEqualTo(big);
    assertThatThrownBy(() -> relay("GET", "", 1)).isInstanceOf(EOFException.class);
    assertThatThrownBy(() -> relay("GET", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", 1))
        .isInstanceOf(EOFException.class).hasMessageContaining("5 bytes before");
  }
}
