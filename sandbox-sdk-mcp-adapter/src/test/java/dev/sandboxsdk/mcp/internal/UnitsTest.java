package dev.sandboxsdk.mcp.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.node.IntNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.SandboxSpec;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The small pieces: option parsing, schema checks, redaction and output caps. */
class UnitsTest {
  @TempDir
  Path tmp;

  // ---- AdapterConfig

  @Test
  void defaultsAreStdioWithLocalSandboxes() {
    AdapterConfig c = AdapterConfig.parse(new String[0], Map.of());
    assertThat(c.http()).isFalse();
    assertThat(c.agentUrl()).isNull();
    assertThat(c.maxOutputBytes()).isEqualTo(16_384);
  }

  @Test
  void httpNeedsATokenFromFileOrEnvironment() throws Exception {
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--http"}, Map.of()))
        .isInstanceOf(AdapterConfig.UsageException.class).hasMessageContaining("--token-file");
    assertThat(AdapterConfig.parse(new String[] {"--http"}, Map.of("SANDBOX_MCP_TOKEN", "t0k3n")).httpToken())
        .isEqualTo("t0k3n");
    Path f = tmp.resolve("token");
    Files.writeString(f, "from-file\n");
    AdapterConfig c = AdapterConfig.parse(new String[] {"--http", "--token-file", f.toString(), "--port", "0"}, Map.of());
    assertThat(c.httpToken()).isEqualTo("from-file");
    assertThat(c.toString()).doesNotContain("from-file");
    Files.writeString(f, "\n");
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--http", "--token-file", f.toString()}, Map.of()))
        .hasMessageContaining("is empty");
  }

  @Test
  void aTokenIsTakenExactlyOnlyOneTrailingNewlineOfItsFileIsDropped() throws Exception {
    Path f = tmp.resolve("token2");
    Files.writeString(f, "from-file\r\n");
    assertThat(AdapterConfig.parse(new String[] {"--http", "--token-file", f.toString()}, Map.of()).httpToken())
        .isEqualTo("from-file");
    for (String bad : new String[] {"  \n", "tok en\n", "token \n", "token\t", "token\n\n", "tok\u0000\n"}) {
      Files.writeString(f, bad);
      assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--http", "--token-file", f.toString()}, Map.of()))
          .as("%s", bad.chars().boxed().toList()).hasMessageContaining("visible ASCII");
    }
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--http"}, Map.of("SANDBOX_MCP_TOKEN", "t0k3n ")))
        .hasMessageContaining("visible ASCII");
  }

  @Test
  void passEnvNeverPassesTheAdaptersOwnTokens() {
    Map<String, String> env = Map.of("SANDBOX_MCP_TOKEN", "t0k3n-value", "SANDBOX_AGENT_TOKEN", "a9ent-value");
    for (String name : env.keySet()) {
      assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--http", "--pass-env", name}, env))
          .hasMessageContaining("never passed");
    }
  }

  @Test
  void noAuthIsOnlyForLoopback() {
    assertThat(AdapterConfig.parse(new String[] {"--http", "--no-auth"}, Map.of()).noAuth()).isTrue();
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--http", "--no-auth", "--bind", "0.0.0.0"}, Map.of()))
        .hasMessageContaining("loopback");
  }

  @Test
  void optionMistakesSayWhatIsWrong() {
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--bogus"}, Map.of())).hasMessageContaining("--bogus");
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--http", "--no-auth", "--port", "x"}, Map.of()))
        .hasMessageContaining("--port takes a number");
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--http", "--no-auth", "--port"}, Map.of()))
        .hasMessageContaining("--port needs a value");
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--stdio", "--http"}, Map.of()))
        .hasMessageContaining("choose one");
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--token-file", "x"}, Map.of()))
        .hasMessageContaining("--http only");
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--agent-url", "ftp://x"}, Map.of()))
        .hasMessageContaining("http(s) URL");
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--agent-url", "http://agent:3000"}, Map.of()))
        .hasMessageContaining("agent's token");
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--pass-env", "NOT_SET_ANYWHERE"}, Map.of()))
        .hasMessageContaining("not set");
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--pass-env", "bad-name"}, Map.of()))
        .hasMessageContaining("variable name");
  }

