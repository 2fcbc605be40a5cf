package dev.sandboxsdk.agent;

import org.junit.jupiter.api.extension.RegisterExtension;

/** Sessions on an agent whose commands run without isolation. */
class SessionIT extends SessionSuite {
  @RegisterExtension static final TestAgent agent = new TestAgent(b -> b.graceMs(1000));

  @Override
  TestAgent agent() {
    return agent;
  }
}
