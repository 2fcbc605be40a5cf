package dev.sandboxsdk.container;

import dev.sandboxsdk.contract.SandboxContract;
import dev.sandboxsdk.contract.SandboxTarget;
import dev.sandboxsdk.contract.SandboxTarget.OwnAgent;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The SDK's whole contract suite, unchanged, against a container sandbox with the default
 * policy (no network, read-only root, commands as uid 1000): processes and files are looked at
 * through the sandbox itself, in the container's own pids and paths.
 */
@ExtendWith(ContainerEngine.class)
class ContainerSandboxContractIT extends SandboxContract {

  @Override
  protected SandboxTarget startTarget() {
    ContainerSandbox sandbox = start();
    // startOwnAgent: a second container of its own, as these tests close or destroy their client
    return SandboxTarget.of(sandbox, sandbox.baseUrl(), "/workspace", () -> {
      ContainerSandbox own = start();
      return OwnAgent.connect(own.baseUrl(), ContainerEngine.tokenOf(own.id()), "/workspace", own::destroy);
    }, sandbox::destroy);
  }

  private static ContainerSandbox start() {
    ContainerSandbox.Builder b = ContainerSandbox.builder().image(ContainerEngine.IMAGE).keepAlive();
    agentArguments().forEach(b::agentArgument);
    return b.start();
  }
}
