package dev.sandboxsdk.agent;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class HeapAdviceTest {
  private static final long SIX_GIB = 6L << 30;

  @Test
  void aJvmWithoutAHeapLimitOnABigMachineIsToldTheRecommendedFlags() {
    String advice = HeapAdvice.check(List.of("/usr/bin/java", "-XX:+UseSerialGC", "-jar", "container-agent.jar",
        "--port", "0"), SIX_GIB);

    assertThat(advice).contains("6144 MiB").contains("java " + HeapAdvice.RECOMMENDED + " -jar container-agent.jar");
  }

  @ParameterizedTest
  @ValueSource(strings = {"-Xmx256m", "-XX:MaxHeapSize=268435456", "-XX:MaxRAMPercentage=50", "-XX:MaxRAM=1g",
      "-XX:MaxRAMFraction=4"})
  void anyHeapLimitCountsAsTheOperatorsChoice(String limit) {
    assertThat(HeapAdvice.check(List.of("/usr/bin/java", limit, "-jar", "container-agent.jar"), SIX_GIB)).isNull();
  }

  @Test
  void aSmallMachinesDefaultHeapNeedsNoAdvice() {
    assertThat(HeapAdvice.check(List.of("java", "-jar", "container-agent.jar"), 512L << 20)).isNull();
  }

  @Test
  void theOptionsIncludeThisJvmsCommandLine() {
    // The test JVM's own command line: it has its main class, whatever else surefire gives it.
    assertThat(HeapAdvice.jvmOptions()).anySatisfy(o -> assertThat(o).contains("java"));
  }
}
