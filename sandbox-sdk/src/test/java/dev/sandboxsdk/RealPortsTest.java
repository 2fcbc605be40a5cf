package dev.sandboxsdk;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.URI;
import java.time.Instant;
import java.util.List;
import okhttp3.mockwebserver.RecordedRequest;
import org.junit.jupiter.api.Test;

class RealPortsTest extends MockAgentTest {
  @Test
  void exposePortPostsThePortAndNameAndBuildsThePreviewUrlOnTheClientsOwnAgentAddress() throws Exception {
    server.enqueue(Fixtures.json(Fixtures.read("port-expose-response.json")));

    ExposedPort exposed = sandbox.ports().expose(34953, "web");

    RecordedRequest request = server.takeRequest();
    assertThat(request.getMethod()).isEqualTo("POST");
    assertThat(request.getPath()).isEqualTo("/api/expose-port");
    assertThat(request.getHeader("Authorization")).isEqualTo("Bearer t");
    assertThat(Fixtures.MAPPER.readTree(request.getBody().readUtf8()))
        .isEqualTo(Fixtures.MAPPER.readTree("{\"port\":34953,\"name\":\"web\"}"));
    // The fixture's agent was at 127.0.0.1:42911; this client reaches it at the mock server's address.
    String base = server.url("/proxy/34953/").toString();
    assertThat(exposed.url()).isEqualTo(URI.create(base + "?sandbox-preview-token=PVpLd-O5ZC-skzGncYxhIV3pSHwpDmdALnbNRFNvKoY"));
    assertThat(exposed.baseUrl()).isEqualTo(URI.create(base));
    assertThat(exposed.port()).isEqualTo(34953);
    assertThat(exposed.name()).isEqualTo("web");
    assertThat(exposed.exposedAt()).isEqualTo(Instant.parse("2026-11-25T07:09:53.720117767Z"));
    assertThat(exposed.toString()).doesNotContain("PVpLd");
  }

  @Test
  void exposedPortsListsTheFixturesPorts() throws Exception {
    server.enqueue(Fixtures.json(Fixtures.read("port-list-response.json")));

    List<ExposedPort> ports = sandbox.ports().exposed();

    assertThat(server.takeRequest().getPath()).isEqualTo("/api/exposed-ports");
    assertThat(ports).extracting(ExposedPort::port).containsExactly(34953);
    assertThat(ports.get(0).url().getQuery()).startsWith("sandbox-preview-token=");
  }

  @Test
  void unexposePortDeletesAndIsIdempotent() throws Exception {
    server.enqueue(Fixtures.json(Fixtures.read("port-unexpose-response.json")));
    server.enqueue(Fixtures.json(404, Fixtures.read("proxy-error-response.json")));

    sandbox.ports().unexpose(34953);
    assertThatCode(() -> sandbox.ports().unexpose(34953)).doesNotThrowAnyException();

    RecordedRequest request = server.takeRequest();
    assertThat(request.getMethod()).isEqualTo("DELETE");
    assertThat(request.getPath()).isEqualTo("/api/exposed-ports/34953");
  }

  @Test
  void exposingAnExposedPortIsAnInvalidRequestWithTheAgentsCode() {
    server.enqueue(Fixtures.json(409, Fixtures.read("port-expose-error-response.json")));

    assertThatThrownBy(() -> sandbox.ports().expose(34953)).isInstanceOf(SandboxInvalidRequestException.class)
        .hasMessageContaining("PORT_ALREADY_EXPOSED")
        .satisfies(e -> assertThat(((SandboxException) e).context()).containsEntry("portName", "web"));
  }

  @Test
  void portsOutOfRangeAreRefusedBeforeAnyRequest() {
    for (int bad : new int[] {0, -1, 65536}) {
      assertThatThrownBy(() -> sandbox.ports().expose(bad)).isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> sandbox.ports().unexpose(bad)).isInstanceOf(IllegalArgumentException.class);
    }
    assertThatThrownBy(() -> sandbox.ports().expose(80, "")).isInstanceOf(IllegalArgumentException.class);
    assertThat(server.getRequestCount()).isZero();
  }

  @Test
  void waitOptionsTakeAVisibleAsciiPathAndAStatusRange() {
    assertThat(PortWaitOptions.http("health?x=1").path()).isEqualTo("/health?x=1");
    assertThat(PortWaitOptions.tcp().path()).isNull();
    for (String bad : new String[] {"/a b", "/\u00e9", "/tab\t", "/del\u007f", "/" + "p".repeat(2048)}) {
      assertThatThrownBy(() -> PortWaitOptions.http(bad)).as(bad).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("printable ASCII");
    }
    assertThatThrownBy(() -> PortWaitOptions.builder().status(400, 399).build())
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new PortWaitOptions(PortWaitOptions.Mode.TCP, "/", 200, 399, null, null))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void aClientWithAPathPrefixKeepsItInThePreviewUrl() throws Exception {
    server.enqueue(Fixtures.json(Fixtures.read("port-expose-response.json")));
    try (Sandbox prefixed = Sandbox.connect(server.url("/sandboxes/42/").uri(), "t")) {
      ExposedPort exposed = prefixed.ports().expose(34953);
      assertThat(server.takeRequest().getPath()).isEqualTo("/sandboxes/42/api/expose-port");
      assertThat(exposed.baseUrl()).isEqualTo(server.url("/sandboxes/42/proxy/34953/").uri());
    }
  }
}
