package dev.sandboxsdk;

import dev.sandboxsdk.local.LocalSandbox;
import dev.sandboxsdk.internal.Checks;
import dev.sandboxsdk.internal.RealSandbox;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import okhttp3.OkHttpClient;

/**
 * A sandbox: a place to run commands and manage the processes started there. Every further
 * capability is a facet, a view got from the sandbox: its files ({@link #files()}), ports
 * ({@link #ports()}), git ({@link #git()}), checkpoints ({@link #checkpoints()}), terminals
 * ({@link #terminals()}), egress ({@link #egress()}), shell sessions ({@link #sessions()}) and
 * code contexts ({@link #code()}).
 *
 * <p>Get one with {@link LocalSandbox#start()} (the embedded default: a local agent, no Docker)
 * or {@link #connect(URI, String)} (an agent that already runs, e.g. in a container).
 *
 * <pre>{@code
 * try (Sandbox sandbox = LocalSandbox.start()) {
 *   ExecResult r = sandbox.exec("echo hello");
 *   System.out.print(r.stdout());                       // hello
 *
 *   SandboxProcess web = sandbox.startProcess("python3 -m http.server 8000");
 *   web.waitForLog(Pattern.compile("Serving HTTP"), Duration.ofSeconds(10));
 *   web.kill();
 * }
 * }</pre>
 *
 * <p><b>Threading.</b> Implementations are thread-safe: any number of threads may call any
 * method at once. Blocking methods block only the calling thread; the publishers deliver
 * signals on SDK threads, one at a time per subscription.
 *
 * <p><b>Errors.</b> Every method throws unchecked {@link SandboxException}s (see there for the
 * subclasses); a command's non-zero exit code is data in {@link ExecResult}. After
 * {@link #close()}, every method throws {@link IllegalStateException}.
 */
public interface Sandbox extends AutoCloseable {

  /**
   * Connects to an agent that is already running.
   *
   * @param baseUrl the agent's address, e.g. {@code http://127.0.0.1:3000}
   * @param token its bearer token
   */
  static Sandbox connect(URI baseUrl, String token) {
    return builder().baseUrl(baseUrl).token(token).build();
  }

  /** A builder for a connection to a running agent, with every setting at its default. */
  static Builder builder() {
    return new Builder();
  }

  // ---- exec

  /**
   * Runs a shell command line ({@code /bin/sh -c}) and waits for it to finish.
   *
   * @throws SandboxException if the agent refused or could not run it (a non-zero exit is not an error)
   */
  default ExecResult exec(String command) {
    return exec(Command.shell(command), ExecOptions.defaults());
  }

  /**
   * Runs a command and blocks until it has finished and its output was read. This is the form
   * for an argv command or for options; {@link #exec(String)} covers a plain shell line:
   *
   * <pre>{@code
   * sandbox.exec(Command.of("ls", "-la"), ExecOptions.defaults());
   * sandbox.exec(Command.shell("npm test"), ExecOptions.builder().cwd("app").build());
   * }</pre>
   *
   * <p>The agent enforces {@code options.timeout()}: when it expires the command's whole
   * process group is killed and the result says {@link ExecResult#timedOut()} with exit code 124.
   * If the calling thread is interrupted, the SDK asks the agent to kill the command at once
   * (best effort, without waiting for the answer), cancels the HTTP call, and throws a
   * {@link SandboxException} right away with the interrupt flag restored.
   *
   * @throws SandboxNotFoundException if an argv program does not exist ({@code COMMAND_NOT_FOUND})
   * @throws SandboxInvalidRequestException for invalid options (e.g. a cwd that does not exist)
   * @throws SandboxConnectionException if the agent cannot be reached or the connection breaks
   * @throws SandboxTimeoutException if the agent stops answering
   * @throws SandboxException for any other failure
   */
  ExecResult exec(Command command, ExecOptions options);

  /** Runs a shell command line asynchronously; see {@link #execAsync(Command, ExecOptions)}. */
  default CompletableFuture<ExecResult> execAsync(String command) {
    return execAsync(Command.shell(command), ExecOptions.defaults());
  }

  /**
   * Runs a command without blocking. The future completes with the result, or exceptionally
   * with a {@link SandboxException}. {@code cancel(true)} (or {@code cancel(false)}) asks the
   * agent to kill the command's process group at once and aborts the HTTP call; if that request
   * fails, the agent still kills the group when it notices the closed connection.
   */
  CompletableFuture<ExecResult> execAsync(Command command, ExecOptions options);

