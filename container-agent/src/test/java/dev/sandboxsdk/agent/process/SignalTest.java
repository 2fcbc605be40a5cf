package dev.sandboxsdk.agent.process;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import java.util.Arrays;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.NullSource;
import org.junit.jupiter.params.provider.ValueSource;

class SignalTest {
  @ParameterizedTest(name = "\"{0}\" is {1}")
  @CsvSource(delimiter = '|', ignoreLeadingAndTrailingWhitespace = false, value = {
      "SIGTERM|SIGTERM",
      "TERM|SIGTERM",
      "term|SIGTERM",
      "sigterm|SIGTERM",
      "15|SIGTERM",
      " int |SIGINT",
      "9|SIGKILL",
      "KILL|SIGKILL",
      "1|SIGHUP",
      "31|SIGSYS",
  })
  void parseAcceptsNamesShortNamesAndNumbers(String value, Signal expected) {
    assertThat(Signal.parse(value, "signal")).isEqualTo(expected);
  }

  @ParameterizedTest(name = "\"{0}\"")
  @NullSource
  @ValueSource(strings = {"", "   ", "SIGFOO", "FOO", "SIG", "0", "32", "99", "-1", "1234", "15.0", "SIG15", "SIGTERM2"})
  void parseRejectsValuesThatAreNoSignal(String value) {
    assertThatThrownBy(() -> Signal.parse(value, "signal"))
        .isInstanceOfSatisfying(AgentException.class, e -> {
          assertThat(e.code()).isEqualTo(ErrorCode.VALIDATION_FAILED);
          assertThat(e.context()).containsEntry("field", "signal");
        });
  }

  @Test
  void rejectionNamesTheFieldAndTheOffendingValue() {
    assertThatThrownBy(() -> Signal.parse("SIGFOO", "kill.signal"))
        .isInstanceOfSatisfying(AgentException.class, e -> {
          assertThat(e.context()).containsEntry("field", "kill.signal");
          assertThat(e.getMessage()).contains("SIGFOO");
        });
  }

  @Test
  void everySignalRoundTripsThroughItsNameShortNameAndNumber() {
    for (Signal s : Signal.values()) {
      assertThat(Signal.parse(s.name(), "signal")).isEqualTo(s);
      assertThat(Signal.parse(s.shortName(), "signal")).isEqualTo(s);
      assertThat(Signal.parse(Integer.toString(s.number()), "signal")).isEqualTo(s);
      assertThat(Signal.ofNumber(s.number())).contains(s);
    }
  }

  @Test
  void numbersAreTheLinuxOnesOneToThirtyOne() {
    assertThat(Arrays.stream(Signal.values()).mapToInt(Signal::number))
        .containsExactlyElementsOf(IntStream.rangeClosed(1, 31).boxed().toList());
    assertThat(Signal.SIGKILL.number()).isEqualTo(9);
    assertThat(Signal.SIGTERM.shortName()).isEqualTo("TERM");
    assertThat(Signal.ofNumber(0)).isEmpty();
    assertThat(Signal.ofNumber(32)).isEmpty();
  }
}
