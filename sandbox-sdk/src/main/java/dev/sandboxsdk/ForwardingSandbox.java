package dev.sandboxsdk;

import dev.sandboxsdk.local.LocalSandbox;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;

/**
 * A {@link Sandbox} that forwards every command and process call, and every facet accessor
 * ({@link #files()}, {@link #ports()}, ...), to another sandbox, usually the HTTP client of an
 * agent. Providers ({@link LocalSandbox}, the container and Kubernetes providers) extend it and add
 * their own lifecycle: {@link #destroy()} and {@link #close()} are left to the subclass. A facet
 * is the delegate's own, got from {@link #delegate()} when the accessor is called, so a capability
 * added to {@link Sandbox} as a facet needs one accessor here and nothing in the subclasses.
 *
 * <p>Thread-safe if the delegate is.
 */
public abstract class ForwardingSandbox implements Sandbox {

  /** For subclasses. */
  protected ForwardingSandbox() {}

  /** The sandbox every call goes to. Called on every call; must not return {@code null}. */
  protected abstract Sandbox delegate();

  @Override
  public ExecResult exec(Command command, ExecOptions options) {
    return delegate().exec(command, options);
  }

  @Override
  public CompletableFuture<ExecResult> execAsync(Command command, ExecOptions options) {
    return delegate().execAsync(command, options);
  }

  @Override
  public Flow.Publisher<ExecEvent> execStream(Command command, ExecOptions options) {
    return delegate().execStream(command, options);
  }

  @Override
  public SandboxProcess startProcess(Command command, ProcessOptions options) {
    return delegate().startProcess(command, options);
  }

  @Override
  public List<ProcessInfo> listProcesses() {
    return delegate().listProcesses();
  }

  @Override
  public Optional<ProcessInfo> getProcess(String processId) {
    return delegate().getProcess(processId);
  }

  @Override
  public SandboxProcess attachProcess(String processId) {
    return delegate().attachProcess(processId);
  }

  @Override
  public void killProcess(String processId, Signal signal) {
    delegate().killProcess(processId, signal);
  }

  @Override
  public int killAllProcesses() {
    return delegate().killAllProcesses();
  }

  @Override
  public ProcessLogs getProcessLogs(String processId, LogRange range) {
    return delegate().getProcessLogs(processId, range);
  }

  @Override
  public Flow.Publisher<LogEvent> streamProcessLogs(String processId, LogRange from) {
    return delegate().streamProcessLogs(processId, from);
  }

  @Override
  public int cleanupCompletedProcesses() {
    return delegate().cleanupCompletedProcesses();
  }

  @Override
  public SandboxFiles files() {
    return delegate().files();
  }

  @Override
  public SandboxPorts ports() {
    return delegate().ports();
  }

  @Override
  public SandboxGit git() {
    return delegate().git();
  }

  @Override
  public SandboxCheckpoints checkpoints() {
    return delegate().checkpoints();
  }

  @Override
  public SandboxTerminals terminals() {
    return delegate().terminals();
  }

  @Override
  public SandboxEgress egress() {
    return delegate().egress();
  }

  @Override
  public SandboxSessions sessions() {
    return delegate().sessions();
  }

  @Override
  public SandboxCode code() {
    return delegate().code();
  }
}