  /** Streams a shell command line's output; see {@link #execStream(Command, ExecOptions)}. */
  default Flow.Publisher<ExecEvent> execStream(String command) {
    return execStream(Command.shell(command), ExecOptions.defaults());
  }

  /**
   * Runs a command and publishes its output as it arrives.
   *
   * <pre>{@code
   * sandbox.execStream("make").subscribe(new Flow.Subscriber<>() {
   *   Flow.Subscription s;
   *   public void onSubscribe(Flow.Subscription s) { this.s = s; s.request(16); }
   *   public void onNext(ExecEvent e) {
   *     if (e instanceof ExecEvent.Stdout out) System.out.print(out.text());
   *     else if (e instanceof ExecEvent.Complete done) System.out.println("exit " + done.exitCode());
   *     s.request(1);
   *   }
   *   public void onError(Throwable t) { t.printStackTrace(); }
   *   public void onComplete() { }
   * });
   * }</pre>
   *
   * <p>The publisher is <b>lazy</b> (nothing runs until a subscriber requests the first event),
   * <b>single-use</b> (a second subscriber gets {@code onError(IllegalStateException)}: re-running
   * a command with side effects must be explicit) and <b>demand-driven</b>: the SDK reads from the
   * connection only while the subscriber has requested events, and the agent pauses the command
   * when the connection is full, so a slow subscriber slows the command down instead of
   * buffering without bound. Events: {@link ExecEvent.Start}, output chunks, then exactly one
   * {@link ExecEvent.Complete}, followed by {@code onComplete}. A stream that breaks, goes
   * silent past the agent's keep-alive interval, or ends without {@code Complete} ends with
   * {@code onError} ({@link SandboxConnectionException} or {@link SandboxTimeoutException}),
   * never with a fake success. {@code cancel()} before {@code Complete} asks the agent to kill
   * the command at once and closes the connection. {@code options.onOutput()} and {@code maxOutputBytes()} are not used here.
   */
  Flow.Publisher<ExecEvent> execStream(Command command, ExecOptions options);

  // ---- background processes

  /** Starts a shell command line in the background; see {@link #startProcess(Command, ProcessOptions)}. */
  default SandboxProcess startProcess(String command) {
    return startProcess(Command.shell(command), ProcessOptions.defaults());
  }

  /**
   * Starts a command in the background and returns at once. The process outlives every
   * connection; the agent keeps a window of its recent output (1 MiB per stream by default).
   *
   * @throws SandboxInvalidRequestException if the process id is taken ({@code PROCESS_ALREADY_EXISTS})
   *     or an option is invalid
   * @throws SandboxServerException if the agent is at its process limit ({@code TOO_MANY_PROCESSES})
   * @throws SandboxException for any other failure
   */
  SandboxProcess startProcess(Command command, ProcessOptions options);

  /**
   * Lists the background processes the agent has records of, oldest first. To see the processes
   * in one status, filter by {@link ProcessInfo#status()}.
   */
  List<ProcessInfo> listProcesses();

  /** A process's current state, or empty if there is no process with this id. */
  Optional<ProcessInfo> getProcess(String processId);

  /**
   * A handle to an existing background process, e.g. one started by another client.
   *
   * @throws ProcessNotFoundException if there is none with this id
   */
  SandboxProcess attachProcess(String processId);

  /**
   * Sends {@code signal} to a background process's whole process group, then SIGKILL after the
   * agent's grace period. Returns once the signal is sent. Killing a finished process succeeds.
   * {@link Signal#SIGTERM} is the usual way to stop a process; on a handle,
   * {@link SandboxProcess#kill()} does the same.
   *
   * @throws ProcessNotFoundException if there is no process with this id
   */
  void killProcess(String processId, Signal signal);

  /**
   * Kills every background process and every process left behind by earlier commands, and
   * waits until they are gone (up to the grace period plus a few seconds).
   *
   * @return how many background processes were running and got killed
   */
  int killAllProcesses();

  /**
   * Everything the agent retains of a process's output.
   *
   * @throws ProcessNotFoundException if there is no process with this id
   */
  default ProcessLogs getProcessLogs(String processId) {
    return getProcessLogs(processId, LogRange.all());
  }

