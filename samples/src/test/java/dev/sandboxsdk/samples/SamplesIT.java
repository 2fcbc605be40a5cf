package dev.sandboxsdk.samples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Runs every sample's {@code main} in this JVM against a real local sandbox and checks the lines
 * it prints. The output is also passed through to the real stdout for the failsafe report.
 */
@Timeout(60)
class SamplesIT {

  @Test
  void quickstart() throws Exception {
    String out = run(Quickstart::main);

    assertThat(out)
        .contains("exec: exit 0, stdout: hello from Linux")
        .contains("exec argv (no shell, nothing injected): no shell|$HOME|; rm -rf /|")
        .contains("timedOut=true exit 124")
        .contains("  stdout: step 3", "  complete: exit 0")
        .contains("killed it: status killed, exit code 143, signal SIGTERM")
        .contains("closed the sandbox");
  }

  @Test
  void streamBuildLog() throws Exception {
    String out = run(StreamBuildLog::main);

    assertThat(out)
        .contains("out | [1/4] resolving dependencies")
        .contains("ERR | warning: Util.java uses a deprecated API")
        .contains("out |   test printer ... ok")
        .contains("complete: exit 0")
        .endsWith("build finished: exit code 0" + System.lineSeparator());
    // Live, not all at the end: the build sleeps about 1.5 s between its first and last line.
    assertThat(millisOf(out, "BUILD SUCCESSFUL") - millisOf(out, "[1/4] resolving dependencies"))
        .isGreaterThanOrEqualTo(1000);
    assertThat(out.indexOf("[2/4]")).isLessThan(out.indexOf("[3/4]")).isLessThan(out.indexOf("[4/4]"));
  }

  @Test
  void dataAnalysis(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
    assumeTrue(onPath("python3"), "the sample needs python3");
    Path chart = dir.resolve("chart.png");

    String out = run(args -> DataAnalysis.main(new String[] {chart.toString()}));

    assertThat(out)
        .contains("cell 1: 6 rows loaded")
        .contains("cell 2 failed: TypeError: unsupported operand type(s) for +: 'int' and 'str'")
        .contains("cell 3: total = 640.0")
        .contains("cell 4: by month = {'Jan': 200.5, 'Feb': 196.5, 'Mar': 243.0}");
    if (out.contains("no chart: ModuleNotFoundError")) { // the sandbox's python3 lacks matplotlib
      assumeTrue(!"true".equals(System.getenv("CI")), "CI installs python3-matplotlib");
      return;
    }
    assertThat(out).contains("chart: ");
    byte[] png = java.nio.file.Files.readAllBytes(chart);
    assertThat(java.util.Arrays.copyOf(png, 8)).containsExactly(0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n');
  }

  @Test
  void backgroundWebServer() throws Exception {
    assumeTrue(onPath("python3"), "the sample needs python3");

    String out = run(BackgroundWebServer::main);

    assertThat(out)
        .contains("started process 'web'")
        .containsPattern("ready after \\d+ ms: Serving HTTP on 127\\.0\\.0\\.1 port \\d+")
        .contains("fetched inside the sandbox: <h1>hello from the sandbox</h1>")
        .contains("fetched from Java: HTTP 200 <h1>hello from the sandbox</h1>")
        .contains("\"GET /index.html HTTP/1.1\" 200")
        .contains("running: RUNNING")
        .contains("final state: id=web status=KILLED exitCode=143 signal=SIGTERM timedOut=false");
  }

  @Test
  void reconnectLogs() throws Exception {
    String out = run(ReconnectLogs::main);

    assertThat(out)
        .contains("page 1: ProcessLogs{counter")
        .contains("streaming from offset")
        .contains("  exit: COMPLETED, exit code 0")
        .contains("read 20 lines in three pieces, each exactly once: true")
        // seq 1 1000 writes 3893 bytes; the window keeps the last 1024.
        .contains("late page: truncated=true, asked for offset 0, got stdout from offset 2869 (1024 bytes retained)")
        .contains("late stream: truncated STDOUT: 2869 bytes dropped, data continues at offset 2869")
        .contains("late stream: exit COMPLETED");
  }

  @Test
  void cancellation() throws Exception {
    String out = run(Cancellation::main);

    assertThat(out)
        .contains("execAsync: future cancelled")
        .containsPattern("execAsync: stopped; its last heartbeat was -?\\d+ ms from the cancel")
        .contains("timeout: timedOut=true exitCode=124 signal=SIGTERM")
        .contains("output kept: started")
        .contains("execStream: tick 3")
        .containsPattern("execStream: stopped; its last heartbeat was -?\\d+ ms from the cancel")
        .doesNotContain("still running");
  }

  @Test
  void headlessTask() throws Exception {
    String out = run(HeadlessTask::main);

    assertThat(out)
        .contains("task exit code 0; output tail: task: edited README.md, added NOTES.md, removed old.txt")
        .contains("summary: 3 files changed, 2 insertions(+), 2 deletions(-)")
        .contains("  ADDED    NOTES.md (+1 -0)\n  MODIFIED README.md (+1 -1)\n  DELETED  old.txt (+0 -1)\n")
        .contains("-line two\n+line 2\n")
        .contains("diff --git a/NOTES.md b/NOTES.md\nnew file mode 100644\n");
  }

  // ---- helpers

  /** A sample's {@code main}. */
  @FunctionalInterface
  interface Main {
    void run(String[] args) throws Exception;
  }

  /** Runs a main with System.out captured (and still passed through). Tests in a class run one at a time. */
  private static synchronized String run(Main main) throws Exception {
    PrintStream original = System.out;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    PrintStream tee = new PrintStream(new OutputStream() {
      @Override
      public void write(int b) {
        captured.write(b);
        original.write(b);
      }

      @Override
      public void write(byte[] b, int off, int len) {
        captured.write(b, off, len);
        original.write(b, off, len);
      }

      @Override
      public void flush() {
        original.flush();
      }
    }, true, StandardCharsets.UTF_8);
    System.setOut(tee);
    try {
      main.run(new String[0]);
    } finally {
      System.setOut(original);
      tee.flush();
    }
    return captured.toString(StandardCharsets.UTF_8);
  }

  /** The elapsed milliseconds StreamBuildLog printed in front of the line containing {@code text}. */
  private static long millisOf(String out, String text) {
    Matcher m = Pattern.compile("(?m)^\\s*(\\d+) ms .*" + Pattern.quote(text)).matcher(out);
    assertThat(m.find()).as("a line with '%s' in%n%s", text, out).isTrue();
    return Long.parseLong(m.group(1));
  }

  private static boolean onPath(String program) throws IOException {
    String path = System.getenv("PATH");
    if (path == null) {
      return false;
    }
    try (Stream<String> dirs = Stream.of(path.split(File.pathSeparator))) {
      return dirs.filter(d -> !d.isEmpty()).map(d -> Path.of(d, program)).anyMatch(Files::isExecutable);
    }
  }
}
