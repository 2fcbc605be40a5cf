package dev.sandboxsdk.container;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandboxsdk.CodeContext;
import dev.sandboxsdk.CodeContextOptions;
import dev.sandboxsdk.CodeLanguage;
import dev.sandboxsdk.CodeResult;
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
 * Code contexts in a container sandbox of the image with the interpreters ({@code
 * -Dsandbox.clientsImage}, built with {@code SANDBOX_PACKAGES="git ca-certificates curl python3
 * python3-matplotlib nodejs"}): the same facet as on the local provider, through the same client.
 */
@ExtendWith({ContainerEngine.class, ContainerEgressSecretsIT.ClientsImage.class})
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class ContainerCodeIT {
  private static ContainerSandbox sandbox;

  @BeforeAll
  static void start() {
    sandbox = ContainerSandbox.builder().image(ContainerEgressSecretsIT.CLIENTS_IMAGE).start();
  }

  @AfterAll
  static void stop() {
    if (sandbox != null) {
      sandbox.close();
    }
  }

  @Test
  void pythonKeepsStateAndAnInterruptKeepsIt() throws Exception {
    try (CodeContext py = sandbox.code().createContext(CodeContextOptions.of(CodeLanguage.PYTHON))) {
      py.run("kept = {'a': 1}");
      assertThat(py.run("kept['a'] + 41").value().orElseThrow().text()).isEqualTo("42");
      CompletableFuture<CodeResult> loop = CompletableFuture.supplyAsync(() -> py.run("while True: pass"));
      while (!py.info().busy()) {
        Thread.sleep(10);
      }
      Thread.sleep(100);
      long t0 = System.nanoTime();
      assertThat(py.interrupt()).isTrue();
      CodeResult r = loop.get(10, TimeUnit.SECONDS);
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      System.out.println("container: interrupt to result " + ms + " ms");
      assertThat(r.error().name()).isEqualTo("KeyboardInterrupt");
      assertThat(r.restarted()).as("interrupted, not killed and restarted").isFalse();
      assertThat(py.run("kept").value().orElseThrow().text()).isEqualTo("{'a': 1}");
    }
  }

  @Test
  void aChartComesBackAsPng() {
    try (CodeContext py = sandbox.code().createContext(CodeContextOptions.of(CodeLanguage.PYTHON))) {
      CodeResult r = py.run("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nNone");
      assertThat(r.error()).isNull();
      byte[] png = r.outputs().get(0).png().orElseThrow();
      assertThat(Arrays.copyOf(png, 8)).containsExactly(0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n');
      assertThat(new String(png, 12, 4, StandardCharsets.US_ASCII)).isEqualTo("IHDR");
    }
  }

  @Test
  void javascriptKeepsTopLevelDeclarations() {
    try (CodeContext js = sandbox.code().createContext(CodeContextOptions.of(CodeLanguage.JAVASCRIPT))) {
      js.run("const base = 40; function add(n) { return base + n }");
      assertThat(js.run("add(2)").value().orElseThrow().text()).isEqualTo("42");
    }
  }
}