  /**
   * A page of a process's retained output, from byte offsets per stream; continue with
   * {@link ProcessLogs#next()}.
   *
   * @throws ProcessNotFoundException if there is no process with this id
   * @throws SandboxInvalidRequestException if an offset lies beyond what the stream has produced
   */
  ProcessLogs getProcessLogs(String processId, LogRange range);

  /**
   * Streams a process's output from the beginning of what the agent retains; see
   * {@link #streamProcessLogs(String, LogRange)}.
   */
  default Flow.Publisher<LogEvent> streamProcessLogs(String processId) {
    return streamProcessLogs(processId, LogRange.all());
  }

  /**
   * Publishes a process's output: {@link LogEvent.Info}, the retained output from the range's
   * offset per stream, live output, then {@link LogEvent.Exit} and {@code onComplete}. Continue a
   * {@link #getProcessLogs} page with {@code streamProcessLogs(id, logs.next())}, so output of
   * both streams is read exactly once. {@link LogRange#maxBytes()} does not apply to streams. An
   * offset beyond what that stream has produced ends the stream with {@code onError}
   * ({@link SandboxInvalidRequestException}).
   *
   * <p>Lazy, single-use and demand-driven like {@link #execStream}; a slow subscriber never
   * slows the process (it writes into the agent's window) but may fall behind that window, which
   * shows as {@link LogEvent.Truncated}. If the connection drops, the publisher reconnects from
   * the last offsets of each stream (a few times, with backoff), so every byte is delivered once.
   * A stream that cannot be resumed ends with {@code onError}. {@code cancel()} closes the
   * connection and does nothing to the process.
   */
  Flow.Publisher<LogEvent> streamProcessLogs(String processId, LogRange from);

  /**
   * Forgets the records of all finished background processes (their ids become free).
   *
   * @return how many records were dropped
   */
  int cleanupCompletedProcesses();

  // ---- files

  /**
   * The sandbox's files: read, write, list, move and delete them, with the workspace as the base
   * of relative paths. Contents are streamed where the method says so and transferred byte for
   * byte. The view is thread-safe, costs nothing to get, and lives as long as this sandbox.
   *
   * <pre>{@code
   * sandbox.files().writeString("notes.txt", "hello\n");
   * sandbox.exec("cat notes.txt").stdout();                  // hello
   * }</pre>
   *
   * @see SandboxFiles
   */
  SandboxFiles files();

  // ---- further capabilities, one facet each

  /**
   * The sandbox's ports: wait until a server is ready, expose it with a preview URL.
   *
   * <pre>{@code
   * sandbox.startProcess("python3 -m http.server 8000");
   * sandbox.ports().waitFor(8000);
   * URI url = sandbox.ports().expose(8000).url();
   * }</pre>
   *
   * @see SandboxPorts
   */
  SandboxPorts ports();

  /**
   * Git in the sandbox: clone repositories into the workspace.
   *
   * <pre>{@code
   * sandbox.git().checkout("https://github.com/octocat/Hello-World.git");
   * }</pre>
   *
   * @see SandboxGit
   */
  SandboxGit git();

  /**
   * Checkpoints of the workspace: make one, list them, restore or delete one.
   *
   * <pre>{@code
   * Checkpoint base = sandbox.checkpoints().create("after-install");
   * sandbox.checkpoints().restore(base.id());
   * }</pre>
   *
   * @see SandboxCheckpoints
   */
  SandboxCheckpoints checkpoints();

  /**
   * Terminals: run a command on a pseudo-terminal, or attach to one that runs.
   *
   * <pre>{@code
   * Terminal term = sandbox.terminals().open(TerminalOptions.defaults());
   * }</pre>
   *
   * @see SandboxTerminals
   */
  SandboxTerminals terminals();

  /**
   * The egress proxy: the policy outbound connections go through, and what they tried.
   *
   * <pre>{@code
   * sandbox.egress().update(EgressPolicy.allowList("pypi.org:443"));
   * }</pre>
   *
   * @see SandboxEgress
   */
  SandboxEgress egress();

  /**
   * Shell sessions: commands that share a shell's directory, variables, functions and options.
   *
   * <pre>{@code
   * try (Session s = sandbox.sessions().create()) {
   *   s.exec("cd app && export MODE=test");
   *   s.exec("echo $MODE in $PWD");
   * }
   * }</pre>
   *
   * @see SandboxSessions
   */
  SandboxSessions sessions();

