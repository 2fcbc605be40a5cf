package dev.sandboxsdk.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.sun.net.httpserver.HttpServer;
import dev.sandboxsdk.Command;
import dev.sandboxsdk.EgressEvent;
import dev.sandboxsdk.EgressPolicy;
import dev.sandboxsdk.EgressSecret;
import dev.sandboxsdk.ExecOptions;
import dev.sandboxsdk.ExecResult;
import dev.sandboxsdk.SandboxSpec;
import dev.sandboxsdk.contract.ItEgressAudit;
import dev.sandboxsdk.kubernetes.internal.ClusterAdmin;
import dev.sandboxsdk.kubernetes.internal.PodSpecs;
import dev.sandboxsdk.testkit.HelloUpstream;
import dev.sandboxsdk.testkit.ProxyClients;
import dev.sandboxsdk.testkit.SecretUpstream;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.InterfaceAddress;
import java.net.NetworkInterface;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Pod sandboxes with an egress policy on a real cluster: the image's firewall, installed in the
 * pod's network namespace, leaves commands nothing but the agent's proxy, which decides by the
 * policy. The destinations are servers of this JVM on every address of the node, reached from
 * the pod at the node's address on the pod network under test names the proxy resolves
 * ({@code --egress-test-hosts}) and an address rule that lets that address through.
 */