  @Test
  void passEnvTakesTheValueFromTheEnvironmentAndNeverPrintsIt() {
    AdapterConfig c = AdapterConfig.parse(new String[] {"--pass-env", "API_KEY"}, Map.of("API_KEY", "sk-very-secret"));
    assertThat(c.passEnv()).containsEntry("API_KEY", "sk-very-secret");
    assertThat(c.toString()).contains("API_KEY").doesNotContain("sk-very-secret");
    AdapterConfig several = AdapterConfig.parse(new String[] {"--pass-env", "A_KEY", "B_KEY", "--pass-env", "C_KEY"},
        Map.of("A_KEY", "aaaa", "B_KEY", "bbbb", "C_KEY", "cccc"));
    assertThat(several.passEnv()).containsOnlyKeys("A_KEY", "B_KEY", "C_KEY");
  }

  // ---- AdapterConfig: --provider container and its options

  @Test
  void theProviderIsLocalUnlessContainerIsChosen() {
    AdapterConfig local = AdapterConfig.parse(new String[0], Map.of());
    assertThat(local.mode()).isEqualTo(SandboxMode.LOCAL);
    assertThat(local.containerSpec()).isNull();
    assertThat(local.passEnvPerCall()).isTrue();
    assertThat(AdapterConfig.parse(new String[] {"--provider", "local"}, Map.of()).mode()).isEqualTo(SandboxMode.LOCAL);

    AdapterConfig c = AdapterConfig.parse(new String[] {"--provider", "container"}, Map.of());
    assertThat(c.mode()).isEqualTo(SandboxMode.CONTAINER);
    assertThat(c.passEnvPerCall()).as("secrets go into the container's environment").isFalse();
    SandboxSpec spec = c.containerSpec();
    assertThat(spec.image()).isEqualTo("sandbox-agent");
    assertThat(spec.memoryBytes()).isEqualTo(1L << 30);
    assertThat(spec.cpus()).isEqualTo(1.0);
    assertThat(spec.pidsLimit()).isEqualTo(512);
    assertThat(spec.network()).isFalse();
    assertThat(c.toString()).contains("containers of sandbox-agent", "network off");
  }

  @Test
  void containerOptionsSetTheSpecOfEverySandbox() {
    AdapterConfig c = AdapterConfig.parse(new String[] {"--provider", "container", "--image", "registry.example/agent:1",
        "--memory", "512m", "--cpus", "1.5", "--pids-limit", "256", "--network", "on"}, Map.of());
    SandboxSpec spec = c.containerSpec();
    assertThat(spec.image()).isEqualTo("registry.example/agent:1");
    assertThat(spec.memoryBytes()).isEqualTo(512L << 20);
    assertThat(spec.cpus()).isEqualTo(1.5);
    assertThat(spec.pidsLimit()).isEqualTo(256);
    assertThat(spec.network()).isTrue();
    assertThat(spec.env()).isEmpty();
    assertThat(AdapterConfig.parse(new String[] {"--network", "off", "--provider", "container"}, Map.of())
        .containerSpec().network()).as("options may come before --provider").isFalse();
  }

  @Test
  void memoryTakesBytesOrKMGSuffixesWithinItsRange() {
    assertThat(AdapterConfig.memoryValue("--memory", "67108864")).isEqualTo(64L << 20);
    assertThat(AdapterConfig.memoryValue("--memory", "65536k")).isEqualTo(64L << 20);
    assertThat(AdapterConfig.memoryValue("--memory", "64M")).isEqualTo(64L << 20);
    assertThat(AdapterConfig.memoryValue("--memory", "2g")).isEqualTo(2L << 30);
    assertThat(AdapterConfig.memoryValue("--memory", "1024G")).isEqualTo(1L << 40);
    for (String tooSmallOrLarge : new String[] {"63m", "67108863", "1025g", "9999999999999999999g", "0"}) {
      assertThatThrownBy(() -> AdapterConfig.memoryValue("--memory", tooSmallOrLarge)).as(tooSmallOrLarge)
          .isInstanceOf(AdapterConfig.UsageException.class)
          .hasMessage("--memory must be between 64m and 1024g, got " + tooSmallOrLarge);
    }
    for (String notASize : new String[] {"512mb", "1.5g", "-1", "12x", "m", " 64m", "99999999999999999999"}) {
      assertThatThrownBy(() -> AdapterConfig.memoryValue("--memory", notASize)).as(notASize)
          .isInstanceOf(AdapterConfig.UsageException.class)
          .hasMessageContaining("--memory takes a size in bytes, optionally with k, m or g (e.g. 512m)");
    }
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--provider", "container", "--memory"}, Map.of()))
        .hasMessage("--memory needs a value");
  }

