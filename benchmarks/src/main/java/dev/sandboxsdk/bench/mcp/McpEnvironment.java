package dev.sandboxsdk.bench.mcp;

import static dev.sandboxsdk.bench.mcp.McpBench.block;
import static dev.sandboxsdk.bench.mcp.McpBench.calls;
import static dev.sandboxsdk.bench.mcp.McpBench.coldStarts;
import static dev.sandboxsdk.bench.mcp.McpBench.concurrent;
import static dev.sandboxsdk.bench.mcp.McpBench.concurrentReps;
import static dev.sandboxsdk.bench.mcp.McpBench.jar;
import static dev.sandboxsdk.bench.mcp.McpBench.jarOrigin;
import static dev.sandboxsdk.bench.mcp.McpBench.note;
import static dev.sandboxsdk.bench.mcp.McpBench.repo;
import static dev.sandboxsdk.bench.mcp.McpBench.serverJvmOpts;
import static dev.sandboxsdk.bench.mcp.McpBench.smoke;
import static dev.sandboxsdk.bench.mcp.McpBench.streamBytes;
import static dev.sandboxsdk.bench.mcp.McpBench.streamReps;
import static dev.sandboxsdk.bench.mcp.McpBench.warmup;

import dev.sandboxsdk.bench.Machine;
import dev.sandboxsdk.bench.Procs;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/** The first lines of {@link McpBench}'s output: the machine, the JVM, the commit, the jar and the parameters. */
final class McpEnvironment {
  private McpEnvironment() {}

  static void print() throws IOException {
    String javaVersion = String.join(" | ", runText(List.of(Procs.javaBin(), "-version")));
    String nproc = String.join("", runText(List.of("nproc")));
    String commit = String.join("", runText(List.of("git", "-C", repo.toString(), "rev-parse", "--short", "HEAD")));
    List<String> dirty = runText(List.of("git", "-C", repo.toString(), "status", "--porcelain", "--untracked-files=no"));
    dirty.removeIf(String::isBlank);
    String cpu = Machine.cpuModel();
    String load = Machine.loadAverage();
    double load1 = Double.parseDouble(load.split(" ")[0]);
    note("date", Instant.now().toString());
    note("java -version", javaVersion);
    note("nproc", nproc + " (availableProcessors " + Runtime.getRuntime().availableProcessors() + "); cpu " + cpu
        + "; kernel " + String.join("", runText(List.of("uname", "-r"))));
    note("git commit", commit + (dirty.isEmpty() ? " (clean)" : " + " + dirty.size() + " modified tracked file(s): "
        + dirty.stream().map(String::strip).collect(Collectors.joining(", "))));
    note("server jar", jar + " (" + Files.size(jar) + " B"
        + (jarOrigin != null ? ", copy of " + jarOrigin + " modified " + Files.getLastModifiedTime(Path.of(jarOrigin))
            : ", modified " + Files.getLastModifiedTime(jar)) + ")");
    if (jarOrigin != null) {
      note("jar vs sources", staleness(Path.of(jarOrigin)));
    }
    note("server JVM options", serverJvmOpts.isEmpty() ? "(none: JVM defaults)" : String.join(" ", serverJvmOpts));
    note("load average at start", load + (load1 > 1.0 ? "  (WARNING: the machine looks busy; figures may be distorted)" : ""));
    if (smoke) {
      note("smoke run", "checks that every part works; its figures are too few to mean anything");
    }
    note("parameters", String.format(Locale.ROOT, "calls=%d warmup=%d block=%d cold-starts=%d stream-bytes=%d"
        + " stream-reps=%d concurrent=%d concurrent-reps=%d", calls, warmup, block, coldStarts, streamBytes,
        streamReps, concurrent, concurrentReps));
  }

  static List<String> runText(List<String> cmd) {
    try {
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      p.getOutputStream().close();
      String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      p.waitFor(30, TimeUnit.SECONDS);
      return new ArrayList<>(List.of(text.strip().split("\n")));
    } catch (IOException e) {
      return new ArrayList<>(List.of("(" + cmd.get(0) + ": " + e.getMessage() + ")"));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return new ArrayList<>(List.of("(interrupted)"));
    }
  }

  /** Whether source files of the server, the SDK or the agent changed after the jar was built. */
  static String staleness(Path builtJar) throws IOException {
    FileTime built = Files.getLastModifiedTime(builtJar);
    List<Path> newer = new ArrayList<>();
    for (String dir : List.of("sandbox-sdk-mcp-adapter/src/main", "sandbox-sdk/src/main", "container-agent/src/main")) {
      Path d = repo.resolve(dir);
      if (Files.isDirectory(d)) {
        try (var s = Files.walk(d)) {
          s.filter(Files::isRegularFile).filter(f -> {
            try {
              return Files.getLastModifiedTime(f).compareTo(built) > 0;
            } catch (IOException e) {
              return false;
            }
          }).forEach(newer::add);
        }
      }
    }
    return newer.isEmpty() ? "no source file under */src/main is newer than the jar"
        : "WARNING: " + newer.size() + " source file(s) are newer than the jar (rebuild it), e.g. " + newer.get(0);
  }
}
