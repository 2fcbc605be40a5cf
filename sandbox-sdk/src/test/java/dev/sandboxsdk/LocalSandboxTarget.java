package dev.sandboxsdk;

import dev.sandboxsdk.local.LocalSandbox;
import dev.sandboxsdk.local.Isolation;
import dev.sandboxsdk.contract.ExecProbe;
import dev.sandboxsdk.contract.SandboxContract;
import dev.sandboxsdk.contract.SandboxProbe;
import dev.sandboxsdk.contract.SandboxTarget;
import java.net.URI;
import java.util.List;

/**
 * A {@link LocalSandbox} as a {@link SandboxContract} target, looked into either from the host
 * ({@link HostProbe}) or through the sandbox itself ({@link ExecProbe}).
 */
final class LocalSandboxTarget implements SandboxTarget {
  private final LocalSandbox sandbox;
  private final boolean probeByExec;

  private LocalSandboxTarget(LocalSandbox sandbox, boolean probeByExec) {
    this.sandbox = sandbox;
    this.probeByExec = probeByExec;
  }

  /** Looks from the host, translating the pids of isolated commands from their namespaces. */
  private SandboxProbe hostProbe(java.nio.file.Path workspace) {
    return sandbox.isolation() == Isolation.ISOLATED ? new NamespacedHostProbe(workspace) : new HostProbe(workspace);
  }

  /** The agent options of {@link #startOwnAgent()}: the suite's, isolated like the sandbox under test. */
  private String[] ownAgentArguments() {
    List<String> args = new java.util.ArrayList<>(SandboxContract.agentArguments());
    args.addAll(List.of("--isolation", sandbox.isolation() == Isolation.ISOLATED ? "bwrap" : "none"));
    return args.toArray(new String[0]);
  }

  /** Starts a local sandbox with the suite's agent options; {@code probeByExec} picks the probe. */
  static LocalSandboxTarget start(boolean probeByExec) {
    return start(probeByExec, Isolation.NONE);
  }

  /**
   * As {@link #start(boolean)}, isolated as asked. Isolated, each command has its own PID
   * namespace, so an {@link ExecProbe} would see nothing of the other commands' processes: probe
   * an isolated sandbox from the host.
   */
  static LocalSandboxTarget start(boolean probeByExec, Isolation isolation) {
    LocalSandbox.Builder b = LocalSandbox.builder()
        .isolation(isolation)
        .gracePeriod(SandboxContract.GRACE_PERIOD)
        .keepAlive(true);
    for (String option : SandboxContract.AGENT_OPTIONS) {
      b.agentArgument(option);
    }
    return new LocalSandboxTarget(b.start(), probeByExec);
  }

  @Override
  public Sandbox sandbox() {
    return sandbox;
  }

  @Override
  public URI baseUrl() {
    return sandbox.baseUrl();
  }

  @Override
  public String workspace() {
    return sandbox.workspace().toString();
  }

  @Override
  public SandboxProbe probe() {
    return probeByExec ? new ExecProbe(sandbox, workspace()) : hostProbe(sandbox.workspace());
  }

  /** The agent jar started by hand ({@link ItAgent}): LocalSandbox does not tell its token. */
  @Override
  public OwnAgent startOwnAgent() throws Exception {
    ItAgent agent = ItAgent.start(ownAgentArguments());
    if (probeByExec) {
      return OwnAgent.connect(agent.url(), agent.token(), agent.workspace().toString(), agent);
    }
    SandboxProbe probe = hostProbe(agent.workspace());
    return new OwnAgent() {
      @Override
      public Sandbox.Builder clientBuilder() {
        return Sandbox.builder().baseUrl(agent.url()).token(agent.token());
      }

      @Override
      public SandboxProbe probe() {
        return probe;
      }

      @Override
      public void close() throws Exception {
        agent.close();
      }
    };
  }

  @Override
  public void close() {
    sandbox.close();
  }

  @Override
  public String toString() {
    return "LocalSandboxTarget{" + sandbox + (probeByExec ? ", probed by exec" : ", probed from the host") + "}";
  }
}
