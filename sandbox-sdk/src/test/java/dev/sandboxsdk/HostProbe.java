package dev.sandboxsdk;

import dev.sandboxsdk.local.LocalSandbox;
import dev.sandboxsdk.contract.SandboxProbe;
import dev.sandboxsdk.testkit.Procs;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collection;
import java.util.List;

/**
 * A {@link SandboxProbe} for a sandbox on this host ({@link LocalSandbox}, {@link ItAgent}): looks
 * at the host's /proc through the testkit's {@link Procs} and at the workspace directory directly.
 */
final class HostProbe implements SandboxProbe {
  private final Path workspace;

  /**
   * A probe of the sandbox whose workspace is {@code workspace}.
   *
   * @throws IllegalStateException if this JVM cannot see itself in /proc, where "gone" would be
   *     the answer for every process
   */
  HostProbe(Path workspace) {
    if (!Procs.alive(ProcessHandle.current().pid())) {
      throw new IllegalStateException("cannot see processes through /proc on this host");
    }
    this.workspace = workspace;
  }

  @Override
  public boolean exists(String path) {
    return Files.exists(workspace.resolve(path));
  }

  @Override
  public long readPid(String path, Duration timeout) throws InterruptedException {
    return Procs.readPid(workspace.resolve(path), timeout);
  }

  @Override
  public boolean alive(long pid) {
    return Procs.alive(pid);
  }

  @Override
  public List<Long> aliveAmong(Collection<Long> pids) {
    return Procs.aliveAmong(pids);
  }

  @Override
  public List<Long> groupMembers(long pgid) {
    return Procs.groupMembers(pgid);
  }

  @Override
  public String realPath(String path) {
    try {
      return workspace.resolve(path).toRealPath().toString();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public String toString() {
    return "HostProbe{" + workspace + "}";
  }
}
