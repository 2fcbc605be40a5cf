package dev.sandboxsdk.agent;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The connection cap and the request deadline: defaults, derivation and the command line. */
class HttpLimitsTest {
  private final PrintStream out = new PrintStream(new ByteArrayOutputStream(), true, UTF_8);

  /** Parses with a fixed workspace, so no temporary directory is made. */
  private AgentConfig parse(String[] args) {
    return Main.parse(args, "t", out, () -> java.nio.file.Path.of("/tmp/unused-workspace"));
  }

  @ParameterizedTest(name = "open-file limit {0} -> {1} processes")
  @CsvSource({"256, 24", "1024, 120", "20000, 1024", "64, 8", "9223372036854775807, 1024"})
  void theProcessCapLeavesEachRunningProcessItsDescriptors(long openFileLimit, int cap) {
    assertThat(AgentConfig.derivedMaxProcesses(openFileLimit)).isEqualTo(cap);
  }

  @Test
  void aSetProcessCapWinsOverTheDerivedOne() {
    assertThat(parse(new String[] {"--max-processes", "5000"}).effectiveMaxProcesses()).isEqualTo(5000);
    assertThat(parse(new String[0]).effectiveMaxProcesses())
        .isEqualTo(AgentConfig.derivedMaxProcesses(AgentConfig.openFileLimit()));
  }

  @ParameterizedTest(name = "open-file limit {0} -> {1} connections")
  @CsvSource({"50, 16", "256, 96", "1024, 480", "2112, 1024", "20000, 1024", "1048576, 1024", "9223372036854775807, 1024"})
  void theDefaultCapLeavesHalfOfTheDescriptorsToProcesses(long openFileLimit, int cap) {
    assertThat(AgentConfig.derivedMaxConnections(openFileLimit)).isEqualTo(cap);
  }

  @Test
  void theCapFollowsThisProcesssOpenFileLimitUnlessSet() {
    AgentConfig derived = parse(new String[0]);
    assertThat(derived.maxConnections()).isZero();
    assertThat(derived.effectiveMaxConnections()).isEqualTo(AgentConfig.derivedMaxConnections(AgentConfig.openFileLimit()));
    assertThat(AgentConfig.openFileLimit()).as("read from /proc/self/limits").isPositive().isLessThan(Long.MAX_VALUE);
    assertThat(derived.requestTimeoutSeconds()).isEqualTo(AgentConfig.DEFAULT_REQUEST_TIMEOUT_SECONDS);

    AgentConfig set = parse(new String[] {"--max-connections", "5000", "--request-timeout-seconds=7"});
    assertThat(set.effectiveMaxConnections()).isEqualTo(5000);
    assertThat(set.requestTimeoutSeconds()).isEqualTo(7);
  }

  @ParameterizedTest
  @CsvSource({"--max-connections, 0", "--max-connections, -1", "--request-timeout-seconds, 0", "--request-timeout-seconds, 3601",
      "--request-timeout-seconds, 1.5"})
  void outOfRangeValuesAreRefused(String option, String value) {
    assertThatThrownBy(() -> parse(new String[] {option, value}))
        .isInstanceOf(Main.UsageException.class)
        .hasMessageContaining(option);
  }
}
