package dev.sandboxsdk.internal;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sandboxsdk.SandboxException;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.Reader;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Starts the container agent as a child JVM on 127.0.0.1 with a random port and token, and stops
 * it again. The agent is found on the classpath (the {@code container-agent} artifact), next to
 * the SDK's jar, or at an explicit path ({@link AgentLocator} finds it and the java to run it).
 */
public final class AgentLauncher {
  private static final Logger log = LoggerFactory.getLogger("dev.sandboxsdk.local.LocalSandbox.agent");
  static final String AGENT_MAIN = "dev.sandboxsdk.agent.Main";
  private static final String READY_PREFIX = "SANDBOX_AGENT_READY ";
  private static final int STDERR_TAIL_LINES = 40;
  private static final int MAX_LINE_CHARS = 8 << 10;
  /**
   * The agent's heap unless the caller passes its own {@code -Xmx}. Without it the JVM takes a
   * quarter of the machine's memory (6 GiB on a 24 GiB machine) and the agent, whose buffers for
   * command output are budgeted from its maximum heap, would plan on that much. 512 MiB is the
   * full default output windows (1 MiB per stream) of about 250 processes, far above what a
   * development or test sandbox needs, while the agent idles at about 50 MiB RSS.
   */
  static final String DEFAULT_MAX_HEAP = "-Xmx512m";
  /**
   * The agent's JVM flags, the same as the container image's and the README's (docs/performance-history.md,
   * "Memory and start-up", has the measurements): Serial GC (one core's worth of collector for a
   * small, mostly idle server); 512 KiB thread stacks; an initial heap of 8 MiB, so the young
   * generation starts small and stays near what the agent keeps alive (without it the JVM starts
   * with 1/64 of the machine's memory, and every page of that first eden it writes to stays
   * resident: 173 MiB after 2,000 execs instead of 71 MiB); the heap cap above; no perf-data file.
   */
  static final List<String> DEFAULT_JVM_OPTIONS = List.of("-XX:+UseSerialGC", "-Xss512k", "-Xms8m", DEFAULT_MAX_HEAP,
      "-XX:-UsePerfData");

  private AgentLauncher() {}

  /** A running agent. */
  public static final class Agent {
    private final Process process;
    private final URI url;
    private final String token;
    private final String isolation;
    private final String isolationUnavailable;
    private final AgentCds.Plan cds;

    Agent(Process process, URI url, String token, String isolation, String isolationUnavailable, AgentCds.Plan cds) {
      this.process = process;
      this.url = url;
      this.token = token;
      this.isolation = isolation;
      this.isolationUnavailable = isolationUnavailable;
      this.cds = cds;
    }

    /** The isolation in force, from the ready line: {@code none} or {@code bwrap}. */
    public String isolation() {
      return isolation;
    }

    /** Why the agent's {@code --isolation auto} fell back to none, or null. */
    public String isolationUnavailable() {
      return isolationUnavailable;
    }

    public URI url() {
      return url;
    }

    public String token() {
      return token;
    }

    public long pid() {
      return process.pid();
    }

    public ProcessHandle handle() {
      return process.toHandle();
    }

    /**
     * Stops the agent: SIGTERM, on which it stops every process it started within its grace
     * period; SIGKILL if it is still there after {@code wait}.
     */
    public void stop(Duration wait) {
      AgentLauncher.stop(process, wait);
      if (!process.isAlive()) {
        cds.agentExited(process.exitValue()); // now, not on a pool thread a JVM on its way out may not run
      }
    }
  }

