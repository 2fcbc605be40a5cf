package dev.sandboxsdk.kubernetes.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandboxsdk.SandboxSpec;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import java.time.Duration;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The pod the provider asks for, without a cluster: the security policy is in it, the token is not. */
class PodSpecsTest {
  private static final PodSpecs.Placement WHERE = new PodSpecs.Placement("ns", null, "Never", null, 0.25);

  private static Pod pod(SandboxSpec spec) {
    return PodSpecs.pod("sandbox-abc", spec, WHERE, 1_700_000_000_000L);
  }

  @Test
  void namedSandboxesGetTheSameValidPodNameInEveryJvmAndNamesDifferingInCaseDoNotCollide() {
    String a = PodSpecs.podName("My_Project.v2");
    assertThat(a).isEqualTo(PodSpecs.podName("My_Project.v2")).startsWith("sandbox-my-project-v2-")
        .matches("[a-z0-9]([-a-z0-9]*[a-z0-9])?").hasSizeLessThanOrEqualTo(63);
    assertThat(PodSpecs.podName("my_project.v2")).isNotEqualTo(a);
    assertThat(PodSpecs.podName("x".repeat(63))).hasSizeLessThanOrEqualTo(63).matches("[a-z0-9-]+");
    assertThat(PodSpecs.podName("-")).isNotEqualTo(PodSpecs.podName("_")).matches("sandbox-[0-9a-f]{10}");
    assertThat(PodSpecs.podName(null)).matches("sandbox-[0-9a-f]{12}").isNotEqualTo(PodSpecs.podName(null));
  }

  @Test
  void theAgentRunsWithTheContainerProvidersPolicy() {
    Pod p = pod(SandboxSpec.builder().image("img:1").memoryBytes(300L << 20).cpus(1.5).build());
    Container c = p.getSpec().getContainers().get(0);

    assertThat(p.getSpec().getAutomountServiceAccountToken()).isFalse();
    assertThat(p.getSpec().getEnableServiceLinks()).isFalse();
    assertThat(p.getSpec().getRestartPolicy()).isEqualTo("Never");
    assertThat(p.getSpec().getSecurityContext().getSeccompProfile().getType()).isEqualTo("RuntimeDefault");
    assertThat(c.getSecurityContext().getAllowPrivilegeEscalation()).isFalse();
    assertThat(c.getSecurityContext().getPrivileged()).isFalse();
    assertThat(c.getSecurityContext().getReadOnlyRootFilesystem()).isTrue();
    assertThat(c.getSecurityContext().getCapabilities().getDrop()).containsExactly("ALL");
    assertThat(c.getSecurityContext().getCapabilities().getAdd()).containsExactly("SETUID", "SETGID", "SETPCAP", "KILL",
        "NET_ADMIN");
    assertThat(c.getResources().getRequests().get("memory")).isEqualTo(c.getResources().getLimits().get("memory"));
    assertThat(c.getResources().getRequests().get("cpu").toString()).as("a quarter of the limit").isEqualTo("375m");
    assertThat(c.getResources().getLimits().get("memory").getNumericalAmount().longValue()).isEqualTo(300L << 20);
    assertThat(c.getResources().getLimits().get("cpu").toString()).isEqualTo("1500m");
    assertThat(c.getReadinessProbe().getHttpGet().getPath()).isEqualTo("/api/ping");
    assertThat(c.getImagePullPolicy()).isEqualTo("Never");
    assertThat(c.getArgs()).contains("--command-user", "--token-file", "/var/run/sandbox-agent/token",
        "--idle-timeout-ms=600000");
    assertThat(c.getEnv().stream().collect(Collectors.toMap(e -> e.getName(), e -> e.getValue())))
        .isEqualTo(Map.of("SANDBOX_NETWORK", "off"));
  }

  @Test
  void anEgressPolicyMakesTheImageFirewallLetOnlyTheAgentOut() {
    Pod p = pod(SandboxSpec.builder().network(true)
        .egressPolicy(dev.sandboxsdk.EgressPolicy.allowList("pypi.org:443")).build());
    Container c = p.getSpec().getContainers().get(0);

    assertThat(c.getEnv().stream().collect(Collectors.toMap(e -> e.getName(), e -> e.getValue())))
        .as("egress whatever network says, and the policy as the agent reads it")
        .isEqualTo(Map.of("SANDBOX_NETWORK", "egress",
            "SANDBOX_EGRESS_POLICY", "{\"mode\":\"allow-list\",\"rules\":[\"allow pypi.org:443\"]}"));
    assertThat(c.getSecurityContext().getCapabilities().getAdd()).contains("NET_ADMIN");
    assertThat(c.getArgs()).as("the image's egress mode needs it").contains("--command-user");
    assertThat(pod(SandboxSpec.builder().network(true).build()).getSpec().getContainers().get(0)
        .getSecurityContext().getCapabilities().getAdd()).doesNotContain("NET_ADMIN");
  }

