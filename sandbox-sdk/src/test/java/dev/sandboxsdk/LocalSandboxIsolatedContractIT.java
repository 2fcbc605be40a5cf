package dev.sandboxsdk;

import dev.sandboxsdk.local.LocalSandbox;
import dev.sandboxsdk.local.Isolation;
import dev.sandboxsdk.contract.SandboxContract;
import dev.sandboxsdk.contract.SandboxTarget;

/**
 * The contract suite against a {@link LocalSandbox} whose commands run in bubblewrap
 * ({@link Isolation#REQUIRED}: fails where bwrap cannot be used, so a machine without it does not
 * pass unnoticed), looking at processes and files from the host ({@link NamespacedHostProbe}
 * translates the pids commands print from their own PID namespace).
 */
class LocalSandboxIsolatedContractIT extends SandboxContract {
  @Override
  protected SandboxTarget startTarget() {
    return LocalSandboxTarget.start(false, Isolation.REQUIRED);
  }

  @Override
  protected int wrappersPerCommand() {
    return 2; // the outer bwrap (the reported pid) and the namespace's init
  }

  @Override
  protected boolean leftoversOutliveTheirCommand() {
    return false; // a command's namespace, and everything in it, ends with its first process
  }
}