@ExtendWith(KubernetesCluster.class)
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class KubernetesEgressIT {
  private static final String README = "cloned through the egress proxy\n";
  /** The agent image with curl, python3 and node (run.sh loads it when podman has sandbox-agent:clients). */
  private static final ExecOptions QUICK = ExecOptions.builder().timeout(Duration.ofSeconds(60)).build();
  private static final List<String> paths = new CopyOnWriteArrayList<>();
  private static HttpServer upstream;
  private static KubernetesProvider provider;
  private static ClusterAdmin admin;
  private static String node;
  /** A pod with the network on and no policy: where a direct connection does get through. */
  private static KubernetesSandbox open;

  @BeforeAll
  static void start() throws IOException {
    upstream = HttpServer.create(new InetSocketAddress(0), 50);
    upstream.createContext("/", ex -> {
      paths.add(ex.getRequestURI().toString());
      byte[] body = "hello from the node".getBytes(StandardCharsets.UTF_8);
      ex.sendResponseHeaders(200, body.length);
      ex.getResponseBody().write(body);
      ex.close();
    });
    upstream.start();
    provider = KubernetesCluster.provider().build();
    admin = new ClusterAdmin(KubernetesCluster.KUBECONFIG, KubernetesCluster.NAMESPACE);
    open = provider.create(SandboxSpec.builder().image(KubernetesCluster.IMAGE).network(true).build());
    node = nodeAddressOnThePodNetwork(open);
  }

  /**
   * The node's address that pods reach: the address of this host in the subnet of {@code probe}'s
   * pod address. The test cluster's bridge network gives pods no default route (its IPAM has no
   * routes), only their subnet, in which the node is the bridge's address; the node's
   * {@code InternalIP} is outside it and unreachable from pods.
   */
  private static String nodeAddressOnThePodNetwork(KubernetesSandbox probe) throws IOException {
    InetAddress pod = InetAddress.getByName(admin.pod(probe.podName()).getStatus().getPodIP());
    for (NetworkInterface ni : Collections.list(NetworkInterface.getNetworkInterfaces())) {
      for (InterfaceAddress a : ni.getInterfaceAddresses()) {
        if (a.getAddress() instanceof Inet4Address && pod instanceof Inet4Address && !a.getAddress().equals(pod)
            && prefix(a.getAddress(), a.getNetworkPrefixLength()) == prefix(pod, a.getNetworkPrefixLength())) {
          return a.getAddress().getHostAddress();
        }
      }
    }
    throw new IllegalStateException("no address of this host is in the subnet of the pod address " + pod
        + ": the test runs on the cluster's node");
  }

  private static int prefix(InetAddress a, int bits) {
    return bits == 0 ? 0 : ByteBuffer.wrap(a.getAddress()).getInt() >>> (32 - bits);
  }

  @AfterAll
  static void stop() {
    if (upstream != null) {
      upstream.stop(0);
    }
    if (open != null) {
      open.close();
    }
    if (provider != null) {
      provider.close();
    }
    if (admin != null) {
      admin.close();
    }
  }

  @Test
  void commandsGoOutOnlyThroughTheProxyAndOnlyWhereThePolicyAllows() {
    int port = upstream.getAddress().getPort();
    String target = "upstream.test:" + port;
    EgressPolicy policy = EgressPolicy.of(EgressPolicy.Mode.ALLOW_LIST, List.of("deny denied.test",
        "allow " + target, "allow rebind.test", "allow metadata.test", "allow " + node + "/32:" + port));
    SandboxSpec spec = SandboxSpec.builder().image(KubernetesCluster.IMAGE).egressPolicy(policy)
        .agentArgument("--egress-test-hosts=upstream.test=" + node + ",denied.test=" + node
            + ",rebind.test=127.0.0.1,metadata.test=169.254.169.254")
        .build();
    try (KubernetesSandbox s = provider.create(spec)) {
      assertThePodHasTheFirewallsCapabilityOnlyForItsStartScript(s);

      assertThat(get(s, target, "/hello")).as("allowed, through the proxy")
          .startsWith("HTTP/1.1 200").endsWith("hello from the node");
      assertThat(paths).contains("/hello");
      assertThat(direct(s, node, port, "/direct")).as("the same address and port, not through the proxy")
          .isEqualTo("blocked");
      assertThat(direct(open, node, port, "/direct-from-open")).as("the same from a pod with the network on and no policy")
          .startsWith("HTTP/1.1 200");
      assertThat(get(s, "denied.test:" + port, "/denied")).startsWith("HTTP/1.1 403").contains("deny denied.test");
      assertThat(get(s, "169.254.169.254:80", "/latest/meta-data/")).startsWith("HTTP/1.1 403");
      assertThat(get(s, "metadata.test:80", "/latest/meta-data/")).as("an allowed name for the metadata address")
          .startsWith("HTTP/1.1 403");
      assertThat(get(s, "rebind.test:" + PodSpecs.AGENT_PORT, "/api/ping")).as("an allowed name for loopback")
          .startsWith("HTTP/1.1 403");
      assertThat(paths).doesNotContain("/direct", "/denied").contains("/direct-from-open");

      List<EgressEvent> events = ItEgressAudit.once(s, all -> List.of("upstream.test", "denied.test", "metadata.test",
          "rebind.test", "169.254.169.254").stream().allMatch(h -> all.stream().anyMatch(e -> e.host().equals(h))));
      // The name is allowed by its rule, its private address by the address rule, which the event names.
      assertThat(events).anySatisfy(e -> assertEvent(e, "upstream.test", true, "allow " + node + "/32:" + port));
      assertThat(events).filteredOn(e -> e.allowed() && e.host().equals("upstream.test"))
          .allSatisfy(e -> assertThat(e.address()).isEqualTo(node));
      assertThat(events).anySatisfy(e -> assertEvent(e, "denied.test", false, "deny denied.test"));
      assertThat(events).anySatisfy(e -> assertEvent(e, "metadata.test", false, "private-address"));
      assertThat(events).anySatisfy(e -> assertEvent(e, "rebind.test", false, "private-address"));
      assertThat(events).anySatisfy(e -> assertThat(e.host()).isEqualTo("169.254.169.254"))
          .filteredOn(e -> e.host().equals("169.254.169.254")).noneMatch(EgressEvent::allowed);

      s.egress().update(EgressPolicy.off());
      assertThat(get(s, target, "/after-off")).as("the new policy decides the next connection")
          .startsWith("HTTP/1.1 403").contains("mode-off");
      s.egress().update(policy);
      assertThat(s.egress().policy().rules()).isEqualTo(policy.rules());
      assertThat(get(s, target, "/again")).startsWith("HTTP/1.1 200");
      assertThat(paths).doesNotContain("/after-off").contains("/again");
      assertThat(ItEgressAudit.onceAny(s, e -> e.rule().equals("mode-off")))
          .anySatisfy(e -> assertEvent(e, "upstream.test", false, "mode-off"));
    }
  }

  @Test
  void gitClonesWithASecretThatNoCommandCanRead() {
    byte[] random = new byte[16];
    ThreadLocalRandom.current().nextBytes(random);
    String value = "ghp_k8s_" + HexFormat.of().formatHex(random);
    try (SecretUpstream git = SecretUpstream.start("git.test")) {
      git.addRepository("repo", value, Map.of("README", README));
      String remote = "https://git.test:" + git.port() + "/repo.git";
      SandboxSpec spec = SandboxSpec.builder().image(KubernetesCluster.IMAGE)
          .egressPolicy(EgressPolicy.allowList("git.test:" + git.port(), node + "/32:" + git.port()))
          .egressSecret(EgressSecret.of("GIT_TOKEN", value, "git.test").withHeader("Authorization"))
          .agentArgument("--egress-test-hosts=git.test=" + node)
          .agentArgument("--egress-test-trust=" + git.pem())
          .build();
      try (KubernetesSandbox s = provider.create(spec)) {
        assertThat(s.exec("printf %s \"$GIT_TOKEN\"").stdout()).as("what commands see")
            .matches("sandbox-secret-[0-9a-f]{32}");
        ExecResult anonymous = s.exec(bash("GIT_TERMINAL_PROMPT=0 git clone -q " + remote + " anonymous"), QUICK);
        assertThat(anonymous.exitCode()).as("the upstream wants the token: %s", anonymous.stderr()).isNotZero();

        ExecResult clone = s.exec(bash("GIT_TERMINAL_PROMPT=0 git -c http.extraHeader=\"Authorization: Bearer"
            + " $GIT_TOKEN\" clone -q " + remote + " repo && cat repo/README"), QUICK);
        assertThat(clone.stdout()).as("%s", clone.stderr()).isEqualTo(README);
        ExecResult basic = s.exec(bash("GIT_TERMINAL_PROMPT=0 git clone -q https://x-access-token:$GIT_TOKEN@git.test:"
            + git.port() + "/repo.git basic && cat basic/README"), QUICK);
        assertThat(basic.stdout()).as("the placeholder as the password in the URL: %s", basic.stderr()).isEqualTo(README);
        String basicValue = "Basic " + Base64.getEncoder().encodeToString(("x-access-token:" + value)
            .getBytes(StandardCharsets.US_ASCII));
        List<String> sent = git.received().stream().map(r -> String.valueOf(r.header("Authorization"))).toList();
        assertThat(sent).as("what the upstream got").contains("null", "Bearer " + value, basicValue)
            .allMatch(a -> a.equals("null") || a.equals("Bearer " + value) || a.equals(basicValue));
        assertThat(ItEgressAudit.onceAny(s, e -> e.host().equals("git.test") && e.allowed()))
            .filteredOn(e -> e.host().equals("git.test") && e.allowed())
            .isNotEmpty().anySatisfy(e -> assertThat(e.secrets()).containsExactly("GIT_TOKEN"));

        assertTheValueIsNowhereACommandCanRead(s, "GIT_TOKEN", value);
      }
    }
  }

  @Test
  void curlPythonAndNodeSendThePlaceholderAndTheUpstreamReceivesTheValue() {
    assumeTrue(KubernetesCluster.CLIENTS_IMAGE != null,
        "no -Dsandbox.k8s.clientsImage: the clients image is not in the cluster");
    byte[] random = new byte[16];
    ThreadLocalRandom.current().nextBytes(random);
    String value = "sk-k8s-" + HexFormat.of().formatHex(random);
    try (SecretUpstream api = SecretUpstream.start("secret.test")) {
      SandboxSpec spec = SandboxSpec.builder().image(KubernetesCluster.CLIENTS_IMAGE)
          .egressPolicy(EgressPolicy.allowList("secret.test:" + api.port(), node + "/32:" + api.port()))
          .egressSecret(EgressSecret.of("API_KEY", value, "secret.test").withHeader("X-Api-Key"))
          .agentArgument("--egress-test-hosts=secret.test=" + node)
          .agentArgument("--egress-test-trust=" + api.pem())
          .build();
      try (KubernetesSandbox s = provider.create(spec)) {
        for (String client : List.of("curl", "python3", "node")) {
          String url = "https://secret.test:" + api.port() + "/" + client;
          String script = switch (client) {
            case "curl" -> ProxyClients.curl(url, "X-Api-Key", "API_KEY");
            case "python3" -> ProxyClients.python(url, "X-Api-Key", "API_KEY");
            default -> ProxyClients.node(url, "X-Api-Key", "API_KEY");
          };
          ExecResult r = s.exec(bash(script), QUICK);
          assertThat(r.stdout()).as("%s: %s", client, r.stderr()).isEqualTo("200 " + HelloUpstream.BODY);
          assertThat(api.last().target()).isEqualTo("/" + client);
          assertThat(api.last().header("X-Api-Key")).as(client).isEqualTo(value);
        }
        assertThat(ItEgressAudit.once(s, all -> all.stream().filter(e -> e.host().equals("secret.test") && e.allowed())
            .count() >= 3)).filteredOn(e -> e.host().equals("secret.test") && e.allowed())
            .hasSizeGreaterThanOrEqualTo(3).allSatisfy(e -> assertThat(e.secrets()).containsExactly("API_KEY"));
        assertTheValueIsNowhereACommandCanRead(s, "API_KEY", value);
      }
    }
  }

  /**
   * The pod has NET_ADMIN (the start script installs the firewall with it) but the agent's JVM
   * has only its four capabilities and commands none; no NetworkPolicy, since the proxy connects out.
   */
  private static void assertThePodHasTheFirewallsCapabilityOnlyForItsStartScript(KubernetesSandbox s) {
    Pod pod = admin.pod(s.podName());
    Container agent = pod.getSpec().getContainers().get(0);
    assertThat(agent.getSecurityContext().getCapabilities().getAdd()).contains("NET_ADMIN");
    assertThat(agent.getEnv()).extracting(EnvVar::getName).contains("SANDBOX_NETWORK", "SANDBOX_EGRESS_POLICY");
    assertThat(agent.getEnv()).filteredOn(v -> v.getName().equals("SANDBOX_NETWORK")).singleElement()
        .extracting(EnvVar::getValue).isEqualTo("egress");
    assertThat(admin.policyExists(s.podName())).as("a NetworkPolicy").isFalse();
    ExecResult caps = s.exec(bash("grep ^CapBnd /proc/$(pgrep -x java)/status; grep ^CapBnd /proc/self/status;"
        + " nft list ruleset >/dev/null 2>&1 && echo nft-listed; id -u"), QUICK);
    assertThat(caps.stdout().lines().toList()).as("the agent's, the command's, its uid: %s", caps)
        .containsExactly("CapBnd:\t00000000000001e0", "CapBnd:\t0000000000000000", "1000");
  }

  /**
   * Neither the pod spec, nor the command's environment, nor any other process's environment or
   * command line it can read, nor any file it can read holds the value; the mounted Secret is
   * root's alone. The value reaches the command base64-encoded and is decoded only into a pipe.
   */
  private static void assertTheValueIsNowhereACommandCanRead(KubernetesSandbox s, String name, String value) {
    Pod pod = admin.pod(s.podName());
    assertThat(pod.toString()).doesNotContain(value);
    assertThat(pod.getSpec().getContainers().get(0).getArgs())
        .contains("--egress-secrets", "/var/run/sandbox-agent/" + PodSpecs.EGRESS_SECRETS_KEY);
    ExecResult mounted = s.exec(bash("cat /var/run/sandbox-agent/" + PodSpecs.EGRESS_SECRETS_KEY), QUICK);
    assertThat(mounted.exitCode()).isNotZero();
    assertThat(mounted.stderr()).contains("Permission denied");
    assertThat(mounted.stdout()).isEmpty();

    String b64 = Base64.getEncoder().encodeToString(value.getBytes(StandardCharsets.US_ASCII));
    // The control file shows the search finds the value where it is; then it goes.
    ExecResult grep = s.exec(bash("v() { printf %s \"$B64\" | base64 -d; };"
        + " v > /tmp/control; grep -lsF -f <(v) /proc/[0-9]*/environ /proc/[0-9]*/cmdline;"
        + " grep -rlsF -f <(v) / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev; rm /tmp/control; echo done"),
        ExecOptions.builder().env("B64", b64).timeout(Duration.ofSeconds(120)).build());
    assertThat(grep.stdout()).as("%s", grep.stderr()).isEqualTo("/tmp/control\ndone\n");
    assertThat(s.exec("env").stdout()).contains(name + "=sandbox-secret-").doesNotContain(value);
  }

  private static void assertEvent(EgressEvent e, String host, boolean allowed, String rule) {
    assertThat(e.host()).isEqualTo(host);
    assertThat(e.allowed()).isEqualTo(allowed);
    assertThat(e.rule()).isEqualTo(rule);
  }

  /** A bash command line (Command.shell's sh is dash, which has no /dev/tcp or process substitution). */
  private static Command bash(String script) {
    return Command.of("bash", "-c", script);
  }

  /** A GET straight to {@code address:port}, ignoring the proxy: the answer, or "blocked" after 5 s. */
  private static String direct(KubernetesSandbox s, String address, int port, String path) {
    return s.exec(bash("timeout 5 bash -c 'exec 3<>/dev/tcp/" + address + "/" + port
        + " && printf \"GET " + path + " HTTP/1.0\\r\\n\\r\\n\" >&3 && cat <&3' 2>/dev/null || echo blocked"), QUICK)
        .stdout().strip();
  }

  /** A GET through the proxy the command's environment names, with bash alone (the image has no curl). */
  private static String get(KubernetesSandbox s, String hostPort, String path) {
    ExecResult r = s.exec(bash("p=${HTTP_PROXY##*:}; exec 3<>/dev/tcp/127.0.0.1/$p"
        + " && printf 'GET http://" + hostPort + path + " HTTP/1.1\\r\\nHost: " + hostPort
        + "\\r\\nConnection: close\\r\\n\\r\\n' >&3 && timeout 10 cat <&3"), QUICK);
    assertThat(r.stderr()).as("the command's errors").isEmpty();
    return r.stdout();
  }
}