  @Test
  void writableVolumesAreEmptyDirsAndTheTokenIsRootsOnly() {
    Pod p = pod(SandboxSpec.builder().memoryBytes(512L << 20).build());
    Map<String, Volume> volumes = p.getSpec().getVolumes().stream().collect(Collectors.toMap(Volume::getName, v -> v));

    assertThat(volumes).containsOnlyKeys("workspace", "home", "tmp", "checkpoints", "token");
    assertThat(volumes.get("tmp").getEmptyDir().getMedium()).isEqualTo("Memory");
    assertThat(volumes.get("tmp").getEmptyDir().getSizeLimit().getNumericalAmount().longValue()).isEqualTo(128L << 20);
    assertThat(volumes.get("token").getSecret().getSecretName()).isEqualTo("sandbox-abc-token");
    assertThat(volumes.get("token").getSecret().getDefaultMode()).isEqualTo(0400);
    assertThat(p.getSpec().getContainers().get(0).getVolumeMounts()).anySatisfy(m -> {
      assertThat(m.getName()).isEqualTo("token");
      assertThat(m.getReadOnly()).isTrue();
    });
  }

  @Test
  void withNetworkThereIsNoFirewallCapabilityAndTheSpecsChoicesReachTheAgent() {
    Pod p = pod(SandboxSpec.builder().network(true).keepAlive().env("A", "1").label("team", "x y")
        .name("n1").agentArgument("--grace-ms=100").idleTimeout(Duration.ofSeconds(5)).keepAlive().build());
    Container c = p.getSpec().getContainers().get(0);

    assertThat(c.getSecurityContext().getCapabilities().getAdd()).doesNotContain("NET_ADMIN");
    assertThat(c.getArgs()).contains("--inherit-env=A", "--grace-ms=100").noneMatch(a -> a.startsWith("--idle-timeout-ms"));
    assertThat(p.getMetadata().getAnnotations()).containsEntry(PodSpecs.NAME_ANNOTATION, "n1")
        .containsEntry(PodSpecs.USER_ANNOTATION_PREFIX + "team", "x y").containsEntry(PodSpecs.IDLE_ANNOTATION, "none");
    assertThat(p.getMetadata().getLabels()).containsEntry(PodSpecs.SANDBOX_LABEL, "1");
  }

  @Test
  void theEgressPolicySelectsOnlyItsPodAndAllowsNothingOut() {
    Pod p = pod(SandboxSpec.defaults());
    p.getMetadata().setUid("uid-1");
    NetworkPolicy np = PodSpecs.denyEgress(p);

    assertThat(np.getSpec().getPodSelector().getMatchLabels()).isEqualTo(Map.of(PodSpecs.POD_LABEL, "sandbox-abc"));
    assertThat(np.getSpec().getPolicyTypes()).containsExactly("Egress");
    assertThat(np.getSpec().getEgress()).isEmpty();
    assertThat(np.getMetadata().getOwnerReferences()).singleElement().satisfies(o -> assertThat(o.getUid()).isEqualTo("uid-1"));
  }

  @Test
  void theTokenSecretHoldsTheTokenAndIsFoundByItsPod() {
    assertThat(PodSpecs.newToken()).hasSize(43).isNotEqualTo(PodSpecs.newToken());
    var s = PodSpecs.secret("sandbox-abc", "ns", "t0k", SandboxSpec.defaults());
    assertThat(s.getStringData()).isEqualTo(Map.of("token", "t0k"));
    assertThat(s.getMetadata().getLabels()).containsEntry(PodSpecs.POD_LABEL, "sandbox-abc");
  }

  @Test
  void egressSecretsGoInTheRootOnlySecretNeverInThePodSpec() {
    SandboxSpec spec = SandboxSpec.builder().egressPolicy(dev.sandboxsdk.EgressPolicy.allowList("api.example.com:443"))
        .egressSecret(dev.sandboxsdk.EgressSecret.of("API_KEY", "s3cr3t-value", "api.example.com")).build();
    var s = PodSpecs.secret("sandbox-abc", "ns", "t0k", spec);
    Pod p = pod(spec);

    assertThat(s.getStringData().get("egress-secrets"))
        .isEqualTo("[{\"name\":\"API_KEY\",\"value\":\"s3cr3t-value\",\"hosts\":[\"api.example.com\"]}]");
    assertThat(p.getSpec().getContainers().get(0).getArgs()).containsSubsequence("--egress-secrets",
        "/var/run/sandbox-agent/egress-secrets");
    assertThat(p.toString()).as("the pod spec, env included").doesNotContain("s3cr3t-value");
  }
}
