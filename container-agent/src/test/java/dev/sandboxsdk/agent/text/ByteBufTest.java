package dev.sandboxsdk.agent.text;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import org.junit.jupiter.api.Test;

class ByteBufTest {
  @Test
  void startsEmptyWithAtLeastSixteenBytesOfRoom() {
    ByteBuf buf = new ByteBuf(0);

    assertThat(buf.size()).isZero();
    assertThat(buf.array()).hasSizeGreaterThanOrEqualTo(16);
  }

  @Test
  void growsAsNeededAndKeepsEverythingAppended() {
    ByteBuf buf = new ByteBuf(16);
    ByteArrayOutputStream expected = new ByteArrayOutputStream();

    for (int i = 0; i < 1000; i++) {
      buf.append((byte) i);
      expected.write(i);
    }
    byte[] block = new byte[5000];
    for (int i = 0; i < block.length; i++) {
      block[i] = (byte) (i * 7);
    }
    buf.append(block, 100, 4000);
    expected.write(block, 100, 4000);

    assertThat(buf.size()).isEqualTo(5000);
    assertThat(buf.toByteArray()).isEqualTo(expected.toByteArray());
  }

  @Test
  void growthAtLeastDoublesSoManySmallAppendsStayCheap() {
    ByteBuf buf = new ByteBuf(16);
    buf.append(new byte[16]);

    buf.append((byte) 1);

    assertThat(buf.array()).hasSizeGreaterThanOrEqualTo(32);
  }

  @Test
  void ensureSpareGuaranteesRoomWithoutChangingSize() {
    ByteBuf buf = new ByteBuf(16).ascii("abc");

    buf.ensureSpare(100);

    assertThat(buf.array().length - buf.size()).isGreaterThanOrEqualTo(100);
    assertThat(buf.toString()).isEqualTo("abc");
  }

  @Test
  void asciiAndNumberAppendTheirText() {
    ByteBuf buf = new ByteBuf(16).ascii("n=").number(-42).ascii(",").number(Long.MAX_VALUE);

    assertThat(buf.toString()).isEqualTo("n=-42," + Long.MAX_VALUE);
  }

  @Test
  void clearEmptiesTheBufferForReuse() {
    ByteBuf buf = new ByteBuf(16).ascii("old content");

    buf.clear();
    buf.ascii("new");

    assertThat(buf.toByteArray()).isEqualTo("new".getBytes(UTF_8));
  }

  @Test
  void writeToAndToByteArrayCoverOnlyTheFilledPart() throws IOException {
    ByteBuf buf = new ByteBuf(64).append("é!".getBytes(UTF_8));
    ByteArrayOutputStream sink = new ByteArrayOutputStream();

    buf.writeTo(sink);

    assertThat(sink.toByteArray()).isEqualTo("é!".getBytes(UTF_8));
    assertThat(buf.toByteArray()).hasSize(3);
    assertThat(buf.toString()).isEqualTo("é!");
  }
}
