package dev.sandboxsdk.agent;

import org.junit.jupiter.api.extension.RegisterExtension;

/** Sessions under {@code --isolation bwrap}: the state lives in the sandbox's own /tmp. */
class SessionIsolatedIT extends SessionSuite {
  @RegisterExtension static final TestAgent agent = new TestAgent(b -> b.graceMs(1000).isolation("bwrap"));

  @Override
  TestAgent agent() {
    return agent;
  }
}