  @Test
  void cpusAndPidsLimitAndNetworkAreChecked() {
    assertThat(AdapterConfig.cpusValue("--cpus", "0.01")).isEqualTo(0.01);
    assertThat(AdapterConfig.cpusValue("--cpus", "2")).isEqualTo(2.0);
    for (String bad : new String[] {"0", "0.001", "1025", "0.009"}) {
      assertThatThrownBy(() -> AdapterConfig.cpusValue("--cpus", bad)).as(bad)
          .hasMessage("--cpus must be between 0.01 and 1024, got " + bad);
    }
    for (String bad : new String[] {"1e3", "NaN", "Infinity", "-1", ".5", "1,5", "abc"}) {
      assertThatThrownBy(() -> AdapterConfig.cpusValue("--cpus", bad)).as(bad)
          .hasMessageContaining("--cpus takes a decimal number of CPUs");
    }
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--provider", "container", "--pids-limit", "63"}, Map.of()))
        .hasMessage("--pids-limit must be between 64 and 4194304, got 63");
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--provider", "container", "--pids-limit", "many"},
        Map.of())).hasMessage("--pids-limit takes a number, got 'many'");
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--provider", "container", "--network", "yes"}, Map.of()))
        .hasMessage("--network must be on or off, got 'yes'");
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--provider", "container", "--image", "a b"}, Map.of()))
        .hasMessageStartingWith("--image: not an image name");
  }

  @Test
  void containerOptionsWithoutTheContainerProviderAreAMistake() {
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--image", "sandbox-agent"}, Map.of()))
        .isInstanceOf(AdapterConfig.UsageException.class)
        .hasMessage("--image applies to --provider container or kubernetes only");
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--provider", "local", "--memory", "1g", "--cpus", "2",
        "--memory", "2g"}, Map.of()))
        .hasMessage("--memory, --cpus apply to --provider container or kubernetes only");
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--pids-limit", "100", "--network", "on"}, Map.of()))
        .hasMessage("--pids-limit applies to --provider container only");
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--provider", "docker"}, Map.of()))
        .hasMessage("--provider must be local, container or kubernetes, got 'docker'");
  }

  @Test
  void localSandboxesAreIsolatedByDefaultAndTakeIsolationAndNetwork() {
    AdapterConfig defaults = AdapterConfig.parse(new String[0], Map.of());
    assertThat(defaults.localIsolation()).isEqualTo(dev.sandboxsdk.local.Isolation.ISOLATED);
    assertThat(AdapterConfig.parse(new String[] {"--network", "on"}, Map.of()).localNetwork()).isTrue();
    assertThat(defaults.localNetwork()).isFalse();
    AdapterConfig required = AdapterConfig.parse(new String[] {"--isolation", "required", "--network", "on"}, Map.of());
    assertThat(required.localIsolation()).isEqualTo(dev.sandboxsdk.local.Isolation.REQUIRED);
    assertThat(required.localNetwork()).isTrue();
    assertThat(AdapterConfig.parse(new String[] {"--provider", "local", "--isolation", "none"}, Map.of()).localIsolation())
        .isEqualTo(dev.sandboxsdk.local.Isolation.NONE);
    assertThat(AdapterConfig.parse(new String[] {"--provider", "container", "--network", "on"}, Map.of())
        .containerSpec().network()).isTrue();
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--isolation", "bwrap"}, Map.of()))
        .hasMessage("--isolation must be isolated, none or required, got 'bwrap'");
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--isolation", "none", "--network", "off"}, Map.of()))
        .hasMessageStartingWith("--network applies to isolated local sandboxes");
    assertThat(AdapterConfig.parse(new String[] {"--network", "off"}, Map.of()).localNetwork()).isFalse();
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--provider", "container", "--isolation", "none"}, Map.of()))
        .hasMessageStartingWith("--isolation applies to --provider local only");
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--agent-url", "http://agent:3000", "--network", "on"},
        Map.of("SANDBOX_AGENT_TOKEN", "t")))
        .hasMessageStartingWith("--network applies to --provider local, container or kubernetes");
  }

  @Test
  void agentUrlIsItsOwnModeAndConflictsWithAProvider() {
    Map<String, String> env = Map.of("SANDBOX_AGENT_TOKEN", "agent-token");
    assertThat(AdapterConfig.parse(new String[] {"--agent-url", "http://agent:3000"}, env).mode())
        .isEqualTo(SandboxMode.REMOTE);
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--provider", "container", "--agent-url",
        "http://agent:3000"}, env))
        .isInstanceOf(AdapterConfig.UsageException.class)
        .hasMessageStartingWith("--agent-url conflicts with --provider container");
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--agent-url", "http://agent:3000", "--image", "x"}, env))
        .hasMessage("--image applies to --provider container or kubernetes only");
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--provider", "kubernetes", "--agent-url",
        "http://agent:3000"}, env))
        .hasMessageStartingWith("--agent-url conflicts with --provider kubernetes");
  }

  @Test
  void passEnvWithContainersFollowsTheContainerEnvironmentsRules() {
    AdapterConfig c = AdapterConfig.parse(new String[] {"--provider", "container", "--pass-env", "API_KEY"},
        Map.of("API_KEY", "sk-very-secret"));
    assertThat(c.passEnv()).containsEntry("API_KEY", "sk-very-secret");
    assertThat(c.containerSpec().env()).as("each sandbox adds them").isEmpty();
    assertThat(c.toString()).contains("API_KEY").doesNotContain("sk-very-secret");
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--provider", "container", "--pass-env",
        "SANDBOX_WORKSPACE"}, Map.of("SANDBOX_WORKSPACE", "/x")))
        .isInstanceOf(AdapterConfig.UsageException.class)
        .hasMessageStartingWith("--pass-env with --provider container: SANDBOX_WORKSPACE is set by the sandbox itself");
  }

  // ---- AdapterConfig: --provider kubernetes and its options

  @Test
  void kubernetesTakesTheImageLimitsAndNetworkOfContainersAndItsOwnPlacement() throws Exception {
    AdapterConfig d = AdapterConfig.parse(new String[] {"--provider", "kubernetes"}, Map.of());
    assertThat(d.mode()).isEqualTo(SandboxMode.KUBERNETES);
    assertThat(d.containerSpec().image()).isEqualTo("sandbox-agent");
    assertThat(d.containerSpec().memoryBytes()).isEqualTo(1L << 30);
    assertThat(d.containerSpec().network()).isFalse();
    assertThat(d.kubernetes()).isEqualTo(new AdapterConfig.Kubernetes(null, null, null, null, "IfNotPresent", false));
    assertThat(d.toString()).contains("Kubernetes pods of sandbox-agent", "port-forward", "network off");
    assertThat(AdapterConfig.parse(new String[0], Map.of()).kubernetes()).isNull();
    assertThat(AdapterConfig.parse(new String[] {"--provider", "container"}, Map.of()).kubernetes()).isNull();

    Path kubeconfig = Files.writeString(tmp.resolve("kubeconfig"), "apiVersion: v1\n");
    AdapterConfig c = AdapterConfig.parse(new String[] {"--namespace", "agents", "--provider", "kubernetes",
        "--kubeconfig", kubeconfig.toString(), "--context", "prod-admin@prod", "--service-account", "sandbox-runner",
        "--image-pull-policy", "Never", "--k8s-access", "pod-ip", "--image", "registry.example/agent:1",
        "--memory", "512m", "--cpus", "0.5", "--network", "on"}, Map.of());
    assertThat(c.kubernetes()).isEqualTo(new AdapterConfig.Kubernetes(kubeconfig.toAbsolutePath(), "prod-admin@prod",
        "agents", "sandbox-runner", "Never", true));
    SandboxSpec spec = c.containerSpec();
    assertThat(spec.image()).isEqualTo("registry.example/agent:1");
    assertThat(spec.memoryBytes()).isEqualTo(512L << 20);
    assertThat(spec.cpus()).isEqualTo(0.5);
    assertThat(spec.network()).isTrue();
    assertThat(c.toString()).contains("namespace agents", "context prod-admin@prod", "pull Never", "pod-ip",
        "network on");
    assertThat(AdapterConfig.parse(new String[] {"--provider", "kubernetes", "--k8s-access", "port-forward"}, Map.of())
        .kubernetes().podIp()).isFalse();
  }

  @Test
  void kubernetesSecretsTravelWithEachCallNotInThePodSpec() {
    AdapterConfig c = AdapterConfig.parse(new String[] {"--provider", "kubernetes", "--pass-env", "API_KEY"},
        Map.of("API_KEY", "sk-very-secret"));
    assertThat(c.passEnvPerCall()).as("a pod's environment is readable by everyone who may read its Pod").isTrue();
    assertThat(c.containerSpec().env()).isEmpty();
    assertThat(c.toString()).contains("API_KEY").doesNotContain("sk-very-secret");
  }

  @Test
  void kubernetesOptionMistakesSayWhatIsWrong() {
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--namespace", "agents"}, Map.of()))
        .isInstanceOf(AdapterConfig.UsageException.class)
        .hasMessage("--namespace applies to --provider kubernetes only");
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--provider", "container", "--context", "c",
        "--k8s-access", "pod-ip", "--context", "d"}, Map.of()))
        .hasMessage("--context, --k8s-access apply to --provider kubernetes only");
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--agent-url", "http://agent:3000", "--kubeconfig", "k"},
        Map.of("SANDBOX_AGENT_TOKEN", "t")))
        .hasMessage("--kubeconfig applies to --provider kubernetes only");
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--provider", "kubernetes", "--pids-limit", "100"},
        Map.of()))
        .hasMessage("--pids-limit applies to --provider container only (on Kubernetes the kubelet's podPidsLimit"
            + " sets it for every pod of a node)");
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--provider", "kubernetes", "--isolation", "none"},
        Map.of()))
        .hasMessageStartingWith("--isolation applies to --provider local only");
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--provider", "kubernetes", "--state-dir", "/tmp/x"},
        Map.of()))
        .hasMessageStartingWith("--state-dir applies to --provider local only");
    for (String bad : new String[] {"Agents", "-agents", "agents-", "a_b", "a.b", "x".repeat(64)}) {
      assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--provider", "kubernetes", "--namespace", bad},
          Map.of())).as(bad)
          .hasMessageStartingWith("--namespace takes a Kubernetes name (lower-case letters, digits and '-'")
          .hasMessageEndingWith("got '" + bad + "'");
    }
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--provider", "kubernetes", "--service-account", "Root"},
        Map.of())).hasMessageStartingWith("--service-account takes a Kubernetes name");
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--provider", "kubernetes", "--image-pull-policy",
        "always"}, Map.of()))
        .hasMessage("--image-pull-policy must be Always, IfNotPresent or Never, got 'always'");
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--provider", "kubernetes", "--k8s-access", "service"},
        Map.of()))
        .hasMessage("--k8s-access must be port-forward or pod-ip, got 'service'");
    Path missing = tmp.resolve("no-such-kubeconfig");
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--provider", "kubernetes", "--kubeconfig",
        missing.toString()}, Map.of()))
        .hasMessage("--kubeconfig " + missing + ": no such readable file");
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--provider", "kubernetes", "--kubeconfig",
        tmp.toString()}, Map.of()))
        .hasMessage("--kubeconfig " + tmp + ": no such readable file");
    assertThatThrownBy(() -> AdapterConfig.parse(new String[] {"--provider", "kubernetes", "--namespace"}, Map.of()))
        .hasMessage("--namespace needs a value");
  }

  @Test
  void emptyOrBrokenJsonIsAnIllegalArgumentWithTheReason() {
    assertThatThrownBy(() -> Json.parse("")).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("empty");
    assertThatThrownBy(() -> Json.parse("   ")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Json.parse("{\"a\":1} {")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Json.parse("{\"a\":")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Json.parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2}"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("Duplicate field 'id'");
  }

  // ---- SchemaValidator

  @Test
  void validatorReportsEachViolationWithItsPath() {
    var schema = Json.parse("{\"type\":\"object\",\"properties\":{"
        + "\"n\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":5},"
        + "\"s\":{\"type\":\"string\",\"pattern\":\"^a+$\",\"minLength\":1},"
        + "\"e\":{\"type\":\"string\",\"enum\":[\"x\",\"y\"]},"
        + "\"a\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"minItems\":1},"
        + "\"m\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
        + "\"z\":{\"type\":[\"integer\",\"null\"]}},"
        + "\"required\":[\"n\"],\"additionalProperties\":false}");
    assertThat(SchemaValidator.validate(schema, Json.parse("{\"n\":3,\"s\":\"aa\",\"e\":\"x\",\"a\":[\"q\"],"
        + "\"m\":{\"K\":\"v\"},\"z\":null}"))).isEmpty();
    assertThat(SchemaValidator.validate(schema, Json.parse("{\"n\":3.0}"))).as("3.0 is an integer").isEmpty();
    assertThat(SchemaValidator.validate(schema, Json.parse("{\"n\":9,\"s\":\"b\",\"e\":\"w\",\"a\":[],"
        + "\"m\":{\"K\":1},\"z\":\"no\",\"extra\":true}")))
        .containsExactlyInAnyOrder(
            "arguments.n: must be at most 5, got 9",
            "arguments.s: 'b' does not match ^a+$",
            "arguments.e: must be one of x, y, got a string",
            "arguments.a: needs at least 1 item(s)",
            "arguments.m.K: expected string, got the number 1",
            "arguments.z: expected integer, null, got a string",
            "arguments: unknown property 'extra' (allowed: n, s, e, a, m, z)");
    assertThat(SchemaValidator.validate(schema, Json.parse("{}"))).containsExactly("arguments: missing required property 'n'");
    assertThat(SchemaValidator.validate(schema, Json.parse("{\"n\":1.5}"))).hasSize(1);
  }

  @Test
  void validatorShowsAtMost64CharactersOfAValueSoAHugeArgumentDoesNotComeBackWhole() {
    var schema = Json.parse("{\"type\":\"object\",\"properties\":{\"s\":{\"type\":\"string\",\"pattern\":\"^a+$\"},"
        + "\"n\":{\"type\":\"integer\",\"maximum\":5}},\"additionalProperties\":false}");
    String big = "b".repeat(1 << 20);
    String digits = "9".repeat(1_000); // Jackson refuses longer numbers when parsing
    List<String> problems = SchemaValidator.validate(schema, Json.parse("{\"s\":\"" + big + "\",\"n\":" + digits
        + ",\"" + "k".repeat(50_000) + "\":1}")); // names: Jackson's limit is 50,000
    assertThat(problems).hasSize(3).allSatisfy(p -> assertThat(p.length()).isLessThan(200));
    assertThat(problems).contains("arguments.s: '" + "b".repeat(64) + "... (1048576 characters)' does not match ^a+$",
        "arguments.n: must be at most 5, got " + "9".repeat(64) + "... (1000 characters)");
  }

  // ---- Redactor

  @Test
  void redactorReplacesEverySecretAndLeavesShortValuesAlone() {
    Redactor r = new Redactor(Map.of("API_KEY", "sk-12345", "PIN", "123"));
    assertThat(r.redact("key=sk-12345 again sk-12345, pin 123"))
        .isEqualTo("key=[REDACTED:API_KEY] again [REDACTED:API_KEY], pin 123");
    var node = Json.parse("{\"a\":[\"x sk-12345\"],\"b\":{\"c\":\"sk-12345\"},\"status\":\"sk-12345\"}");
    assertThat(Json.write(r.redact(node))).as("values are redacted, the server's own vocabulary is not")
        .isEqualTo("{\"a\":[\"x [REDACTED:API_KEY]\"],\"b\":{\"c\":\"[REDACTED:API_KEY]\"},\"status\":\"sk-12345\"}");
  }

  @Test
  void overlappingSecretsAreCoveredTogether() {
    Redactor r = new Redactor(Map.of("S1", "AAAA-BBBB", "S2", "BBBB-CCCC"));
    assertThat(r.redact("x AAAA-BBBB-CCCC y")).isEqualTo("x [REDACTED:S1,S2] y");
    assertThat(r.redact("AAAA-BBBB and BBBB-CCCC")).isEqualTo("[REDACTED:S1] and [REDACTED:S2]");
    Redactor repeat = new Redactor(Map.of("R", "abab"));
    assertThat(repeat.redact("ababab")).isEqualTo("[REDACTED:R]");
  }

  @Test
  void aPageStartingInsideASecretShowsOnlyTheMarker() {
    Redactor r = new Redactor(Map.of("T", "secret"));
    CappedText t = new CappedText(100, r, 5); // the page starts at byte 5, inside "secret" (bytes 3-8)
    t.append("my secret tail", 0, 14);
    t.ended();
    assertThat(t.text()).isEqualTo("[REDACTED:T] tail");
    assertThat(t.nextOffset()).isEqualTo(14);
    assertThat(r.straddling("my secret", 5).end()).isEqualTo(9);
    assertThat(r.straddling("my secret", 3)).isNull();
  }

  @Test
  void aSecretSplitAcrossChunksNeverLeaksAPrefix() {
    Redactor r = new Redactor(Map.of("TOKEN", "abcdef"));
    Redactor.Stream s = r.stream();
    assertThat(s.push("xx ab")).isEqualTo("xx ");
    assertThat(s.push("c")).isEmpty();
    assertThat(s.push("de")).isEmpty();
    assertThat(s.push("f yy abc")).isEqualTo("[REDACTED:TOKEN] yy ");
    assertThat(s.push("Z end")).as("abcZ is no secret, so it goes out").isEqualTo("abcZ end");
    assertThat(s.push(" ab")).isEqualTo(" ");
    assertThat(s.flush()).as("the text ended: ab was no secret").isEqualTo("ab");
  }

  @Test
  void aCutNeverEndsInsideASecret() {
    Redactor r = new Redactor(Map.of("T", "secret"));
    assertThat(r.safeCut("my secret!", 5, false)).isEqualTo(3);
    assertThat(r.safeCut("my secret!", 9, false)).isEqualTo(9);
    assertThat(r.safeCut("my sec", 6, false)).as("the text ended: 'sec' is no secret").isEqualTo(6);
    assertThat(r.safeCut("my sec", 6, true)).as("more may come").isEqualTo(3);
  }

  // ---- CappedText

  @Test
  void cappedTextKeepsWholeCharactersWithinTheByteCapAndKnowsWhereToReadOn() {
    CappedText t = new CappedText(5, new Redactor(Map.of()), 0);
    t.append("héllo", 0, 6); // é is two bytes
    t.append("world", 6, 5);
    t.ended();
    assertThat(t.text()).isEqualTo("héll");
    assertThat(t.nextOffset()).isEqualTo(5);
    CappedText t2 = new CappedText(2, new Redactor(Map.of()), 0);
    t2.append("hé", 0, 3);
    assertThat(t2.text()).as("never half a character").isEqualTo("h");
    assertThat(t2.nextOffset()).isEqualTo(1);
    assertThat(t.totalBytes()).isEqualTo(11);
    assertThat(t.truncated()).isTrue();
  }

  @Test
  void cappedTextFromAnOffsetCountsFromThere() {
    CappedText t = new CappedText(100, new Redactor(Map.of()), 1000);
    t.append("abc", 1000, 3);
    t.ended();
    assertThat(t.text()).isEqualTo("abc");
    assertThat(t.nextOffset()).isEqualTo(1003);
    assertThat(t.truncated()).isFalse();
  }

  @Test
  void cappedTextBacksOffASecretStraddlingTheCap() {
    CappedText t = new CappedText(8, new Redactor(Map.of("K", "topsecret")), 0);
    t.append("abc topsecret xyz", 0, 17);
    t.ended();
    assertThat(t.text()).isEqualTo("abc ");
    assertThat(t.nextOffset()).isEqualTo(4);
  }

  @Test
  void cappedTextWithoutSecretsKeepsWhatTheRedactingPathKeepsWhenNoSecretOccurs() {
    java.util.Random random = new java.util.Random(13);
    Redactor none = new Redactor(Map.of());
    Redactor absent = new Redactor(Map.of("K", "\u0001\u0002\u0003\u0004")); // never in the text below
    String alphabet = "ab é中\n";
    for (int round = 0; round < 3_000; round++) {
      int cap = random.nextInt(24);
      long from = random.nextInt(12);
      CappedText fast = new CappedText(cap, none, from);
      CappedText full = new CappedText(cap, absent, from);
      long offset = 0;
      for (int chunk = random.nextInt(6); chunk > 0; chunk--) {
        StringBuilder text = new StringBuilder();
        for (int n = random.nextInt(8); n > 0; n--) {
          text.append(alphabet.charAt(random.nextInt(alphabet.length())));
        }
        if (random.nextInt(8) == 0) {
          offset += random.nextInt(3); // output lost in between
        }
        long bytes = text.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
        fast.append(text.toString(), offset, bytes);
        full.append(text.toString(), offset, bytes);
        offset += bytes;
        assertThat(fast.text()).isEqualTo(full.text());
        assertThat(fast.nextOffset()).isEqualTo(full.nextOffset());
      }
      if (random.nextBoolean()) {
        fast.ended();
        full.ended();
      }
      assertThat(fast.text()).as("round %d", round).isEqualTo(full.text());
      assertThat(fast.nextOffset()).as("round %d", round).isEqualTo(full.nextOffset());
      assertThat(fast.truncated()).isEqualTo(full.truncated());
    }
  }

  @Test
  void aGapInOffsetsMeansOutputWasLost() {
    CappedText t = new CappedText(100, new Redactor(Map.of()), 0);
    t.append("a", 0, 1);
    t.append("z", 50, 1);
    assertThat(t.truncated()).isTrue();
    assertThat(t.text()).isEqualTo("a");
    assertThat(t.nextOffset()).isEqualTo(1);
  }

  // ---- file tools: text detection and secrets in bytes

  @Test
  void textIsValidUtf8WithoutNulAndACutCharacterCountsOnlyIfNothingFollows() {
    byte[] euro = "a€".getBytes(java.nio.charset.StandardCharsets.UTF_8); // 61 E2 82 AC
    assertThat(FileTools.isUtf8Text(euro, 0, 4, false)).isTrue();
    assertThat(FileTools.isUtf8Text(euro, 0, 3, true)).as("the rest of the euro sign may follow").isTrue();
    assertThat(FileTools.isUtf8Text(euro, 0, 3, false)).as("the file ends in half a character").isFalse();
    assertThat(FileTools.isUtf8Text(new byte[] {'a', 0, 'b'}, 0, 3, false)).isFalse();
    assertThat(FileTools.isUtf8Text(new byte[] {'a', (byte) 0xFF}, 0, 2, true)).isFalse();
    assertThat(FileTools.isUtf8Text(new byte[0], 0, 0, false)).isTrue();
  }

  @Test
  void aPageEndsBeforeACharacterItWouldCut() {
    byte[] b = "ab€".getBytes(java.nio.charset.StandardCharsets.UTF_8); // 61 62 E2 82 AC
    assertThat(FileTools.completeEnd(b, 0, 5)).isEqualTo(5);
    assertThat(FileTools.completeEnd(b, 0, 4)).isEqualTo(2);
    assertThat(FileTools.completeEnd(b, 0, 3)).isEqualTo(2);
    assertThat(FileTools.completeEnd(b, 0, 2)).isEqualTo(2);
  }

  @Test
  void secretInFindsASecretOverlappingTheRangeAndOnlyThen() {
    Redactor r = new Redactor(Map.of("K", "topsecret"));
    byte[] data = "xx topsecret yy".getBytes(java.nio.charset.StandardCharsets.UTF_8);
    assertThat(r.secretIn(data, data.length, 0, 3)).isNull();
    assertThat(r.secretIn(data, data.length, 0, 4)).isEqualTo("K");
    assertThat(r.secretIn(data, data.length, 11, 12)).isEqualTo("K");
    assertThat(r.secretIn(data, data.length, 12, 15)).isNull();
    assertThat(r.secretIn(data, 8, 0, 8)).as("only the first 8 bytes are there").isNull();
  }

  // ---- a tool result's JSON, made once

  @Test
  void aResultIsWrittenAsTheSameJsonWhenItsTextCopyIsReusedForTheObject() {
    try (McpServer server = new McpServer(AdapterConfig.defaults())) {
      for (String text : List.of("", "plain", "tab\t nl\n quote\" back\\ ctl\u0001 é 中 emoji \uD83D\uDE00",
          "lone \uD800 and \uDC00 surrogates", "</script> \u2028")) {
        ObjectNode structured = Json.object().put("command", text).put("exitCode", 3).put("success", false)
            .put("durationMs", 12L).put("truncated", true);
        structured.putNull("signal");
        structured.putObject("nested").put("k", text).putArray("a").add(1).add(text).addNull();
        ObjectNode plain = Json.object();
        plain.putArray("content").addObject().put("type", "text").put("text", Json.write(structured));
        plain.set("structuredContent", structured);
        plain.put("isError", true);

        ObjectNode result = server.toResult(ToolOutcome.error(structured.deepCopy()));

        assertThat(result).as("the same tree").isEqualTo(plain);
        assertThat(Json.write(JsonRpc.result(IntNode.valueOf(7), result)))
            .as("the same message text").isEqualTo(Json.write(JsonRpc.result(IntNode.valueOf(7), plain)));
        assertThat(result.get("structuredContent").get("nested").get("a").get(1).asText()).isEqualTo(text);
      }
    }
  }
}
