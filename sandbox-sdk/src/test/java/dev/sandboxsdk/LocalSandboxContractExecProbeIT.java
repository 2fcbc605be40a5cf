package dev.sandboxsdk;

import dev.sandboxsdk.local.LocalSandbox;
import dev.sandboxsdk.local.Isolation;
import dev.sandboxsdk.contract.ExecProbe;
import dev.sandboxsdk.contract.SandboxContract;
import dev.sandboxsdk.contract.SandboxTarget;

/**
 * The contract suite against a {@link LocalSandbox}, but looking into it only through the sandbox
 * ({@link ExecProbe}), as a container target must: proves that probe in CI without a container
 * engine. Unisolated ({@link Isolation#NONE}): an isolated command sees only its own PID namespace,
 * so a probe run as a command could not see the processes of the others.
 */
class LocalSandboxContractExecProbeIT extends SandboxContract {
  @Override
  protected SandboxTarget startTarget() {
    return LocalSandboxTarget.start(true, Isolation.NONE);
  }
}
