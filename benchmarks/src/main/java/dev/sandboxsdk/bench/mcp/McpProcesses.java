package dev.sandboxsdk.bench.mcp;

import static dev.sandboxsdk.bench.mcp.McpBench.jar;
import static dev.sandboxsdk.bench.mcp.McpBench.pidFile;
import static dev.sandboxsdk.bench.mcp.McpBench.serverJvmOpts;
import static dev.sandboxsdk.bench.mcp.McpBench.tmp;

import dev.sandboxsdk.bench.Procs;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * The server processes {@link McpBench} starts: their command line, launch, stop, and the last
 * resort that kills whatever is left; the tail of a server's stderr and a drain for its stdout.
 */
final class McpProcesses {
  static final List<Process> started = new CopyOnWriteArrayList<>();

  private McpProcesses() {}

  static List<String> serverCommand(String... args) {
    List<String> cmd = new ArrayList<>();
    cmd.add(Procs.javaBin());
    cmd.addAll(serverJvmOpts);
    cmd.add("-jar");
    cmd.add(jar.toString());
    cmd.addAll(List.of(args));
    return cmd;
  }

  static Process launch(List<String> cmd) throws IOException {
    Process p = new ProcessBuilder(cmd).directory(tmp.toFile()).start();
    started.add(p);
    if (pidFile != null) { // for mcp.sh, should this JVM die without running its shutdown hook
      Files.writeString(pidFile, p.pid() + "\n", StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    }
    return p;
  }

  /**
   * Stops a server: closes stdin (stdio) or sends SIGTERM (HTTP), waits, then kills what is left
   * of it and its descendants. Returns the nanoseconds until it exited.
   */
  static long stop(Process p, boolean stdinEof) {
    List<ProcessHandle> tree = p.descendants().collect(Collectors.toList());
    long t0 = System.nanoTime();
    try {
      if (stdinEof) {
        p.getOutputStream().close();
      } else {
        p.destroy();
      }
      if (!p.waitFor(20, TimeUnit.SECONDS)) {
        System.out.println("warning: server pid " + p.pid() + " did not exit within 20 s; killing it");
      }
    } catch (IOException e) {
      // already gone
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    long took = System.nanoTime() - t0;
    p.destroyForcibly();
    for (ProcessHandle h : tree) {
      try {
        h.onExit().get(10, TimeUnit.SECONDS);
      } catch (Exception e) {
        System.out.println("warning: pid " + h.pid() + " (under server " + p.pid() + ") still alive; killing it");
        h.destroyForcibly();
      }
    }
    return took;
  }

  /** Last resort (finally and the shutdown hook): every started server and its descendants, at once. */
  static void killAll() {
    for (Process p : started) {
      if (p.isAlive()) {
        List<ProcessHandle> tree = p.descendants().collect(Collectors.toList());
        p.destroyForcibly();
        tree.forEach(ProcessHandle::destroyForcibly);
      }
    }
  }

  /** Child processes of this JVM still alive after everything was stopped (they are killed). */
  static int leftovers() {
    List<ProcessHandle> left = ProcessHandle.current().descendants().filter(ProcessHandle::isAlive)
        .collect(Collectors.toList());
    for (ProcessHandle h : left) {
      System.out.println("leftover process " + h.pid() + ": " + h.info().commandLine().orElse("?"));
      h.destroyForcibly();
    }
    return left.size();
  }

  /** A small tail of a process's stderr, drained on a daemon thread; optionally watches for a line. */
  static final class Tail {
    final Deque<String> lines = new ArrayDeque<>();
    final CompletableFuture<String> match = new CompletableFuture<>();

    Tail(InputStream in, String name, String prefix) {
      Thread t = new Thread(() -> {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
          for (String line; (line = r.readLine()) != null; ) {
            if (prefix != null && line.startsWith(prefix)) {
              match.complete(line);
            }
            synchronized (lines) {
              if (lines.size() == 30) {
                lines.removeFirst();
              }
              lines.addLast(line);
            }
          }
        } catch (IOException ignored) {
          // the process is gone
        }
        match.completeExceptionally(new IllegalStateException("stderr ended"));
      }, name);
      t.setDaemon(true);
      t.start();
    }

    @Override
    public String toString() {
      synchronized (lines) {
        return String.join("\n", lines);
      }
    }
  }

  /** Reads and drops a stream so the process never blocks on it. */
  static final class ProcessOutputDrain {
    ProcessOutputDrain(InputStream in, String name) {
      Thread t = new Thread(() -> {
        try (in) {
          in.transferTo(OutputStream.nullOutputStream());
        } catch (IOException ignored) {
          // gone
        }
      }, name);
      t.setDaemon(true);
      t.start();
    }
  }
}
