package dev.sandboxsdk.bench.agent;

import dev.sandboxsdk.bench.Procs;
import java.io.BufferedReader;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One agent JVM of {@link AgentBench}, started from the private copy of its jar on a free port
 * with the run's token file; it is ready when it prints its ready line, which gives its port and
 * pid. Closing it sends SIGTERM.
 */
final class AgentProcess implements Closeable {
  static final String READY_PREFIX = "SANDBOX_AGENT_READY ";
  static final Pattern PORT = Pattern.compile("\"port\":(\\d+)");
  static final Pattern PID = Pattern.compile("\"pid\":(\\d+)");

  final String name;
  final List<String> jvmOpts;
  final Process process;
  final long pid;
  final int port;
  final double readyMs;
  final long launchNanos;
  final List<String> printedFlags = new ArrayList<>();
  final String readyLine;
  final Path stderrLog;
  volatile int extraStdoutLines;

  AgentProcess(AgentBench b, String name, List<String> jvmOpts) throws IOException {
    this.name = name;
    this.jvmOpts = jvmOpts;
    this.stderrLog = b.workDir.resolve("agent-" + name.replaceAll("[^A-Za-z0-9]", "_") + "-" + (++b.agentLaunches) + ".stderr.log");
    List<String> cmd = new ArrayList<>();
    cmd.add(Procs.javaBin());
    cmd.addAll(jvmOpts);
    cmd.add("-XX:+PrintCommandLineFlags");
    cmd.addAll(List.of("-jar", b.jar.toString(), "--port", "0", "--bind", "127.0.0.1",
        "--workspace", b.workspace.toString(), "--token-file", b.tokenFile.toString()));
    cmd.addAll(Procs.splitOpts(b.o.agentArgs));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(stderrLog.toFile());
    pb.environment().remove("SANDBOX_AGENT_TOKEN");
    long t0 = System.nanoTime();
    launchNanos = t0;
    process = pb.start();
    BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    String line;
    String ready = null;
    while ((line = r.readLine()) != null) {
      if (line.startsWith(READY_PREFIX)) {
        ready = line;
        break;
      }
      printedFlags.add(line.trim());
    }
    readyMs = (System.nanoTime() - t0) / 1e6;
    if (ready == null) {
      String err = Files.exists(stderrLog) ? Files.readString(stderrLog) : "";
      throw new IOException("agent " + name + " exited without a ready line; stderr:\n" + err);
    }
    readyLine = ready;
    Matcher pm = PORT.matcher(ready);
    Matcher im = PID.matcher(ready);
    if (!pm.find() || !im.find()) {
      throw new IOException("cannot parse ready line: " + ready);
    }
    port = Integer.parseInt(pm.group(1));
    pid = Long.parseLong(im.group(1));
    Thread drain = new Thread(() -> {
      try {
        while (r.readLine() != null) {
          extraStdoutLines++;
        }
      } catch (IOException ignored) {
        // agent gone
      }
    }, "agent-stdout-drain");
    drain.setDaemon(true);
    drain.start();
  }

  String flagsLine() {
    return String.join(" ", printedFlags);
  }

  String stderrText() {
    try {
      return Files.readString(stderrLog);
    } catch (IOException e) {
      return "";
    }
  }

  @Override
  public void close() {
    process.destroy(); // SIGTERM: the agent stops its processes and exits
    try {
      if (!process.waitFor(15, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        process.waitFor(5, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
