package dev.sandboxsdk.agent.egress;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import javax.net.ssl.SNIHostName;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLParameters;
import org.junit.jupiter.api.Test;

class EgressClientHelloTest {

  /** A real ClientHello, as the JDK's TLS client writes it. */
  private static byte[] hello(String serverName) throws Exception {
    SSLEngine engine = SSLContext.getDefault().createSSLEngine();
    engine.setUseClientMode(true);
    if (serverName != null) {
      SSLParameters params = engine.getSSLParameters();
      params.setServerNames(List.of(new SNIHostName(serverName)));
      engine.setSSLParameters(params);
    }
    ByteBuffer out = ByteBuffer.allocate(engine.getSession().getPacketBufferSize());
    engine.wrap(ByteBuffer.allocate(0), out);
    return Arrays.copyOf(out.array(), out.position());
  }

  @Test
  void readsTheServerName() throws Exception {
    byte[] b = hello("api.example.com");
    assertThat(ClientHello.read(b, b.length)).isEqualTo(new ClientHello.Result(ClientHello.Kind.COMPLETE,
        "api.example.com"));
  }

  @Test
  void aHelloWithoutServerNameIsComplete() throws Exception {
    byte[] b = hello(null);
    ClientHello.Result r = ClientHello.read(b, b.length);
    assertThat(r.kind()).isEqualTo(ClientHello.Kind.COMPLETE);
    assertThat(r.serverName()).isNull();
  }

  @Test
  void everyPrefixIsIncomplete() throws Exception {
    byte[] b = hello("api.example.com");
    for (int n = 0; n < b.length; n++) {
      assertThat(ClientHello.read(b, n).kind()).as("%d bytes", n).isEqualTo(ClientHello.Kind.INCOMPLETE);
    }
  }

  @Test
  void aHelloSplitAcrossRecordsIsReassembled() throws Exception {
    byte[] b = hello("split.example.com");
    int body = b.length - 5;
    int firstPart = body / 3;
    ByteBuffer two = ByteBuffer.allocate(b.length + 5);
    two.put(new byte[] {0x16, 3, 1, (byte) (firstPart >> 8), (byte) firstPart}).put(b, 5, firstPart);
    int rest = body - firstPart;
    two.put(new byte[] {0x16, 3, 1, (byte) (rest >> 8), (byte) rest}).put(b, 5 + firstPart, rest);
    assertThat(ClientHello.read(two.array(), two.position()).serverName()).isEqualTo("split.example.com");
  }

  @Test
  void otherBytesAreNotTls() {
    byte[] get = "GET / HTTP/1.1\r\n".getBytes(StandardCharsets.US_ASCII);
    assertThat(ClientHello.read(get, get.length).kind()).isEqualTo(ClientHello.Kind.NOT_TLS);
    byte[] ssh = "SSH-2.0-OpenSSH_9.6\r\n".getBytes(StandardCharsets.US_ASCII);
    assertThat(ClientHello.read(ssh, ssh.length).kind()).isEqualTo(ClientHello.Kind.NOT_TLS);
  }

  @Test
  void garbageAfterAHandshakeByteIsMalformedOrIncompleteNeverAnException() throws Exception {
    Random random = new Random(42);
    byte[] good = hello("fuzz.example.com");
    for (int i = 0; i < 20_000; i++) {
      byte[] b = good.clone();
      int flips = 1 + random.nextInt(8);
      for (int f = 0; f < flips; f++) {
        b[5 + random.nextInt(b.length - 5)] = (byte) random.nextInt(256);
      }
      ClientHello.Result r = ClientHello.read(b, b.length);
      assertThat(r.kind()).isNotEqualTo(ClientHello.Kind.NOT_TLS);
      if (r.serverName() != null) {
        assertThat(r.serverName()).matches("[\\x21-\\x7e]+");
      }
    }
    byte[] notHello = {0x16, 3, 1, 0, 4, 2, 0, 0, 0}; // a ServerHello type
    assertThat(ClientHello.read(notHello, notHello.length).kind()).isEqualTo(ClientHello.Kind.MALFORMED);
  }
}
