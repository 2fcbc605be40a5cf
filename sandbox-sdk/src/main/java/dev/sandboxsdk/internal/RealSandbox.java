package dev.sandboxsdk.internal;

import dev.sandboxsdk.Command;
import dev.sandboxsdk.ExecEvent;
import dev.sandboxsdk.ExecOptions;
import dev.sandboxsdk.ExecResult;
import dev.sandboxsdk.LogEvent;
import dev.sandboxsdk.LogRange;
import dev.sandboxsdk.PortWaitOptions;
import dev.sandboxsdk.ProcessInfo;
import dev.sandboxsdk.ProcessLogs;
import dev.sandboxsdk.ProcessOptions;
import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.SandboxCheckpoints;
import dev.sandboxsdk.SandboxCode;
import dev.sandboxsdk.SandboxEgress;
import dev.sandboxsdk.SandboxSessions;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxFiles;
import dev.sandboxsdk.SandboxGit;
import dev.sandboxsdk.SandboxPorts;
import dev.sandboxsdk.SandboxProcess;
import dev.sandboxsdk.SandboxTerminals;
import dev.sandboxsdk.Signal;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import okhttp3.OkHttpClient;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link Sandbox} that talks protocol v1 to an agent over HTTP. It owns the lifecycle (closing,
 * destroying) and the facets, and hands each call to the class that owns it: {@link ExecCalls}
 * for exec, {@link ProcessCalls} for background processes and logs, both over {@link AgentHttp}
 * (requests, answers, timeouts) and {@link EventStreams}. Thread-safe: all mutable state is in
 * concurrent collections, atomics and volatile fields.
 */
public final class RealSandbox implements Sandbox {
  private static final Logger log = LoggerFactory.getLogger(RealSandbox.class);

  final AgentHttp http;
  final EventStreams streams;
  final ProcessCalls processes;
  private final ExecCalls execs;
  private final RealFiles files;
  private final RealGit git;
  private final RealCheckpoints checkpoints;
  private final RealPorts ports;
  private final RealTerminals terminals;
  private final RealEgress egress;
  private final RealSessions sessions;
  private final RealCode code;

  /** Use {@link Sandbox#builder()} or {@code LocalSandbox}. */
  public RealSandbox(URI baseUrl, String token, Duration connectTimeout, Duration readTimeout, Duration execTimeout,
      Duration streamIdleTimeout, OkHttpClient shared, Activity activity) {
    this.http = new AgentHttp(baseUrl, token, connectTimeout, readTimeout, streamIdleTimeout, shared, activity);
    this.streams = new EventStreams(http);
    this.execs = new ExecCalls(http, streams, execTimeout);
    this.processes = new ProcessCalls(this, http, streams);
    this.files = new RealFiles(this);
    this.git = new RealGit(this);
    this.checkpoints = new RealCheckpoints(this);
    this.ports = new RealPorts(this);
    this.terminals = new RealTerminals(this);
    this.egress = new RealEgress(http);
    this.sessions = new RealSessions(http, execs);
    this.code = new RealCode(http, streams);
  }

  @Override
  public String toString() {
    return "Sandbox{" + http.base() + (http.isClosed() ? ", closed" : "") + "}"; // never the token
  }

  // ---- exec

  @Override
  public ExecResult exec(Command command, ExecOptions options) {
    return execs.exec(command, options);
  }

  @Override
  public CompletableFuture<ExecResult> execAsync(Command command, ExecOptions options) {
    return execs.execAsync(command, options);
  }

  @Override
  public Flow.Publisher<ExecEvent> execStream(Command command, ExecOptions options) {
    return execs.execStream(command, options);
  }

  // ---- background processes

  @Override
  public SandboxProcess startProcess(Command command, ProcessOptions options) {
    return processes.startProcess(command, options);
  }

  @Override
  public List<ProcessInfo> listProcesses() {
    return processes.listProcesses();
  }

  @Override
  public Optional<ProcessInfo> getProcess(String processId) {
    return processes.getProcess(processId);
  }

  @Override
  public SandboxProcess attachProcess(String processId) {
    return processes.attachProcess(processId);
  }

  @Override
  public void killProcess(String processId, Signal signal) {
    processes.killProcess(processId, signal);
  }

  @Override
  public int killAllProcesses() {
    return processes.killAllProcesses();
  }

  @Override
  public ProcessLogs getProcessLogs(String processId, LogRange range) {
    return processes.getProcessLogs(processId, range);
  }

  @Override
  public Flow.Publisher<LogEvent> streamProcessLogs(String processId, LogRange from) {
    return processes.streamProcessLogs(processId, from);
  }

  @Override
  public int cleanupCompletedProcesses() {
    return processes.cleanupCompletedProcesses();
  }

  // ---- facets

  @Override
  public SandboxFiles files() {
    return files;
  }

  @Override
  public SandboxPorts ports() {
    return ports;
  }

  /** {@link RealSandboxProcess#waitForPort}: fails as soon as the process ends. */
  void waitForPort(int port, PortWaitOptions options, String processId) {
    ports.await(port, options, processId);
  }

  @Override
  public SandboxGit git() {
    return git;
  }

  @Override
  public SandboxCheckpoints checkpoints() {
    return checkpoints;
  }

  @Override
  public SandboxTerminals terminals() {
    return terminals;
  }

  @Override
  public SandboxEgress egress() {
    return egress;
  }

  @Override
  public SandboxSessions sessions() {
    return sessions;
  }

  @Override
  public SandboxCode code() {
    return code;
  }

  // ---- lifecycle

  @Override
  public void destroy() {
    if (http.isClosed()) {
      return;
    }
    try {
      killAllProcesses();
      cleanupCompletedProcesses();
    } finally {
      close();
    }
  }

  @Override
  public void close() {
    closeWith("the sandbox was closed");
  }

  /** Closes with a reason that later calls report. */
  public void closeWith(String reason) {
    if (http.close(reason)) {
      log.debug("closed sandbox client for {}", http.base());
    }
  }

  public boolean isClosed() {
    return http.isClosed();
  }

  /**
   * How long a stream (or an {@code exec} between heartbeats) may be silent: configured, or
   * derived from the agent's keep-alive interval, which the first call fetches from
   * {@code /api/version} on the calling thread.
   *
   * @throws SandboxException if the window must be fetched and that fails
   */
  public Duration streamIdleTimeout() {
    return http.streamIdleTimeout();
  }
}
