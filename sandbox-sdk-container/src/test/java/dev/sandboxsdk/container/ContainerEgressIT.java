package dev.sandboxsdk.container;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.sandboxsdk.Command;
import dev.sandboxsdk.EgressEvent;
import dev.sandboxsdk.EgressPolicy;
import dev.sandboxsdk.EgressSecret;
import dev.sandboxsdk.ExecOptions;
import dev.sandboxsdk.ExecResult;
import dev.sandboxsdk.contract.ItEgressAudit;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A container sandbox with an egress policy against a real engine: the image's firewall leaves its
 * commands nothing but the agent's proxy, which decides by the policy. The destination is an HTTP
 * server of this JVM on every address of the host, reached from the container at its network's
 * gateway (an address rule lets that private address through the proxy).
 */
@ExtendWith(ContainerEngine.class)
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ContainerEgressIT {
  private static HttpServer upstream;
  private static final List<String> paths = new CopyOnWriteArrayList<>();

  @BeforeAll
  static void startUpstream() throws IOException {
    upstream = HttpServer.create(new InetSocketAddress(0), 50);
    upstream.createContext("/", ex -> {
      paths.add(ex.getRequestURI().toString());
      byte[] body = "hello from the host".getBytes(StandardCharsets.UTF_8);
      ex.sendResponseHeaders(200, body.length);
      ex.getResponseBody().write(body);
      ex.close();
    });
    upstream.start();
  }

  @AfterAll
  static void stopUpstream() {
    upstream.stop(0);
  }

  @Test
  void commandsGoOutOnlyThroughTheProxyAndOnlyWhereThePolicyAllows() {
    int port = upstream.getAddress().getPort();
    // network(true): with a policy the proxy is the only way out all the same
    try (ContainerSandbox s = ContainerSandbox.builder().image(ContainerEngine.IMAGE).network(true)
        .egressPolicy(EgressPolicy.allowList("pypi.org:443")).start()) {
      String gateway = gateway(s);
      String target = gateway + ":" + port;
      assertThat(get(s, target, "/before")).as("not allowed yet").startsWith("HTTP/1.1 403");

      s.egress().update(EgressPolicy.allowList(target));
      assertThat(get(s, target, "/hello")).startsWith("HTTP/1.1 200").endsWith("hello from the host");
      s.exec("git ls-remote http://" + target + "/repo.git"); // fails (no repository there); what reached the host counts
      assertThat(paths).as("what reached the host").contains("/hello")
          .anyMatch(p -> p.startsWith("/repo.git/info/refs")).noneMatch(p -> p.equals("/before"));
      assertThat(s.exec(Command.of("bash", "-c", "timeout 5 bash -c 'exec 3<>/dev/tcp/" + gateway + "/" + port
          + "' 2>/dev/null && echo open || echo blocked"), ExecOptions.defaults()).stdout()).as("the same destination, not through the proxy")
          .isEqualTo("blocked\n");
      assertThat(get(s, gateway + ":" + (port == 65535 ? port - 1 : port + 1), "/other-port")).startsWith("HTTP/1.1 403");
      assertThat(get(s, "169.254.169.254:80", "/latest/meta-data/")).startsWith("HTTP/1.1 403");
      assertThat(s.exec("id -u").stdout()).as("commands are not root, whom the firewall lets out").isEqualTo("1000\n");

      List<EgressEvent> events = ItEgressAudit.once(s, all -> all.stream().anyMatch(e -> e.allowed()
          && gateway.equals(e.address()) && e.port() == port) && all.stream().anyMatch(e -> !e.allowed()
          && e.host().equals("169.254.169.254")));
      assertThat(events).anyMatch(e -> e.allowed() && e.address() != null && e.address().equals(gateway)
          && e.port() == port);
      assertThat(events).anyMatch(e -> !e.allowed() && e.host().equals("169.254.169.254"));

      s.egress().update(EgressPolicy.off());
      assertThat(get(s, target, "/after-off")).as("a new policy decides the next connection").startsWith("HTTP/1.1 403");
      assertThat(paths).doesNotContain("/after-off");
    }
  }

  @Test
  void aSecretStaysOutsideTheContainerAndIsNeverSentToAnUnboundHost() {
    String value = "ctr-secret-" + Long.toHexString(System.nanoTime());
    int port = upstream.getAddress().getPort();
    try (ContainerSandbox s = ContainerSandbox.builder().image(ContainerEngine.IMAGE)
        .egressPolicy(EgressPolicy.allowList("api.example.com:443"))
        .egressSecret(EgressSecret.of("API_KEY", value, "api.example.com")).start()) {
      String gateway = gateway(s);
      s.egress().update(EgressPolicy.allowList("api.example.com:443", gateway + ":" + port));

      String placeholder = s.exec("printf %s \"$API_KEY\"").stdout();
      assertThat(placeholder).as("what commands see").startsWith("sandbox-secret-").isNotEqualTo(value);
      assertThat(s.exec(Command.of("bash", "-c", "grep -rlsF -- '" + value + "' /proc/self/environ /workspace /tmp"
          + " /home/sandbox /proc/1/environ /proc/1/cmdline; cat /proc/1/environ >/dev/null 2>&1 || echo no-access"),
          ExecOptions.defaults()).stdout()).as("no file or environment a command can read holds the value")
          .isEqualTo("no-access\n");
      assertThat(s.exec("printf %s \"$SSL_CERT_FILE\"").stdout()).as("the CA bundle commands trust").isNotEmpty();

      String answer = getWithHeader(s, gateway + ":" + port, "/leak", "X-Api-Key: " + placeholder);
      assertThat(answer).as("a placeholder to a host it is not bound to").startsWith("HTTP/1.1 403");
      assertThat(paths).doesNotContain("/leak");
      assertThat(ItEgressAudit.onceAny(s, e -> !e.allowed() && e.secrets().contains("API_KEY")))
          .anyMatch(e -> !e.allowed() && e.secrets().contains("API_KEY"));
    }
  }

  /** The container's default gateway, from /proc/net/route (hex, little-endian). */
  private static String gateway(ContainerSandbox s) {
    String hex = s.exec("awk '$2 == \"00000000\" { print $3; exit }' /proc/net/route").stdout().trim();
    assertThat(hex).as("a default route").matches("[0-9A-Fa-f]{8}");
    long v = Long.parseLong(hex, 16);
    return (v & 0xff) + "." + (v >> 8 & 0xff) + "." + (v >> 16 & 0xff) + "." + (v >> 24 & 0xff);
  }

  /** A GET through the proxy the command's environment names, with bash alone (the image has no curl). */
  private static String get(ContainerSandbox s, String hostPort, String path) {
    return getWithHeader(s, hostPort, path, "X-Test: 1");
  }

  private static String getWithHeader(ContainerSandbox s, String hostPort, String path, String header) {
    ExecResult r = s.exec(Command.of("bash", "-c", "p=${HTTP_PROXY##*:}; exec 3<>/dev/tcp/127.0.0.1/$p"
        + " && printf 'GET http://" + hostPort + path + " HTTP/1.1\\r\\nHost: " + hostPort + "\\r\\n" + header
        + "\\r\\n\\r\\n' >&3"
        + " && timeout 10 cat <&3"), ExecOptions.defaults());
    assertThat(r.stderr()).as("the command's errors").isEmpty();
    return r.stdout();
  }
}