  /** SIGTERM, then SIGKILL if the agent is still there after {@code wait}. */
  private static void stop(Process process, Duration wait) {
    if (!process.isAlive()) {
      return;
    }
    process.destroy();
    try {
      if (!process.waitFor(wait.toMillis(), TimeUnit.MILLISECONDS)) {
        log.warn("the local agent (pid {}) did not stop within {} ms; killing it", process.pid(), wait.toMillis());
        process.destroyForcibly();
        process.waitFor(5, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    }
    closeQuietly(process.getOutputStream());
  }

  private static String joined(Deque<String> lines) {
    synchronized (lines) {
      return String.join("\n", lines);
    }
  }

  /**
   * Starts an agent and waits for its ready line.
   *
   * @param java the java executable, or null to use the one running this JVM
   * @param agentJar the agent jar, or null to find it
   * @param workspace the workspace directory
   * @param jvmArgs extra JVM options for the agent
   * @param agentArgs extra agent options (e.g. {@code --grace-ms 2000})
   * @param startupTimeout how long to wait for the ready line
   */
  public static Agent start(Path java, Path agentJar, Path workspace, List<String> jvmArgs, List<String> agentArgs,
      Duration startupTimeout) {
    return start(java, agentJar, workspace, jvmArgs, agentArgs, Map.of(), startupTimeout);
  }

  /**
   * As {@link #start(Path, Path, Path, List, List, Duration)}, with variables that every command
   * gets ({@code env}: in the agent's environment, named to its {@code --inherit-env}).
   */
  public static Agent start(Path java, Path agentJar, Path workspace, List<String> jvmArgs, List<String> agentArgs,
      Map<String, String> env, Duration startupTimeout) {
    Path javaExe = java != null ? AgentLocator.checkJava(java) : AgentLocator.currentJava();
    String classpath = AgentLocator.classpath(agentJar);
    String token = randomToken();
    List<String> cmd = new ArrayList<>();
    cmd.add(javaExe.toString());
    cmd.addAll(DEFAULT_JVM_OPTIONS); // before the caller's options: a later -Xmx (or -Xms) wins
    AgentCds.Plan cds = AgentCds.plan(java == null, classpath, jvmArgs);
    cmd.addAll(cds.jvmOptions());
    cmd.addAll(jvmArgs);
    cmd.add("-cp");
    cmd.add(classpath);
    cmd.add(AGENT_MAIN);
    cmd.addAll(List.of("--port", "0", "--bind", "127.0.0.1", "--workspace", workspace.toString(),
        "--exit-on-stdin-eof", "--token-stdin"));
    cmd.addAll(agentArgs);
    Map<String, String> source = System.getenv();
    if (!env.isEmpty()) {
      cmd.add("--inherit-env=" + String.join(",", env.keySet()));
      source = new HashMap<>(source);
      source.putAll(env);
    }
    ProcessBuilder pb = new ProcessBuilder(cmd).directory(workspace.toFile());
    agentEnvironment(pb.environment(), source, cmd.subList(cmd.indexOf(AGENT_MAIN) + 1, cmd.size()));
    Process process;
    try {
      process = pb.start();
    } catch (IOException e) {
      throw new SandboxException("cannot start the local agent with " + javaExe + ": " + e.getMessage(), e);
    }
    try {
      // The token goes over the agent's stdin (which stays open for --exit-on-stdin-eof): in its
      // environment or arguments, any command of the same OS user could read it from /proc.
      process.getOutputStream().write((token + "\n").getBytes(StandardCharsets.UTF_8));
      process.getOutputStream().flush();
    } catch (IOException e) {
      // the agent died at once; waiting for its ready line below reports why
    }
    Deque<String> tail = new ArrayDeque<>();
    Thread stderr = drain(process.getErrorStream(), "sandbox-agent-stderr-" + process.pid(), line -> {
      log.debug("{}", line);
      synchronized (tail) {
        if (tail.size() == STDERR_TAIL_LINES) {
          tail.removeFirst();
        }
        tail.addLast(line);
      }
    });
    CompletableFuture<String> ready = new CompletableFuture<>();
    drain(process.getInputStream(), "sandbox-agent-stdout-" + process.pid(), line -> {
      if (line.startsWith(READY_PREFIX)) {
        ready.complete(line.substring(READY_PREFIX.length()));
      }
    });
    process.onExit().thenRun(() -> ready.completeExceptionally(new IllegalStateException("exited")));
    process.onExit().thenAccept(p -> cds.agentExited(p.exitValue())); // an agent that stops on its own (idle)
    String readyJson = readyLine(process, ready, startupTimeout, cmd, tail, stderr);
    return agent(process, readyJson, token, cds);
  }

  /** Waits for the agent's ready line; stops the agent if it does not come. */
  private static String readyLine(Process process, CompletableFuture<String> ready, Duration startupTimeout,
      List<String> cmd, Deque<String> tail, Thread stderr) {
    try {
      return ready.get(startupTimeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      stop(process, Duration.ofSeconds(2));
      joinQuietly(stderr);
      throw new SandboxException("the local agent did not print its ready line within " + startupTimeout.toMillis()
          + " ms; its last output:\n" + joined(tail), e);
    } catch (ExecutionException e) {
      waitQuietly(process);
      joinQuietly(stderr);
      throw new SandboxException("the local agent exited during startup with status " + exitValue(process)
          + " (command: " + String.join(" ", cmd) + "); its last output:\n" + joined(tail), e);
    } catch (InterruptedException e) {
      stop(process, Duration.ofSeconds(2));
      Thread.currentThread().interrupt();
      throw new SandboxException("interrupted while starting the local agent", e);
    }
  }

  /** The running agent its ready line describes; stops the agent if the line is unreadable. */
  private static Agent agent(Process process, String readyJson, String token, AgentCds.Plan cds) {
    URI url;
    String isolation;
    String isolationUnavailable;
    try {
      JsonNode n = Wire.MAPPER.readTree(readyJson);
      url = new URI(n.path("url").asText());
      isolation = n.path("isolation").asText("none"); // agents before isolation existed: none
      isolationUnavailable = n.hasNonNull("isolationUnavailable") ? n.get("isolationUnavailable").asText() : null;
    } catch (IOException | URISyntaxException e) {
      stop(process, Duration.ofSeconds(2));
      throw new SandboxException("the local agent printed an unreadable ready line: " + readyJson, e);
    }
    log.debug("local agent pid {} ready at {}", process.pid(), url);
    return new Agent(process, url, token, isolation, isolationUnavailable, cds);
  }

  // ---- the agent's environment

  /**
   * What the agent's JVM gets of this JVM's environment besides the names given to
   * {@code --inherit-env}: what commands get by default (the agent passes these on), plus the
   * locale, which also sets how the agent's JVM encodes file names and arguments.
   */
  static final List<String> AGENT_ENV = List.of("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMPDIR");
  static final String TOKEN_ENV = "SANDBOX_AGENT_TOKEN";
  private static final String INHERIT_ENV = "--inherit-env";

  /**
   * Replaces {@code target} (the agent's environment) with {@link #AGENT_ENV} and the names given to
   * {@code --inherit-env} in {@code agentArgs} that {@code source} has (the token goes over stdin,
   * never here, even if named). Nothing else
   * of this JVM's environment reaches the agent, so nothing else can reach a command even if the
   * agent had a bug. Not passed on purpose: {@code JAVA_HOME} (the agent's java is named
   * explicitly), and {@code JAVA_TOOL_OPTIONS}, {@code _JAVA_OPTIONS}, {@code JDK_JAVA_OPTIONS}
   * (they would load this application's debug or coverage agents and options into the agent's
   * JVM; use {@code LocalSandbox.Builder.jvmArgument} for the agent's JVM).
   */
  static void agentEnvironment(Map<String, String> target, Map<String, String> source,
      List<String> agentArgs) {
    Set<String> names = new LinkedHashSet<>(AGENT_ENV);
    names.addAll(inheritedNames(agentArgs));
    names.remove(TOKEN_ENV);
    target.clear();
    for (String name : names) {
      String value = source.get(name);
      if (value != null) {
        target.put(name, value);
      }
    }
  }

  /** The names given to {@code --inherit-env} (as {@code --inherit-env A,B} or {@code --inherit-env=A,B}). */
  static List<String> inheritedNames(List<String> agentArgs) {
    List<String> names = new ArrayList<>();
    for (int i = 0; i < agentArgs.size(); i++) {
      String arg = agentArgs.get(i);
      String value = null;
      if (arg.equals(INHERIT_ENV) && i + 1 < agentArgs.size()) {
        value = agentArgs.get(++i);
      } else if (arg.startsWith(INHERIT_ENV + "=")) {
        value = arg.substring(INHERIT_ENV.length() + 1);
      }
      if (value != null) {
        for (String name : value.split(",")) {
          if (!name.isBlank()) {
            names.add(name.trim());
          }
        }
      }
    }
    return names;
  }

  // ---- helpers

  private static String randomToken() {
    byte[] b = new byte[32];
    new SecureRandom().nextBytes(b);
    return Base64.getUrlEncoder().withoutPadding().encodeToString(b);
  }

  /**
   * Reads lines on a daemon thread until the stream ends. A line longer than
   * {@link #MAX_LINE_CHARS} is cut there (the rest up to its newline is dropped), so a child that
   * writes without newlines cannot grow this JVM's memory.
   */
  private static Thread drain(InputStream in, String name, Consumer<String> lines) {
    Thread t = new Thread(() -> {
      try (Reader r = new InputStreamReader(in, StandardCharsets.UTF_8)) {
        StringBuilder line = new StringBuilder();
        boolean cut = false;
        char[] buf = new char[8192];
        for (int n; (n = r.read(buf)) != -1; ) {
          for (int i = 0; i < n; i++) {
            char c = buf[i];
            if (c == '\n') {
              lines.accept(finish(line, cut));
              line.setLength(0);
              cut = false;
            } else if (line.length() < MAX_LINE_CHARS) {
              line.append(c);
            } else {
              cut = true;
            }
          }
        }
        if (line.length() > 0) {
          lines.accept(finish(line, cut));
        }
      } catch (IOException ignored) {
        // the agent is gone
      }
    }, name);
    t.setDaemon(true);
    t.start();
    return t;
  }

  private static String finish(StringBuilder line, boolean cut) {
    int end = line.length() > 0 && line.charAt(line.length() - 1) == '\r' ? line.length() - 1 : line.length();
    return line.substring(0, end) + (cut ? " [line cut at " + MAX_LINE_CHARS + " chars]" : "");
  }

  private static void waitQuietly(Process p) {
    try {
      p.waitFor(2, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Lets the stderr reader reach end of file before its tail is reported: the exit is seen before
   * the reader has taken the last lines from the pipe (say, while it skips a long line). Bounded,
   * since a child the agent left behind may hold the pipe open.
   */
  private static void joinQuietly(Thread t) {
    try {
      t.join(2_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static String exitValue(Process p) {
    try {
      return Integer.toString(p.exitValue());
    } catch (IllegalThreadStateException e) {
      return "unknown";
    }
  }

  private static void closeQuietly(Closeable c) {
    try {
      c.close();
    } catch (IOException ignored) {
      // nothing to do
    }
  }
}