  /**
   * Code contexts: stateful Python and JavaScript interpreters whose variables persist between runs.
   *
   * <pre>{@code
   * try (CodeContext py = sandbox.code().createContext(CodeContextOptions.of(CodeLanguage.PYTHON))) {
   *   py.run("x = 21");
   *   System.out.println(py.run("x * 2").value().orElseThrow().text()); // 42
   * }
   * }</pre>
   *
   * @see SandboxCode
   */
  SandboxCode code();

  // ---- lifecycle

  /**
   * Kills every process and releases the sandbox: a {@link LocalSandbox} also stops its agent and
   * deletes its workspace; for a connected agent, process records are cleaned up and the
   * connection is closed (the agent itself keeps running). Idempotent.
   */
  void destroy();

  /**
   * Releases this client: cancels open streams and in-flight calls, and shuts down the HTTP
   * client if the SDK created it. A {@link LocalSandbox} also stops its agent and everything it
   * spawned. Idempotent; never blocks on a subscriber that stopped reading.
   */
  @Override
  void close();

  /**
   * Configures a connection to a running agent. Not thread-safe; the {@link Sandbox} it builds is.
   */
  final class Builder {
    URI baseUrl;
    String token;
    Duration connectTimeout = Duration.ofSeconds(10);
    Duration readTimeout = Duration.ofSeconds(30);
    Duration execTimeout;
    Duration streamIdleTimeout;
    OkHttpClient okHttpClient;

    Builder() {}

    /** The agent's address, e.g. {@code http://127.0.0.1:3000}. Required. */
    public Builder baseUrl(URI baseUrl) {
      this.baseUrl = Objects.requireNonNull(baseUrl, "baseUrl == null");
      return this;
    }

    /** The agent's bearer token. Never printed by {@code toString}. */
    public Builder token(String token) {
      this.token = Objects.requireNonNull(token, "token == null");
      return this;
    }

    /** Time allowed to open a TCP connection (default 10 s). */
    public Builder connectTimeout(Duration timeout) {
      this.connectTimeout = Checks.positive(timeout, "connectTimeout");
      return this;
    }

    /**
     * How long a non-streaming call may wait for the agent's answer (default 30 s). {@code exec}
     * calls are not affected: the agent sends keep-alive bytes while a command runs, and they
     * read with the {@linkplain #streamIdleTimeout stream liveness window} (31 s while this
     * client does not know it yet).
     */
    public Builder readTimeout(Duration timeout) {
      this.readTimeout = Checks.positive(timeout, "readTimeout");
      return this;
    }

    /**
     * The timeout of commands run by {@code exec}, {@code execAsync} and {@code execStream} whose
     * options set none (default: none; a per-call {@link ExecOptions#timeout()} wins).
     */
    public Builder execTimeout(Duration timeout) {
      this.execTimeout = Checks.positive(timeout, "execTimeout");
      return this;
    }

    /**
     * How long a stream may stay silent (no event and no keep-alive) before it counts as dead;
     * also how long {@code exec} and {@code execAsync} wait between the agent's heartbeats.
     * Default: twice the agent's keep-alive interval (read from {@code /api/version} before the
     * first stream) plus one second.
     */
    public Builder streamIdleTimeout(Duration timeout) {
      this.streamIdleTimeout = Checks.positive(timeout, "streamIdleTimeout");
      return this;
    }

    /**
     * An HTTP client to share (its connection pool and dispatcher). The SDK derives its own
     * settings from it and never shuts it down; without one, the SDK creates and owns a client.
     */
    public Builder okHttpClient(OkHttpClient client) {
      this.okHttpClient = Objects.requireNonNull(client, "client == null");
      return this;
    }

    /**
     * Builds the client. Does not contact the agent.
     *
     * @throws IllegalStateException if the base URL or the token is missing
     */
    public Sandbox build() {
      if (baseUrl == null) {
        throw new IllegalStateException("baseUrl is required");
      }
      if (token == null) {
        throw new IllegalStateException("token is required");
      }
      return new RealSandbox(baseUrl, token, connectTimeout, readTimeout, execTimeout, streamIdleTimeout,
          okHttpClient, null);
    }

    @Override
    public String toString() {
      return "Sandbox.Builder{baseUrl=" + baseUrl + ", token=" + (token == null ? "unset" : "██") + "}";
    }
  }
}
