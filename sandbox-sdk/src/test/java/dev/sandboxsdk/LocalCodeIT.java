package dev.sandboxsdk;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandboxsdk.local.LocalSandbox;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link Sandbox#code()} on a real {@link LocalSandbox} with the real python3 and node: state across
 * runs, values, errors as data, interrupt, streaming, listing and deleting, a chart as PNG.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class LocalCodeIT {
  private static LocalSandbox sandbox;

  @BeforeAll
  static void start() {
    sandbox = LocalSandbox.builder().start();
  }

  @AfterAll
  static void stop() {
    sandbox.close();
  }

  @Test
  void pythonKeepsStateReturnsValuesAndReportsErrorsAsData() {
    try (CodeContext py = sandbox.code().createContext(CodeContextOptions.of(CodeLanguage.PYTHON))) {
      CodeResult set = py.run("import math\nx = 40\nprint('set')");
      assertThat(set.stdout()).isEqualTo("set\n");
      assertThat(set.value()).isEmpty();
      CodeResult value = py.run("math.floor(x + 2.5)");
      assertThat(value.value().orElseThrow().text()).isEqualTo("42");
      assertThat(value.executionCount()).isEqualTo(2);
      CodeResult failed = py.run("undefined_name");
      assertThat(failed.isSuccess()).isFalse();
      assertThat(failed.error().name()).isEqualTo("NameError");
      assertThat(failed.error().message()).contains("undefined_name");
      assertThat(failed.error().traceback()).isNotEmpty();
    }
  }

  @Test
  void javascriptKeepsTopLevelDeclarations() {
    try (CodeContext js = sandbox.code().createContext(CodeContextOptions.of(CodeLanguage.JAVASCRIPT))) {
      js.run("const greet = name => `hello ${name}`; let n = 1");
      CodeResult r = js.run("n += 1; greet('é' + n)");
      assertThat(r.value().orElseThrow().text()).isEqualTo("'hello é2'");
    }
  }

  @Test
  void interruptFromAnotherThreadKeepsTheContext() throws Exception {
    try (CodeContext py = sandbox.code().createContext(CodeContextOptions.of(CodeLanguage.PYTHON))) {
      py.run("kept = [1, 2, 3]");
      CompletableFuture<CodeResult> running = CompletableFuture.supplyAsync(
          () -> py.run("import time\nwhile True:\n    time.sleep(0.01)"));
      while (!py.info().busy()) {
        Thread.sleep(10);
      }
      Thread.sleep(100);
      long t0 = System.nanoTime();
      assertThat(py.interrupt()).isTrue();
      CodeResult r = running.get(10, TimeUnit.SECONDS);
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      System.out.println("SDK: interrupt to result " + ms + " ms");
      assertThat(r.interrupted()).isTrue();
      assertThat(r.error().name()).isEqualTo("KeyboardInterrupt");
      assertThat(r.restarted()).as("interrupted, not killed and restarted").isFalse();
      assertThat(py.run("sum(kept)").value().orElseThrow().text()).isEqualTo("6");
    }
  }

  @Test
  void aTimeoutInterruptsTheRun() {
    try (CodeContext js = sandbox.code().createContext(CodeContextOptions.of(CodeLanguage.JAVASCRIPT))) {
      CodeResult r = js.run("while (true) {}", Duration.ofMillis(300));
      assertThat(r.timedOut()).isTrue();
      assertThat(r.restarted()).isFalse();
      assertThat(js.run("1 + 1").value().orElseThrow().text()).isEqualTo("2");
    }
  }

  @Test
  void runStreamPublishesOutputWhileTheCodeRuns() throws Exception {
    try (CodeContext py = sandbox.code().createContext(CodeContextOptions.of(CodeLanguage.PYTHON))) {
      List<CodeEvent> events = new ArrayList<>();
      List<Long> at = new ArrayList<>();
      CountDownLatch done = new CountDownLatch(1);
      long t0 = System.nanoTime();
      py.runStream("import time\nprint('one', flush=True)\ntime.sleep(0.5)\nprint('two')\n'end'", Duration.ZERO)
          .subscribe(new Flow.Subscriber<>() {
            @Override
            public void onSubscribe(Flow.Subscription s) {
              s.request(Long.MAX_VALUE);
            }

            @Override
            public void onNext(CodeEvent e) {
              events.add(e);
              at.add(System.nanoTime() - t0);
            }

            @Override
            public void onError(Throwable t) {
              done.countDown();
            }

            @Override
            public void onComplete() {
              done.countDown();
            }
          });
      assertThat(done.await(10, TimeUnit.SECONDS)).isTrue();
      assertThat(events.get(0)).isEqualTo(new CodeEvent.Stdout("one\n"));
      assertThat(events.get(events.size() - 1)).isInstanceOf(CodeEvent.Complete.class);
      assertThat(events).anySatisfy(e -> assertThat(e).isEqualTo(new CodeEvent.Stdout("two\n")));
      // the first line arrived before the code slept, not with the result
      long last = at.get(at.size() - 1);
      assertThat(last - at.get(0)).isGreaterThan(TimeUnit.MILLISECONDS.toNanos(400));
    }
  }

  @Test
  void contextsAreListedAndADeletedOneIsGone() {
    CodeContext py = sandbox.code().createContext(CodeContextOptions.of(CodeLanguage.PYTHON).withEnv("GREETING", "hi"));
    assertThat(py.run("import os\nos.environ['GREETING']").value().orElseThrow().text()).isEqualTo("'hi'");
    assertThat(sandbox.code().contexts()).extracting(CodeContextInfo::id).contains(py.id());
    assertThat(sandbox.code().context(py.id())).isPresent();
    py.delete();
    py.delete(); // idempotent
    assertThat(sandbox.code().contexts()).extracting(CodeContextInfo::id).doesNotContain(py.id());
    assertThat(sandbox.code().context(py.id())).isEmpty();
    assertThatThrownBy(() -> py.run("1")).isInstanceOf(SandboxNotFoundException.class)
        .hasMessageContaining("code context");
  }

  @Test
  void restartForgetsEverything() {
    try (CodeContext py = sandbox.code().createContext(CodeContextOptions.of(CodeLanguage.PYTHON))) {
      py.run("gone = 1");
      py.restart();
      assertThat(py.run("'gone' in globals()").value().orElseThrow().text()).isEqualTo("False");
    }
  }

  @Test
  void aMissingInterpreterIsAClearInvalidRequest() {
    assertThatThrownBy(() -> sandbox.code().createContext(CodeContextOptions.of(CodeLanguage.PYTHON)
        .withEnv("PATH", "/nonexistent")))
        .isInstanceOf(SandboxInvalidRequestException.class)
        .hasMessageContaining("python3").hasMessageContaining("not installed")
        .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo("INTERPRETER_NOT_AVAILABLE"));
  }

  @Test
  void aMatplotlibChartComesBackAsPng() throws Exception {
    boolean has = new ProcessBuilder("/usr/bin/python3", "-c", "import matplotlib").start().waitFor() == 0;
    org.junit.jupiter.api.Assumptions.assumeTrue(has || "true".equals(System.getenv("CI")),
        "matplotlib is not installed for /usr/bin/python3 (apt-get install python3-matplotlib): skipped");
    try (CodeContext py = sandbox.code().createContext(CodeContextOptions.of(CodeLanguage.PYTHON)
        .withEnv("PATH", "/usr/bin:/bin"))) {
      CodeResult r = py.run("import matplotlib.pyplot as plt\nplt.bar(['a', 'b'], [3, 5])\nNone");
      byte[] png = r.outputs().stream().flatMap(o -> o.png().stream()).findFirst().orElseThrow();
      assertThat(Arrays.copyOf(png, 8)).containsExactly(0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n');
      assertThat(new String(png, 12, 4, StandardCharsets.US_ASCII)).isEqualTo("IHDR");
      assertThat(ByteBuffer.wrap(png, 16, 4).getInt()).isPositive();
    }
  }
}
