package dev.sandboxsdk.bench.agent;

import dev.sandboxsdk.bench.Procs;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * An agent JVM started as the local sandbox starts it (its JVM options, a fresh token written to
 * its stdin, {@code --exit-on-stdin-eof}), returned once it printed its ready line. Closing its
 * stdin stops it; {@link #close()} does that and waits. Shared by the benchmarks that drive one
 * agent of their own.
 */
record StdinAgent(Process process, OutputStream stdin, String token, String readyLine) implements AutoCloseable {
  private static final Pattern URL = Pattern.compile("\"url\":\"([^\"]+)\"");
  private static final Pattern ISOLATION = Pattern.compile("\"isolation\":\"([^\"]+)\"");

  /** Starts {@code jar} on a free loopback port with {@code workspace} and the given extra arguments. */
  static StdinAgent start(String jar, Path workspace, String... args) throws IOException {
    List<String> cmd = new ArrayList<>(List.of(Procs.javaBin(), "-XX:+UseSerialGC", "-Xss512k", "-Xms8m",
        "-Xmx512m", "-XX:-UsePerfData", "-jar", jar, "--port", "0", "--bind", "127.0.0.1", "--workspace",
        workspace.toString(), "--token-stdin", "--exit-on-stdin-eof"));
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
    String token = "bench-" + System.nanoTime();
    OutputStream stdin = p.getOutputStream();
    stdin.write((token + "\n").getBytes(StandardCharsets.UTF_8));
    stdin.flush();
    String ready = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8)).readLine();
    if (ready == null || !ready.startsWith("SANDBOX_AGENT_READY ") || !URL.matcher(ready).find()) {
      p.destroyForcibly();
      throw new IllegalStateException("the agent (" + String.join(" ", args) + ") did not start: " + ready);
    }
    return new StdinAgent(p, stdin, token, ready);
  }

  /** The base URL from the ready line, e.g. {@code http://127.0.0.1:41234}. */
  String url() {
    Matcher m = URL.matcher(readyLine);
    m.find();
    return m.group(1);
  }

  /** The isolation in force, from the ready line, or {@code ?}. */
  String isolation() {
    Matcher m = ISOLATION.matcher(readyLine);
    return m.find() ? m.group(1) : "?";
  }

  @Override
  public void close() {
    try {
      stdin.close(); // --exit-on-stdin-eof
      if (!process.waitFor(15, TimeUnit.SECONDS)) {
        process.destroyForcibly();
      }
    } catch (IOException e) {
      process.destroyForcibly();
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    }
  }
}
