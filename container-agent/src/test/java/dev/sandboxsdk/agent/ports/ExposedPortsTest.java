package dev.sandboxsdk.agent.ports;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import org.junit.jupiter.api.Test;

/** The registry of exposed ports: bounded, and a refusal changes nothing. */
class ExposedPortsTest {
  @Test
  void atMostMaxExposedPortsAreExposedAtOnce() {
    ExposedPorts ports = new ExposedPorts();
    for (int p = 1; p <= ExposedPorts.MAX_EXPOSED; p++) {
      ports.expose(p, "n".repeat(ExposedPorts.MAX_NAME_LENGTH));
    }
    assertThatThrownBy(() -> ports.expose(65535, null)).isInstanceOfSatisfying(AgentException.class, e -> {
      assertThat(e.code()).isEqualTo(ErrorCode.TOO_MANY_EXPOSED_PORTS);
      assertThat(e.code().httpStatus()).isEqualTo(429);
    });
    assertThat(ports.get(65535)).isNull();
    assertThat(ports.list()).hasSize(ExposedPorts.MAX_EXPOSED);
    // An exposed port is still reported as such, not as the cap.
    assertThatThrownBy(() -> ports.expose(1, null)).isInstanceOfSatisfying(AgentException.class,
        e -> assertThat(e.code()).isEqualTo(ErrorCode.PORT_ALREADY_EXPOSED));
    ports.unexpose(1);
    assertThat(ports.expose(65535, null).port()).isEqualTo(65535);
  }
}
