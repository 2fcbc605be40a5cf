package dev.sandboxsdk;

import dev.sandboxsdk.local.LocalSandbox;
import dev.sandboxsdk.local.Isolation;
import dev.sandboxsdk.contract.SandboxContract;
import dev.sandboxsdk.contract.SandboxTarget;

/**
 * The contract suite against an unisolated {@link LocalSandbox} ({@link Isolation#NONE}), checking
 * processes and files from the host; {@link LocalSandboxIsolatedContractIT} runs it with the
 * default isolation.
 */
class LocalSandboxContractIT extends SandboxContract {
  @Override
  protected SandboxTarget startTarget() {
    return LocalSandboxTarget.start(false, Isolation.NONE);
  }
}
