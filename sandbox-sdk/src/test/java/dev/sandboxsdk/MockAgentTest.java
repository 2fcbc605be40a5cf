package dev.sandboxsdk;

import java.io.IOException;
import okhttp3.mockwebserver.MockWebServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/** Base of unit tests that script the agent with a MockWebServer and talk to it through a real client. */
abstract class MockAgentTest {
  final MockWebServer server = new MockWebServer();
  Sandbox sandbox;

  @BeforeEach
  void startMockAgent() throws IOException {
    server.start();
    sandbox = Fixtures.client(server);
  }

  @AfterEach
  void stopMockAgent() throws IOException {
    sandbox.close();
    server.shutdown();
  }
}
