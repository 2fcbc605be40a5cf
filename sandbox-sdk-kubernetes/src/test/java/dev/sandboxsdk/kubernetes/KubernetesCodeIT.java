package dev.sandboxsdk.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.sandboxsdk.CodeContext;
import dev.sandboxsdk.CodeContextOptions;
import dev.sandboxsdk.CodeLanguage;
import dev.sandboxsdk.CodeResult;
import dev.sandboxsdk.SandboxSpec;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Code contexts in a pod of the image with the interpreters ({@code -Dsandbox.k8s.clientsImage},
 * which the cluster script passes when podman has {@code sandbox-agent:clients}): state across
 * runs, an interrupt that keeps it, a matplotlib chart as PNG, and JavaScript, through the same
 * SDK code as the local and container providers.
 */
@ExtendWith(KubernetesCluster.class)
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class KubernetesCodeIT {
  private static KubernetesProvider provider;
  private static KubernetesSandbox sandbox;

  @BeforeAll
  static void start() {
    assumeTrue(KubernetesCluster.CLIENTS_IMAGE != null,
        "no -Dsandbox.k8s.clientsImage: the image with the interpreters is not in the cluster");
    provider = KubernetesCluster.provider().build();
    sandbox = provider.create(SandboxSpec.builder().image(KubernetesCluster.CLIENTS_IMAGE).build());
  }

  @AfterAll
  static void stop() {
    if (sandbox != null) {
      sandbox.close();
    }
    if (provider != null) {
      provider.close();
    }
  }

  @Test
  void pythonKeepsStateAcrossRunsAndAnInterrupt() throws Exception {
    try (CodeContext py = sandbox.code().createContext(CodeContextOptions.of(CodeLanguage.PYTHON))) {
      py.run("import os\nkept = {'user': os.getuid() != 0}");
      assertThat(py.run("kept['user']").value().orElseThrow().text()).as("not root in the pod").isEqualTo("True");
      CompletableFuture<CodeResult> loop = CompletableFuture.supplyAsync(() -> py.run("while True: pass"));
      while (!py.info().busy()) {
        Thread.sleep(10);
      }
      long t0 = System.nanoTime();
      assertThat(py.interrupt()).isTrue();
      CodeResult r = loop.get(30, TimeUnit.SECONDS);
      System.out.println("kubernetes: interrupt to result "
          + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0) + " ms");
      assertThat(r.error().name()).isEqualTo("KeyboardInterrupt");
      assertThat(r.restarted()).as("interrupted, not killed and restarted").isFalse();
      assertThat(py.run("kept").value().orElseThrow().text()).isEqualTo("{'user': True}");
    }
  }

  @Test
  void aChartComesBackAsPngAndAnErrorAsData() {
    try (CodeContext py = sandbox.code().createContext(CodeContextOptions.of(CodeLanguage.PYTHON))) {
      CodeResult chart = py.run("import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nNone");
      assertThat(chart.error()).isNull();
      byte[] png = chart.outputs().get(0).png().orElseThrow();
      assertThat(Arrays.copyOf(png, 8)).containsExactly(0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n');
      assertThat(new String(png, 12, 4, StandardCharsets.US_ASCII)).isEqualTo("IHDR");

      CodeResult failed = py.run("1 / 0");
      assertThat(failed.error().name()).isEqualTo("ZeroDivisionError");
      assertThat(failed.error().traceback()).isNotEmpty();
    }
  }

  @Test
  void javascriptKeepsTopLevelDeclarations() {
    try (CodeContext js = sandbox.code().createContext(CodeContextOptions.of(CodeLanguage.JAVASCRIPT))) {
      js.run("const base = 40; function add(n) { return base + n }");
      assertThat(js.run("add(2)").value().orElseThrow().text()).isEqualTo("42");
      assertThat(js.run("'héllo ✓'").value().orElseThrow().text()).contains("héllo ✓");
    }
  }
}
