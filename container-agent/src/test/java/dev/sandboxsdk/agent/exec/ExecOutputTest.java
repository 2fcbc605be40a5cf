package dev.sandboxsdk.agent.exec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.process.ExecSpec;
import dev.sandboxsdk.agent.process.OutputBudget;
import dev.sandboxsdk.agent.text.ByteBuf;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Random;
import org.junit.jupiter.api.Test;

class ExecOutputTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  private static String written(ExecOutput out, ExecSpec.Encoding encoding) throws Exception {
    ByteArrayOutputStream sink = new ByteArrayOutputStream();
    out.writeJson(encoding, sink, new ByteBuf(64));
    assertThat((long) sink.size()).as("jsonLength matches what is written").isEqualTo(out.jsonLength(encoding));
    return JSON.readValue(sink.toByteArray(), String.class);
  }

  @Test
  void base64OfEveryLengthAroundGroupAndBlockBoundariesIsExact() throws Exception {
    Random random = new Random(7);
    for (int n : new int[] {0, 1, 2, 3, 4, 8191, 8192, 8193, 16382, 16383, 16384, 16385, 100_000, 300_001}) {
      byte[] data = new byte[n];
      random.nextBytes(data);
      OutputBudget budget = new OutputBudget(1 << 30);
      ExecOutput out = ExecOutput.open(1 << 20, budget)[0];
      for (int off = 0; off < n; off += 777) { // odd-sized writes, as pipes deliver them
        out.write(data, off, Math.min(777, n - off));
      }

      assertThat(written(out, ExecSpec.Encoding.BASE64)).as("n=%d", n).isEqualTo(Base64.getEncoder().encodeToString(data));
      assertThat(out.truncated()).isFalse();
    }
  }

  @Test
  void textIsEscapedAndInvalidBytesReplacedAcrossSlices() throws Exception {
    String text = "€\"\\\n\u0000ä".repeat(10_000);
    byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
    ExecOutput out = ExecOutput.open(1 << 20, new OutputBudget(1 << 30))[0];
    out.write(bytes, 0, bytes.length);
    out.write(new byte[] {(byte) 0xE2, (byte) 0x82}, 0, 2); // a cut code point at the end

    assertThat(written(out, ExecSpec.Encoding.UTF8)).isEqualTo(text + "\uFFFD");
  }

  @Test
  void theLimitCutsAtAByteAndCountsAsTheRequestsOwnCap() throws Exception {
    ExecOutput out = ExecOutput.open(10, new OutputBudget(1 << 30))[0];
    out.write("0123456789abc".getBytes(StandardCharsets.US_ASCII), 0, 13);

    assertThat(written(out, ExecSpec.Encoding.UTF8)).isEqualTo("0123456789");
    assertThat(out.truncated()).isTrue();
    assertThat(out.budgetExhausted()).isFalse();
  }

  @Test
  void whenTheBudgetRefusesABlockOutputIsDroppedAndSaidSoAndEverythingIsReleased() throws Exception {
    OutputBudget budget = new OutputBudget(64 * 1024);
    ExecOutput[] both = ExecOutput.open(1 << 20, budget);
    byte[] chunk = new byte[32 * 1024];
    for (int i = 0; i < 10; i++) {
      both[0].write(chunk, 0, chunk.length);
    }

    assertThat(both[0].truncated()).isTrue();
    assertThat(both[0].budgetExhausted()).isTrue();
    assertThat(budget.used()).isLessThanOrEqualTo(64 * 1024);
    assertThat(written(both[0], ExecSpec.Encoding.BASE64)).isNotEmpty();
    both[0].release();
    both[1].release();
    both[0].release(); // twice is harmless
    assertThat(budget.used()).isZero();
  }

  @Test
  void openIsRefusedWhenNotEvenTheFirstBlocksFit() {
    OutputBudget budget = new OutputBudget(ExecOutput.FIRST_BLOCK + 1);

    assertThatThrownBy(() -> ExecOutput.open(1 << 20, budget))
        .isInstanceOfSatisfying(AgentException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.OUTPUT_BUDGET_EXHAUSTED));
    assertThat(budget.used()).as("the half-open pair gave its block back").isZero();
  }
}
