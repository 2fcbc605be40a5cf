package dev.sandboxsdk.container.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import org.junit.jupiter.api.Test;

class EngineStateTest {

  @Test
  void engineStatesBecomeTheSdksWords() {
    assertThat(Engine.state("running").wireName()).isEqualTo("running");
    assertThat(Engine.state("exited").wireName()).isEqualTo("stopped");
    assertThat(Engine.state("created").wireName()).isEqualTo("stopped");
    assertThat(Engine.state("stopped").wireName()).isEqualTo("stopped");
    assertThat(Engine.state("paused").wireName()).isEqualTo("paused");
    assertThat(Engine.state(null).wireName()).isEqualTo("unknown");
  }

  @Test
  void stopTimesFromDockerAndPodmanParseAndZeroMeansNever() {
    assertThat(Engine.parseTime("2026-11-25T10:34:00.123456789Z")).isEqualTo(Instant.parse("2026-11-25T10:34:00.123456789Z"));
    assertThat(Engine.parseTime("2026-11-25T10:34:00.5+00:00")).isEqualTo(Instant.parse("2026-11-25T10:34:00.5Z"));
    assertThat(Engine.parseTime("0001-01-01T00:00:00Z")).isNull();
    assertThat(Engine.parseTime("not a time")).isNull();
    assertThat(Engine.parseTime(null)).isNull();
  }

  @Test
  void aNamedSandboxsContainerIsSandboxDashName() {
    assertThat(Launch.containerName("review-42")).isEqualTo("sandbox-review-42");
  }
}
