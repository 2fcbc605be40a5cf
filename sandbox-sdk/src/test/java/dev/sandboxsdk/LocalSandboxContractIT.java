package dev.sandboxsdk;

import dev.sandboxsdk.contract.SandboxContract;
import dev.sandboxsdk.contract.SandboxTarget;

/** The contract suite against a {@link LocalSandbox}, checking processes and files from the host. */
class LocalSandboxContractIT extends SandboxContract {
  @Override
  protected SandboxTarget startTarget() {
    return LocalSandboxTarget.start(false, Isolation.NONE);
  }
}
